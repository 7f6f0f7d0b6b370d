#include "agent/data/source_gate.h"

#include <sys/stat.h>

#include <algorithm>

#include "core/dataset_kind.h"

namespace corral::agent {

std::string SourceOfDataset(const std::string& source) {
  if (SourceKindOf(source) == DatasetSourceKind::kUrl) {
    const size_t scheme_end = source.find("://");
    const size_t host_end = source.find('/', scheme_end + 3);
    return source.substr(0, host_end);
  }
  struct stat st {};
  if (stat(source.c_str(), &st) != 0) return source;  // its fetch fails, saying why
  return "file system " + std::to_string(st.st_dev);
}

SourceGate::Slot::~Slot() { gate_->Leave(source_); }

SourceGate::Slot SourceGate::Enter(const std::string& source,
                                   const std::function<void(int32_t)>& queued) {
  std::unique_lock lock(mu_);
  const uint64_t ticket = next_ticket_++;
  Line& line = lines_[source];
  line.waiting.push_back(ticket);
  int32_t told = 0;
  for (;;) {
    const auto at = std::find(line.waiting.begin(), line.waiting.end(), ticket);
    const int32_t place = static_cast<int32_t>(at - line.waiting.begin()) + 1;
    const bool room = config_.fetches_per_source <= 0 || line.running < config_.fetches_per_source;
    if (place == 1 && room) {
      line.waiting.pop_front();
      ++line.running;
      changed_.notify_all();  // the next in line may have room too
      return Slot(this, source);
    }
    if (place != told && queued) {
      told = place;
      lock.unlock();
      queued(place);
      lock.lock();
      continue;  // the line may have moved meanwhile
    }
    changed_.wait(lock);
  }
}

void SourceGate::Leave(const std::string& source) {
  std::lock_guard lock(mu_);
  --lines_[source].running;
  changed_.notify_all();
}

void SourceGate::Pace(const std::string& source, int64_t bytes) {
  if (config_.bytes_per_second <= 0 || bytes <= 0) return;
  std::unique_lock lock(mu_);
  Line& line = lines_[source];
  // In double: a fetch's reads cost fractions of a millisecond, which the bucket keeps, so
  // that waiting whole milliseconds never lets the source run ahead by more than one.
  const double cost_ms =
      static_cast<double>(bytes) * 1000.0 / static_cast<double>(config_.bytes_per_second);
  const TimeMs now = clock_.Steady().Now();
  line.paid_until_ms = std::max(line.paid_until_ms, static_cast<double>(now)) + cost_ms;
  const auto wait_ms = static_cast<DurationMs>(line.paid_until_ms - static_cast<double>(now));
  if (wait_ms > 0) (void)clock_.WaitFor(lock, changed_, wait_ms, [] { return false; });
}

void SourceGate::PaceFetch(double* paid_until_ms, int64_t bytes, int64_t bytes_per_second) {
  if (bytes_per_second <= 0 || bytes <= 0) return;
  std::unique_lock lock(mu_);
  const double cost_ms =
      static_cast<double>(bytes) * 1000.0 / static_cast<double>(bytes_per_second);
  const TimeMs now = clock_.Steady().Now();
  *paid_until_ms = std::max(*paid_until_ms, static_cast<double>(now)) + cost_ms;
  const auto wait_ms = static_cast<DurationMs>(*paid_until_ms - static_cast<double>(now));
  if (wait_ms > 0) (void)clock_.WaitFor(lock, changed_, wait_ms, [] { return false; });
}

}  // namespace corral::agent
