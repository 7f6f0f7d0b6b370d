// Start-time estimates of pending jobs (HeadCore::EstimateStarts): derived, not durable.
#include "head/head_core.h"

namespace corral::head {

void HeadCore::EstimateStarts(TimeMs now) { explained_.Estimated(scheduler_->EstimateStarts(now)); }

}  // namespace corral::head
