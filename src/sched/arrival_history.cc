// Recent arrivals and the arrivals expected from them (arrival_history.h).
#include "sched/arrival_history.h"

#include <algorithm>

namespace corral::sched {

void ArrivalHistory::Record(const PendingJob& job) {
  if (ids_.count(job.id) > 0 || !job.reservation.empty()) return;  // (a reservation's own)
  if (job.submitted_at < newest_ - kArrivalKeepMs) return;         // an old job given again
  ids_.insert(job.id);
  newest_ = std::max(newest_, job.submitted_at);
  // Kept in submission order: a job given late (a recovery's order) goes to its place.
  auto later =
      std::upper_bound(jobs_.begin(), jobs_.end(), job.submitted_at,
                       [](TimeMs at, const PendingJob& kept) { return at < kept.submitted_at; });
  jobs_.insert(later, job);
  Trim();
}

void ArrivalHistory::Trim() {
  while (!jobs_.empty() && (jobs_.front().submitted_at < newest_ - kArrivalKeepMs ||
                            static_cast<int64_t>(jobs_.size()) > kArrivalMaxKept)) {
    ids_.erase(jobs_.front().id);
    jobs_.pop_front();
  }
}

std::vector<const PendingJob*> ArrivalHistory::Within(TimeMs now, DurationMs window) const {
  std::vector<const PendingJob*> out;
  if (window <= 0) return out;
  auto first =
      std::upper_bound(jobs_.begin(), jobs_.end(), now - window,
                       [](TimeMs at, const PendingJob& kept) { return at < kept.submitted_at; });
  for (auto it = first; it != jobs_.end() && it->submitted_at <= now; ++it) out.push_back(&*it);
  return out;
}

ExpectedArrivals::ExpectedArrivals(std::vector<const PendingJob*> recent, TimeMs now,
                                   DurationMs window, DurationMs step, int64_t windows)
    : recent_(std::move(recent)),
      now_(now),
      window_(window),
      step_(std::max<DurationMs>(1, step)),
      windows_(windows) {}

TimeMs ExpectedArrivals::At(int64_t k) const {
  // The k-th (from 0) of N per window: (k + 1) x window / N after now, rounded up to a step.
  const auto n = static_cast<int64_t>(recent_.size());
  const DurationMs offset = (k + 1) * window_ / n;
  return now_ + (offset + step_ - 1) / step_ * step_;
}

TimeMs ExpectedArrivals::Next() const {
  if (recent_.empty() || window_ <= 0) return kUnknownTime;
  if (windows_ > 0 && taken_ >= windows_ * static_cast<int64_t>(recent_.size())) {
    return kUnknownTime;
  }
  return At(taken_);
}

PendingJob ExpectedArrivals::Take() {
  const PendingJob& like =
      *recent_[static_cast<size_t>(taken_ % static_cast<int64_t>(recent_.size()))];
  PendingJob job = like;
  job.id = kSyntheticJobIdBase + static_cast<JobId>(taken_);
  job.submitted_at = At(taken_);
  job.attained_ms = 0;
  job.last_checkpoint_at = 0;
  ++taken_;
  return job;
}

}  // namespace corral::sched
