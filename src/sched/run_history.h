// The run times of the jobs that ended lately, as the start-time estimates count on them: the
// last few of each (user, GPU count), user, (queue, GPU count) and queue, what they say a run
// that has run so long still has to do, and which rule of counting on a run under way was
// closest lately for each owner's runs.
//
// The policy orders by the driver's predictions (runtime_estimate.h: a running mean, and the
// owner's distribution). An estimate needs something else of a prediction: when a run ends,
// not how it ranks. Kept inside the scheduler, fed by the calls it is given, so that estimates
// can take their own without the driver's predictions or the policy changing.
//
// What is recorded: a run that RemoveRunning ends and that is not given back (AddPending,
// AddRunning: a victim requeued, a resize) before the next pass; it ended at that pass's `now`
// (the head runs a pass after each command). Its run time is what its job had attained before
// the run (GPU-ms over its GPUs) plus the run's own wall time. Times come from the caller: no
// clock. Memory: kRunHistoryWindow run times per key seen, and kRemainingRules scores per owner
// and queue.
//
// Part of the scheduler's state (SchedState::ended_runs), used on its caller's one thread.
#pragma once

#include <utility>

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "core/time.h"
#include "sched/run_time_quantiles.h"
#include "sched/scheduler.h"

namespace corral::sched {

// How an estimate counts on a run under way to end (RunHistory::RuleFor picks one per owner).
enum class RemainingRule {
  kCentre,   // the estimator's own centre: the owner's conditional mean, the recent runs, the
             // prediction (estimate_state.cc)
  kElapsed,  // as long again as it has run, at least kElapsedFloorMs: run times are heavy-tailed
  kBlend,    // the geometric mean of the two
};
inline constexpr int kRemainingRules = 3;
inline constexpr DurationMs kElapsedFloorMs = kMinute;
// What `rule` counts on for a run that has run `done_ms`, of which the centre says `centre_ms`
// are left (at least 1 ms).
DurationMs ApplyRemainingRule(RemainingRule rule, DurationMs centre_ms, DurationMs done_ms);

// The rules are scored on every run that ends, at the points it had run 0, 1, 4, 16, ...
// minutes (as an estimate made then would have asked), by |log(counted / what was left)|, in
// a running mean per owner (the queue where a job has none) in which each point weighs this.
inline constexpr double kRuleScoreWeight = 0.1;
// A count too short (the run ends later: the jobs behind it told too early a time) weighs this
// many times one too long: with 1, 32.4% of the philly-users test half at 640 GPUs started later
// than told (27.7% without the rule), with 2, 29.3%; with 3 or 5 the error grew.
inline constexpr double kRuleLateWeight = 2;
// Points an owner needs before its choice counts (else kCentre).
inline constexpr int kRuleMinPoints = 8;

// Run times kept per key, the newest (a user's or a queue's habits change within days).
inline constexpr int kRunHistoryWindow = 16;
// A key answers once it holds this many runs (else the next broader one).
inline constexpr int kRunHistoryMinRuns = 4;

class RunHistory {
 public:
  // A run of `job` on `gpus` GPUs since `started_at` was removed.
  void Removed(const PendingJob& job, int64_t gpus, TimeMs started_at);
  // The job is given back (requeued, resized): that run did not end it.
  void GivenBack(JobId id) { ending_.erase(id); }
  // A pass at `now`: the runs removed since the last one and not given back ended at `now`.
  void Ended(TimeMs now);

  // What a job that has run `done_ms` still has to do, by its owner's and its queue's recent
  // runs longer than that: the geometric mean of what they had left past `done_ms`, from the
  // most specific key with kRunHistoryMinRuns runs of which one ran longer. kUnknownTime: none.
  // Geometric: what is left spans seconds to days, and the median error of the estimates on
  // Philly was lower with it (436 s against 487 s with the arithmetic mean of the last 4 at 512
  // GPUs, 205 s against 222 s at 640, 166 s both at 768; docs/simulation.md).
  DurationMs RemainingMs(const PendingJob& job, DurationMs done_ms) const;

  // The rule whose counts were closest for the job's owner's (or, without one, its queue's)
  // runs that ended lately, by the scores above; kCentre until kRuleMinPoints were scored.
  RemainingRule RuleFor(const PendingJob& job) const;

  // The kept run times of the keys of a job, most specific first (for tests).
  std::vector<std::vector<DurationMs>> KeptFor(const PendingJob& job) const;

 private:
  struct Removal {
    std::string user, queue;
    int64_t gpus = 0;
    DurationMs before_ms = 0;  // run time before this run
    TimeMs started_at = 0;
    SharedQuantiles run_quantiles;  // what the estimates counted on for it
    DurationMs predicted_ms = 0;
  };
  // A running mean of each rule's loss, and the points scored.
  struct RuleScores {
    double loss[kRemainingRules] = {};
    int64_t points = 0;
  };
  using Runs = std::deque<DurationMs>;  // oldest first
  void Keep(Runs& runs, DurationMs run_ms);
  std::vector<const Runs*> KeysOf(const std::string& user, const std::string& queue,
                                  int64_t gpus) const;
  std::vector<const Runs*> KeysOf(const PendingJob& job) const;
  static DurationMs RemainingByKeys(const std::vector<const Runs*>& keys, DurationMs done_ms);
  void Score(const Removal& r, DurationMs run_ms);

  std::map<JobId, Removal> ending_;
  std::map<std::pair<std::string, int64_t>, Runs> by_user_gpus_;
  std::map<std::string, Runs> by_user_;
  std::map<std::pair<std::string, int64_t>, Runs> by_queue_gpus_;
  std::map<std::string, Runs> by_queue_;
  std::map<std::string, RuleScores> scores_by_user_, scores_by_queue_;
};

}  // namespace corral::sched
