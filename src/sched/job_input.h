// The one translation of a job and its history into the scheduler's input, shared by the
// head and the simulator so that they cannot drift.
#pragma once

#include "core/job.h"
#include "sched/scheduler.h"

namespace corral::sched {

PendingJob ToPendingJob(const Job& job);

}  // namespace corral::sched
