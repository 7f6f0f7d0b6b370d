// The one translation of a job and its history into the scheduler's input, shared by the
// head and the simulator so that they cannot drift.
#pragma once

#include <vector>

#include "core/job.h"
#include "sched/runtime_estimate.h"
#include "sched/scheduler.h"

namespace corral::sched {

// `estimator` (may be null) predicts the job's run time from the history of ended jobs
// (PendingJob::predicted_ms); without one the time limit alone is the prediction.
PendingJob ToPendingJob(const Job& job, const RuntimeEstimator* estimator = nullptr);

// The job's runs that held resources, as fair-share usage (Scheduler::AddPastUsage); a run
// still going counts up to `now`. The same runs and GPUs that `corral usage` adds up.
std::vector<PastUsage> PastUsageOf(const Job& job, TimeMs now);

}  // namespace corral::sched
