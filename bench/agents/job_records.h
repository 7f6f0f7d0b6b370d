// Timings of a range of jobs from the head's own records (GET /v1/jobs pages), all on the
// head's wall clock in ms: the figures corral_agents prints besides its client-side ones.
#pragma once

#include <cstdint>

#include "agents/latency_stats.h"
#include "core/codec.h"
#include "core/job.h"

namespace corral::bench {

struct JobTimes {
  size_t seen = 0;      // jobs of the range listed
  size_t terminal = 0;  // of which ended (succeeded, failed, cancelled)
  size_t failed = 0;    // ended other than succeeded
  TimeMs first_submitted = 0;
  TimeMs last_ended = 0;
  LatencyStats submit_to_start;  // submitted_at -> first run's started_at
  LatencyStats queued;           // submitted_at -> scheduled_at (the scheduling pass)
  LatencyStats dispatch;         // scheduled_at -> started_at (commit, sync answer, agent start)
  LatencyStats exit_seen;        // started_at -> ended_at (run time + the exit report)
};

// Adds the jobs of one page ({"jobs": [...]}) whose ids are in [first, last] to `out`.
void AddJobPage(const Json& page, JobId first, JobId last, JobTimes* out);

}  // namespace corral::bench
