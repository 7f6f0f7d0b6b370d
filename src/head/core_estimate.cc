// Start-time estimates of pending jobs (HeadCore::EstimateStarts): derived, not durable.
#include "head/head_core.h"

namespace corral::head {

void HeadCore::EstimateStarts(TimeMs now) {
  start_estimates_.clear();
  for (sched::StartEstimate& e : scheduler_->EstimateStarts(now)) {
    JobId id = e.job;
    start_estimates_.emplace(id, std::move(e));
  }
}

}  // namespace corral::head
