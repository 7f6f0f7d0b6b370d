// The recent arrivals a scheduler has seen, and the arrivals the forward estimate expects from
// them (start_estimate.h, ForwardStarts).
//
// A job waiting under a ranking policy (LAS levels, fair share, predicted remaining time) is
// overtaken by jobs submitted after it; a forward run that sees no new job tells it too early
// a time. The model: the next window looks like the last one in rate and mix. The arrivals of
// the last `window` (their jobs as submitted: queue, user, priority, size, limit, prediction)
// arrive again, in their order, evenly spaced at window / N apart (N of them in the window),
// and again in each following window, each a new job the pass ranks as it ranks any. The
// spacing spreads a burst over the window: its rate is expected to go on, not the burst to
// come back at once.
//
// What is recorded: a job the scheduler is given for the first time (AddPending or AddRunning
// of an id it has not kept) submitted no earlier than kArrivalKeepMs before the newest
// submission; at most kArrivalMaxKept of them (the newest). Requeued victims and updated
// pending jobs are not arrivals (kept ids), nor are older jobs given again after a restart, nor
// jobs submitted into an admin reservation (they compete only on its nodes).
// Times come from the jobs (submitted_at) and the caller (now): no clock.
#pragma once

#include <utility>

#include <cstdint>
#include <deque>
#include <unordered_set>
#include <vector>

#include "core/time.h"
#include "sched/scheduler.h"

namespace corral::sched {

// How far back arrivals are kept: the longest window an estimate may ask for.
inline constexpr DurationMs kArrivalKeepMs = 24 * kHour;
// The most kept: a bound on the memory and on the jobs one window injects (at a higher rate
// the model undercounts, by the rate the kept ones give over the whole window).
inline constexpr int64_t kArrivalMaxKept = 10'000;
// The forward estimate expects arrivals in this many windows after now (0: with no end).
inline constexpr int64_t kExpectedArrivalWindows = 1;
// Synthetic jobs' ids, above any the head gives (it numbers jobs from 1).
inline constexpr JobId kSyntheticJobIdBase = JobId{1} << 62;

class ArrivalHistory {
 public:
  // A job given to the scheduler: kept if it is new and recent (above).
  void Record(const PendingJob& job);
  // The kept jobs submitted in (now - window, now], oldest first.
  std::vector<const PendingJob*> Within(TimeMs now, DurationMs window) const;
  int64_t size() const { return static_cast<int64_t>(jobs_.size()); }

 private:
  void Trim();
  std::deque<PendingJob> jobs_;  // by submission (ties: as given)
  std::unordered_set<JobId> ids_;
  TimeMs newest_ = 0;
};

// The arrivals expected after `now`, from the arrivals of the window before it: in order of
// arrival, each a copy of a recent job (new id, submitted then, nothing attained), its instant
// rounded up to a whole `step` after now so that arrivals close together share a pass.
class ExpectedArrivals {
 public:
  // `windows`: how many windows after now arrivals are expected in (0: with no end).
  ExpectedArrivals(std::vector<const PendingJob*> recent, TimeMs now, DurationMs window,
                   DurationMs step, int64_t windows = 0);
  // The instant of the next arrival (kUnknownTime: none expected).
  TimeMs Next() const;
  // The next arrival; Next() must not be kUnknownTime.
  PendingJob Take();
  int64_t taken() const { return taken_; }

 private:
  TimeMs At(int64_t k) const;
  std::vector<const PendingJob*> recent_;
  TimeMs now_;
  DurationMs window_;
  DurationMs step_;
  int64_t windows_;
  int64_t taken_ = 0;
};

}  // namespace corral::sched
