// The one translation of a job and its history into the scheduler's input, shared by the
// head and the simulator so that they cannot drift.
#pragma once

#include "core/job.h"
#include "sched/runtime_estimate.h"
#include "sched/scheduler.h"

namespace corral::sched {

// `estimator` (may be null) predicts the job's run time from the history of ended jobs
// (PendingJob::predicted_ms); without one the time limit alone is the prediction.
PendingJob ToPendingJob(const Job& job, const RuntimeEstimator* estimator = nullptr);

}  // namespace corral::sched
