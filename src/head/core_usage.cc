// Usage accounting as a read-only query of the core (DESIGN §11): the figures of
// core/usage.h over the core's jobs. Like GetJob, every caller may see every user's usage
// (Slurm's sreport does the same); it holds no job ids or commands.
#include "core/usage.h"
#include "head/head_core.h"

namespace corral::head {

Status HeadCore::CheckUsage(const Caller& by, DurationMs since_ms) {
  if (by.kind == Caller::Kind::kJoin) {
    return PermissionDenied("the join credential may only register agents");
  }
  if (since_ms <= 0) {
    return InvalidArgument("since: got " + std::to_string(since_ms) +
                           " ms, want a positive period");
  }
  return Status::Ok();
}

Result<UsageReport> HeadCore::Usage(const Caller& by, UsageBy group, DurationMs since_ms,
                                    TimeMs now) const {
  CORRAL_RETURN_IF_ERROR(CheckUsage(by, since_ms));
  TimeMs from = now > since_ms ? now - since_ms : 0;
  return Usage(UsageAccumulator(group, from, now));
}

UsageReport HeadCore::Usage(UsageAccumulator acc) const {
  for (const auto& [id, job] : state_.jobs) acc.Add(job);
  return acc.Finish();
}

}  // namespace corral::head
