// The core's side of admission (admission.h): what it admits goes to the scheduler, what it
// holds carries its reason, and its settling steps become changes. SetHold is the command.
#include "head/head_core.h"

namespace corral::head {

std::vector<const Job*> HeadCore::DependencyTargets(JobId id) const {
  return head::DependencyTargets(state_, id);
}

bool HeadCore::Admit(const Job& job) {
  if (std::optional<PendingReason> held = admission_.Admit(state_, job)) {
    explained_.Waiting(job.id, std::move(*held));
    return false;
  }
  return true;
}

void HeadCore::AdmitPending(const Job& job) {
  if (!Admit(job)) return;
  model_.Queue(state_, job);
  WantSchedule();
}

// Admission's steps until it has none: each may emit a change, which may give it more.
void HeadCore::Settle(TimeMs now) {
  if (settling_) return;
  settling_ = true;
  while (std::optional<Admission::Step> step = admission_.Next(state_)) {
    if (const auto* cancel = std::get_if<Admission::Cancel>(&*step)) {
      auto it = state_.jobs.find(cancel->job);
      if (it != state_.jobs.end() && it->second.state == JobState::kPending) {
        Emit(Caller::System(), now, JobEnded{cancel->job, JobState::kCancelled, cancel->why});
      }
    } else if (const auto* again = std::get_if<Admission::Reconsider>(&*step)) {
      AdmitPending(state_.jobs.at(again->job));
    } else {
      JobId id = std::get<Admission::Admitted>(*step).job;
      explained_.Admitted(id);
      model_.Queue(state_, state_.jobs.at(id));
      WantSchedule();
    }
  }
  AdmitStageIns(now);  // a run that started or ended may have made room at its sources
  settling_ = false;
}

Result<Job> HeadCore::SetHold(const Caller& by, JobId id, bool hold, TimeMs now) {
  auto it = state_.jobs.find(id);
  if (it == state_.jobs.end()) return UnknownJob(id);
  if (!MayManageJob(by, it->second)) {
    return PermissionDenied("user '" + by.name + "' may not " + (hold ? "hold" : "release") +
                            " job " + std::to_string(id) + " of '" + it->second.owner + "'");
  }
  // An array's id stands for its pending elements; an element's id for itself.
  std::vector<const Job*> targets;
  if (it->second.array_id == id) {
    targets = DependencyTargets(id);
  } else {
    targets = {&it->second};
  }
  std::vector<JobId> change;
  for (const Job* t : targets) {
    if (t->state == JobState::kPending && t->held != hold) change.push_back(t->id);
  }
  if (change.empty()) {
    bool any_pending = false;
    for (const Job* t : targets) any_pending |= t->state == JobState::kPending;
    if (!any_pending) {
      return FailedPrecondition("job " + std::to_string(id) + " is " +
                                JobStateName(it->second.state) +
                                ": only pending jobs can be held or released");
    }
  }
  for (JobId j : change) Emit(by, now, JobHoldSet{j, hold});
  return state_.jobs.at(id);
}

}  // namespace corral::head
