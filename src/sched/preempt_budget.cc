#include "sched/preempt_budget.h"

#include <algorithm>

namespace corral::sched {

namespace {

// Defaults (scheduler.h, PreemptionBudget). One preemption per minute per 2,000 running runs
// means a run expects to be preempted less than once a day on a full cluster. Lost work is
// capped at what the GPUs (of the cluster, or the queue's max(quota, allocation)) compute in
// the hour: a storm that throws away as much as it computes stops. Tighter lost-work caps
// cost JCT on Philly (docs/simulation.md: 2% of the cluster and 5% of the queue took corral's
// average JCT at 640 GPUs from 4.9 to 5.7 h), because LAS victims are long runs by construction.
constexpr int64_t kRunsPerPreemptionPerMinute = 2000;
constexpr double kClusterLostShare = 1.0;
constexpr double kQueueLostShare = 1.0;

}  // namespace

int64_t& PreemptBudget::QueueRuns(int32_t q) {
  if (static_cast<int32_t>(queue_runs_.size()) <= q) queue_runs_.resize(q + 1, 0);
  return queue_runs_[q];
}

DurationMs& PreemptBudget::QueueLost(int32_t q) {
  if (static_cast<int32_t>(queue_lost_.size()) <= q) queue_lost_.resize(q + 1, 0);
  return queue_lost_[q];
}

void PreemptBudget::Advance(TimeMs now) {
  while (!minute_.empty() && minute_.front().at <= now - kMinute) {
    --runs_;
    --QueueRuns(minute_.front().queue);
    minute_.pop_front();
  }
  while (!hour_.empty() && hour_.front().at <= now - kHour) {
    lost_ -= hour_.front().lost;
    QueueLost(hour_.front().queue) -= hour_.front().lost;
    hour_.pop_front();
  }
}

void PreemptBudget::Record(TimeMs now, int32_t queue, DurationMs lost_gpu_ms) {
  Entry e{now, queue, lost_gpu_ms};
  minute_.push_back(e);
  hour_.push_back(e);
  ++runs_;
  lost_ += lost_gpu_ms;
  ++QueueRuns(queue);
  QueueLost(queue) += lost_gpu_ms;
}

int64_t PreemptBudget::RunsLimit(const PreemptionBudget& b, int64_t runs, int64_t floor) {
  if (b.runs_per_minute < 0) return -1;
  if (b.runs_per_minute > 0) return b.runs_per_minute;
  return std::max(floor, runs / kRunsPerPreemptionPerMinute);
}

int64_t PreemptBudget::LostLimitGpuMs(const PreemptionBudget& b, int64_t gpus, double share) {
  if (b.lost_gpu_seconds_per_hour < 0) return -1;
  if (b.lost_gpu_seconds_per_hour > 0) return b.lost_gpu_seconds_per_hour * kSecond;
  return static_cast<int64_t>(share * static_cast<double>(gpus * kHour));
}

bool PreemptBudget::ClusterAllows(const PreemptionBudget& b, int64_t running_runs,
                                  int64_t total_gpus) const {
  int64_t runs = RunsLimit(b, running_runs, 2);
  int64_t lost = LostLimitGpuMs(b, total_gpus, kClusterLostShare);
  return (runs < 0 || runs_ < runs) && (lost < 0 || lost_ < lost);
}

bool PreemptBudget::ClusterTakes(const PreemptionBudget& b, int64_t running_runs,
                                 int64_t runs) const {
  int64_t limit = RunsLimit(b, running_runs, 2);
  return limit < 0 || runs_ == 0 || runs_ + runs <= limit;
}

bool PreemptBudget::QueueAllows(const PreemptionBudget& b, int32_t queue, int64_t queue_runs,
                                int64_t queue_gpus) const {
  int64_t used_runs = queue < static_cast<int32_t>(queue_runs_.size()) ? queue_runs_[queue] : 0;
  DurationMs used_lost = queue < static_cast<int32_t>(queue_lost_.size()) ? queue_lost_[queue] : 0;
  int64_t runs = RunsLimit(b, queue_runs, 1);
  int64_t lost = LostLimitGpuMs(b, queue_gpus, kQueueLostShare);
  return (runs < 0 || used_runs < runs) && (lost < 0 || used_lost < lost);
}

}  // namespace corral::sched
