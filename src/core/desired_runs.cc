#include "core/desired_runs.h"

#include <utility>

namespace corral {

bool DesiredRuns::Apply(SyncResponse answer) {
  if (answer.delta) {
    if (answer.head_epoch != epoch_ || answer.base_version != version_) return false;
    for (JobId job : answer.changed_jobs) by_job_.erase(job);
  } else {
    if (answer.head_epoch == epoch_ && answer.desired_version < version_) return false;
    by_job_.clear();
  }
  for (RunOrder& o : answer.runs) by_job_[o.job_id].push_back(std::move(o));
  epoch_ = answer.head_epoch;
  version_ = answer.desired_version;
  return true;
}

SyncResponse DesiredRuns::Full() const {
  SyncResponse r;
  r.head_epoch = epoch_;
  r.desired_version = version_;
  for (const auto& [job, orders] : by_job_)
    r.runs.insert(r.runs.end(), orders.begin(), orders.end());
  return r;
}

}  // namespace corral
