// Preemption budgets (CorralConfig::cluster_budget, queue_budget): how many runs were
// preempted in the last minute and how much work they lost in the last hour, cluster-wide and
// per victim queue. A scheduler that preempts a hundred runs a minute would be switched off by
// any operator whatever its average JCT; the budgets bound the churn whatever the policy's
// levels and priorities say. Time comes from the caller. Owned by SchedState; one thread.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "core/time.h"
#include "sched/scheduler.h"

namespace corral::sched {

class PreemptBudget {
 public:
  // Forgets what fell out of the windows by `now` (times never go back).
  void Advance(TimeMs now);
  // A run of `queue` was preempted at `now`, losing `lost_gpu_ms` GPU-ms of work.
  void Record(TimeMs now, int32_t queue, DurationMs lost_gpu_ms);

  // True while the cluster-wide windows are below their limits for a cluster of
  // `running_runs` runs on `total_gpus` GPUs.
  bool ClusterAllows(const PreemptionBudget& b, int64_t running_runs, int64_t total_gpus) const;
  // May one decision preempt `runs` more runs now: the minute's window is empty, or they fit
  // the runs-per-minute limit?
  bool ClusterTakes(const PreemptionBudget& b, int64_t running_runs, int64_t runs) const;
  // The same for one victim queue, with its running runs and max(quota, allocated GPUs).
  bool QueueAllows(const PreemptionBudget& b, int32_t queue, int64_t queue_runs,
                   int64_t queue_gpus) const;

  // The limits a budget resolves to (defaults in scheduler.h); -1: unlimited.
  static int64_t RunsLimit(const PreemptionBudget& b, int64_t runs, int64_t floor);
  static int64_t LostLimitGpuMs(const PreemptionBudget& b, int64_t gpus, double share);

 private:
  struct Entry {
    TimeMs at;
    int32_t queue;
    DurationMs lost;
  };
  int64_t& QueueRuns(int32_t q);
  DurationMs& QueueLost(int32_t q);

  std::deque<Entry> minute_;  // the last minute, oldest first
  std::deque<Entry> hour_;    // the last hour, oldest first
  int64_t runs_ = 0;          // in minute_
  DurationMs lost_ = 0;       // in hour_
  std::vector<int64_t> queue_runs_;
  std::vector<DurationMs> queue_lost_;
};

}  // namespace corral::sched
