// Start-time estimates of pending jobs (HeadCore::EstimateStarts): derived, not durable.
#include "head/head_core.h"
#include "sched/start_estimate.h"

namespace corral::head {

void HeadCore::EstimateStarts(TimeMs now, const std::vector<JobId>& watch) {
  sched::EstimateOptions options = config_.start_estimates;
  options.stop_when_started = watch;
  if (model_.scheduler().GetStats().pending > sched::kForwardMaxPending) {
    options.method = sched::EstimateMethod::kSweep;
  }
  explained_.Estimated(model_.scheduler().EstimateStarts(now, options));
}

}  // namespace corral::head
