// Order policies (DESIGN §6.3, §12): the static part of a job's place in line, and which
// running jobs a blocked job may displace under the preemptive baselines. The dynamic part
// of kCorral (queue and user fair share) lives in the pass order (pass_order.h).
#pragma once

#include <compare>
#include <cstdint>
#include <vector>

#include "sched/scheduler.h"

namespace corral::sched {

// Smaller comes first. `id` last makes every key unique. `level` is kCorral's LAS level
// inside a queue (CorralConfig::las_within_queue; 0 otherwise): the pass order puts it
// after the queue's fair share and before the user's (pass_order.h). `pred` is kCorral's
// predicted remaining run time (PredictionConfig::on; 0 otherwise), right after
// the level.
struct JobKey {
  int64_t a = 0;
  // kCorral's age bound (CorralConfig::max_wait_ms): the submit time of an aged job, which
  // goes ahead of every other of its priority; kUnknownTime for the others.
  int64_t aged = kUnknownTime;
  // `level` where it orders (0 with PredictionConfig::for_level and a distribution)
  int64_t order_level = 0;
  int64_t pred = 0;
  int64_t b = 0;
  JobId id = 0;
  int64_t level = 0;  // after the unique id: never orders, only decides what may be preempted
  auto operator<=>(const JobKey&) const = default;
};

int64_t TotalGpus(const PendingJob& job);
// When a job is aged under an age bound of `bound` ms (CorralConfig::max_wait_ms): its
// submit time plus the run time it has had (attained GPU-ms / its GPUs) plus the bound, the
// moment it has waited that long in all; kUnknownTime for bound <= 0.
TimeMs AgedAt(const PendingJob& job, DurationMs bound);
// Remaining run time for kSrtf: oracle duration minus attained GPU-ms per GPU.
int64_t RemainingMs(const PendingJob& job, DurationMs attained_gpu_ms);
// kLas level: how many thresholds are at or below the attained GPU-ms.
int64_t LasLevel(const SchedulerConfig& config, DurationMs attained_gpu_ms);
// Whether history_las_thresholds_gpu_ms count for `job`: a kCorral job with a run-time
// distribution, when predictions are used.
bool HasHistoryLevels(const SchedulerConfig& config, const PendingJob& job);
// las_thresholds_gpu_ms followed by history_las_thresholds_gpu_ms.
std::vector<DurationMs> LasThresholdsWithHistory(const SchedulerConfig& config);
// The LAS thresholds that count for `job`: LasThresholdsWithHistory where HasHistoryLevels,
// else las_thresholds_gpu_ms.
std::vector<DurationMs> LasThresholds(const SchedulerConfig& config, const PendingJob& job);
// LasThresholds(config, job)[level] without building the list; 0 past its end.
DurationMs LasThresholdAt(const SchedulerConfig& config, const PendingJob& job, int64_t level);
// kCorral's level of `job` at `attained_gpu_ms`: against LasThresholds(config, job).
int64_t LasLevel(const SchedulerConfig& config, const PendingJob& job, DurationMs attained_gpu_ms);
// kCorral's guess of a job's remaining run time from its prediction and the GPU-ms it has
// attained, with done = attained / GPUs: predicted - done while done < predicted, else done
// (it outlived its prediction: guessed to run as long again); 0 without a prediction (see
// PredictionConfig::on). With a distribution (PendingJob::run_quantiles):
// ConditionalRemainingMs under config.corral.predict.rule.
inline bool HasPrediction(const PendingJob& job) {
  return job.predicted_ms > 0 || !job.run_quantiles.empty();
}
DurationMs PredictedRemainingMs(const SchedulerConfig& config, const PendingJob& job,
                                DurationMs attained_gpu_ms);
// The rule above for a point prediction alone: what `predicted_ms` leaves of a run that has
// run `done_ms` (as long again once outlived; 0 without a prediction).
inline DurationMs PredictionLeftMs(DurationMs predicted_ms, DurationMs done_ms) {
  if (predicted_ms <= 0) return 0;
  return done_ms < predicted_ms ? predicted_ms - done_ms : done_ms;
}

// When a job started (or starting) at `start` is expected to end: start + its time limit;
// kUnknownTime without one. Reservations and backfill count on limits, never on predictions.
TimeMs ExpectedEndOf(const PendingJob& job, TimeMs start);

// The order's view of a duration: its power-of-two bucket of whole minutes (0, 1, 2-3, 4-7, ...;
// 0 also for 0, unknown). It compares borrowing queues' predicted remaining times
// (CorralConfig::borrowing_queues_by_level).
int64_t MinuteBucket(DurationMs ms);

// The GPU-ms a job running on `gpus` GPUs since `started_at` has attained by `now`: before
// this run (job.attained_ms), plus this run so far.
DurationMs AttainedNow(const PendingJob& job, int64_t gpus, TimeMs started_at, TimeMs now);

}  // namespace corral::sched
