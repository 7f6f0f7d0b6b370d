// Upper bounds of what a user-history predictor can buy (`--predict oracle-user-gpus`,
// `oracle-window`, `oracle-noisy:S`): predictions built with knowledge no head has, the run
// times of jobs that have not ended (or not been submitted) yet. They answer "would a better
// predictor from this trace's information (user, GPU count, submission order, past run times)
// reach the oracle?", not "what should the head use". Pure functions of the trace.
#pragma once

#include <cstddef>
#include <vector>

#include "core/time.h"
#include "sched/run_time_quantiles.h"
#include "sim/trace.h"

namespace corral::sim {

// Which bound a corral policy's predictions come from (PredictionInputs::bound).
enum class OracleBound {
  kNone,
  // The run times of every other job of the trace with the job's (user, GPU count): the
  // owner's exact distribution for that size, past and future.
  kUserGpus,
  // The `window` (default kBoundWindow) run times of that (user, GPU count) nearest the job in
  // submission order, before and after it: a perfectly recent window.
  kWindow,
  // The true duration times a lognormal factor (PredictionInputs::noise_sigma): a point
  // prediction with a known error.
  kNoisy,
};

// Others a group needs for its own distribution; with fewer, the owner's jobs of any size
// answer, then every job of the trace.
inline constexpr size_t kBoundMinOthers = 4;
inline constexpr size_t kBoundWindow = 16;

// Per trace row (REQUIRES: jobs sorted by submission), the distribution `bound` (kUserGpus or
// kWindow, of `window` jobs) gives the job: quantile points as RuntimeEstimator::Quantiles takes
// them from equal weights, the job's own run time never among the samples. A trace of one job:
// all 0 (none). REQUIRES: window >= 1.
std::vector<sched::RunTimeQuantiles> BoundDistributions(const std::vector<TraceJob>& jobs,
                                                        OracleBound bound,
                                                        size_t window = kBoundWindow);

// The quantile points of `sorted` (ascending; each counts alike), as the estimator takes them.
sched::RunTimeQuantiles QuantilesOfSorted(const std::vector<DurationMs>& sorted);

// Row `row`'s true duration times exp(sigma x z), z a standard normal drawn from the row
// alone (the same for every run, platform and sigma); at least 1 ms. REQUIRES: sigma >= 0.
DurationMs NoisyDuration(DurationMs duration_ms, size_t row, double sigma);

}  // namespace corral::sim
