// Recent run times for start-time estimates (run_history.h).
#include "sched/run_history.h"

#include <algorithm>
#include <cmath>

#include "sched/order_policy.h"

namespace corral::sched {

void RunHistory::Removed(const PendingJob& job, int64_t gpus, TimeMs started_at) {
  const int64_t g = std::max<int64_t>(1, gpus);
  ending_[job.id] = {job.user, job.queue, std::max<int64_t>(1, TotalGpus(job)), job.attained_ms / g,
                     started_at};
}

void RunHistory::Keep(Runs& runs, DurationMs run_ms) {
  runs.push_back(run_ms);
  while (static_cast<int>(runs.size()) > kRunHistoryWindow) runs.pop_front();
}

void RunHistory::Ended(TimeMs now) {
  for (const auto& [id, r] : ending_) {
    const DurationMs run_ms = r.before_ms + std::max<DurationMs>(0, now - r.started_at);
    if (run_ms <= 0) continue;
    if (!r.user.empty()) {
      Keep(by_user_gpus_[{r.user, r.gpus}], run_ms);
      Keep(by_user_[r.user], run_ms);
    }
    Keep(by_queue_gpus_[{r.queue, r.gpus}], run_ms);
    Keep(by_queue_[r.queue], run_ms);
  }
  ending_.clear();
}

std::vector<const RunHistory::Runs*> RunHistory::KeysOf(const PendingJob& job) const {
  std::vector<const Runs*> keys;
  const int64_t gpus = std::max<int64_t>(1, TotalGpus(job));
  auto add = [&keys](const auto& map, const auto& key) {
    auto it = map.find(key);
    if (it != map.end()) keys.push_back(&it->second);
  };
  if (!job.user.empty()) {
    add(by_user_gpus_, std::pair<std::string, int64_t>{job.user, gpus});
    add(by_user_, job.user);
  }
  add(by_queue_gpus_, std::pair<std::string, int64_t>{job.queue, gpus});
  add(by_queue_, job.queue);
  return keys;
}

DurationMs RunHistory::RemainingMs(const PendingJob& job, DurationMs done_ms) const {
  for (const Runs* runs : KeysOf(job)) {
    if (static_cast<int>(runs->size()) < kRunHistoryMinRuns) continue;
    double log_left = 0;
    int longer = 0;
    for (DurationMs run_ms : *runs) {
      if (run_ms <= done_ms) continue;
      log_left += std::log(static_cast<double>(run_ms - done_ms));
      ++longer;
    }
    if (longer == 0) continue;  // it outlived them all: a broader key may know longer runs
    return std::max<DurationMs>(1, std::llround(std::exp(log_left / longer)));
  }
  return kUnknownTime;
}

std::vector<std::vector<DurationMs>> RunHistory::KeptFor(const PendingJob& job) const {
  std::vector<std::vector<DurationMs>> out;
  for (const Runs* runs : KeysOf(job)) out.emplace_back(runs->begin(), runs->end());
  return out;
}

}  // namespace corral::sched
