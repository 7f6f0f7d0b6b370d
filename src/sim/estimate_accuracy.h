// How good the head's start-time estimates are, judged in the simulator: the estimate a user
// saw after submitting (SimConfig::estimate_every) against when the job really first started.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/time.h"
#include "sim/simulator.h"
#include "sim/trace.h"

namespace corral::sim {

// Errors are estimate - actual start, seconds: > 0 the job started before it was told (the
// estimate is an upper bound where the scheduler backfills), < 0 it started later (a promise
// broken: preemption-free estimates do not see later arrivals that go ahead of it).
struct EstimateAccuracy {
  int64_t sampled = 0;          // jobs estimated after their submission
  int64_t started_at_once = 0;  // placed by their own instant's passes: nothing to estimate
  int64_t no_estimate = 0;      // pending, and the head had none (behind a run of unknown end)
  int64_t never_started = 0;    // estimated, but never ran (the trace ended first)
  int64_t judged = 0;           // estimated and started: the errors below are over these
  double median_abs_error_s = 0;
  double p90_abs_error_s = 0;
  double median_error_s = 0;
  double late_share = 0;     // of judged: started more than a minute after the estimate
  double median_wait_s = 0;  // of judged: their real wait, for scale
  // The judged by the confidence the head gave (EstimateConfidence: high, medium, low): does a
  // weaker one name a worse estimate?
  struct ByConfidence {
    int64_t judged = 0;
    double median_abs_error_s = 0;
    double late_share = 0;
  };
  ByConfidence by_confidence[3];
};

// Over the sampled jobs submitted at or after `report_from` (Summarize's meaning).
EstimateAccuracy MeasureEstimateAccuracy(const std::vector<TraceJob>& jobs, const SimResult& result,
                                         TimeMs report_from = 0);

// A JSON object (keys in a fixed order) and a one-line human form.
std::string EstimateAccuracyJson(const EstimateAccuracy& a);
std::string EstimateAccuracyLine(const std::string& policy, const EstimateAccuracy& a);

}  // namespace corral::sim
