// Pending jobs the scheduler does not see yet (Slurm's held-by-dependency and array
// throttling): a job waits here until its dependencies hold and its array has room under
// its %P limit. Which jobs are held is derived from the durable state, so recovery rebuilds
// it; the one decision made here, cancelling a job whose dependency can never be met, is a
// change like any other.
#include "head/head_core.h"
#include "sched/job_input.h"

namespace corral::head {
namespace {

enum class DepState { kMet, kWaiting, kNever };

}  // namespace

// The jobs a dependency names: an array's id stands for all of its elements.
std::vector<const Job*> HeadCore::DependencyTargets(JobId id) const {
  std::vector<const Job*> out;
  auto it = state_.jobs.find(id);
  if (it == state_.jobs.end()) return out;
  if (it->second.array_id != id) return {&it->second};
  for (; it != state_.jobs.end() && it->second.array_id == id; ++it) out.push_back(&it->second);
  return out;
}

// Whether `job`'s dependencies hold now, wait, or can never hold (with the reason).
static DepState Evaluate(const HeadCore& core, const ClusterState& s, const Job& job,
                         std::string* why) {
  DepState result = DepState::kMet;
  for (const Dependency& d : job.spec.dependencies) {
    if (d.type == DependencyType::kSingleton) {
      for (const auto& [id, other] : s.jobs) {
        if (id >= job.id) break;
        if (other.owner == job.owner && other.spec.name == job.spec.name &&
            !IsTerminal(other.state)) {
          *why = "singleton: job " + std::to_string(id) + " named '" + job.spec.name +
                 "' has not ended";
          result = DepState::kWaiting;
          break;
        }
      }
      continue;
    }
    for (JobId target : d.jobs) {
      std::vector<JobState> states;
      for (const Job* t : core.DependencyTargets(target)) states.push_back(t->state);
      if (auto retired = core.RetiredState(target)) states.push_back(*retired);
      bool all_over = true, any_bad = false, all_ok = true;
      for (JobState t : states) {
        all_over &= IsTerminal(t);
        any_bad |= t == JobState::kFailed || t == JobState::kCancelled;
        all_ok &= t == JobState::kSucceeded;
      }
      std::string name = std::string(DependencyTypeName(d.type)) + ":" + std::to_string(target);
      if (d.type == DependencyType::kAfterOk && any_bad) {
        *why = name + " can never be met: job " + std::to_string(target) + " did not succeed";
        return DepState::kNever;
      }
      if (d.type == DependencyType::kAfterNotOk && all_over && all_ok) {
        *why = name + " can never be met: job " + std::to_string(target) + " succeeded";
        return DepState::kNever;
      }
      bool met = d.type == DependencyType::kAfterOk ? all_ok : all_over;
      if (!met && result == DepState::kMet) {
        *why = "waiting for dependency " + name;
        result = DepState::kWaiting;
      }
    }
  }
  return result;
}

void HeadCore::AdmitPending(const Job& job, const sched::PendingJob* input) {
  if (job.held) {
    held_.insert(job.id);
    pending_reason_[job.id] = {PendingCode::kHeld,
                               "held by its user (scontrol release, or POST /v1/jobs/" +
                                   std::to_string(job.id) + "/release)"};
    return;
  }
  std::string why;
  switch (Evaluate(*this, state_, job, &why)) {
    case DepState::kNever:
      doomed_[job.id] = why;
      held_.insert(job.id);
      pending_reason_[job.id] = {PendingCode::kDependencyNever, why};
      return;
    case DepState::kWaiting:
      held_.insert(job.id);
      for (const Dependency& d : job.spec.dependencies) {
        for (JobId t : d.jobs) waiting_on_[t].insert(job.id);
      }
      for (const Dependency& d : job.spec.dependencies) {
        if (d.type == DependencyType::kSingleton) singletons_.insert(job.id);
      }
      pending_reason_[job.id] = {PendingCode::kDependency, why};
      return;
    case DepState::kMet:
      break;
  }
  if (job.IsArrayElement() && job.array_max_running > 0 &&
      array_live_[job.array_id] >= job.array_max_running) {
    held_.insert(job.id);
    array_held_[job.array_id].insert(job.id);
    pending_reason_[job.id] = {PendingCode::kArrayLimit,
                               "array " + std::to_string(job.array_id) + ": at most " +
                                   std::to_string(job.array_max_running) + " elements run at once"};
    return;
  }
  held_.erase(job.id);
  if (job.IsArrayElement()) ++array_live_[job.array_id];
  scheduler_->AddPending(input != nullptr ? *input : SchedulerInput(job));
  WantSchedule();
}

// A job no longer waits for its dependencies (it is admitted, looked at again or cancelled):
// it leaves their waiters, so that the index holds only jobs that wait, as a recovery builds it.
void HeadCore::ForgetWaits(const Job& job) {
  for (const Dependency& d : job.spec.dependencies) {
    for (JobId t : d.jobs) {
      auto it = waiting_on_.find(t);
      if (it == waiting_on_.end()) continue;
      it->second.erase(job.id);
      if (it->second.empty()) waiting_on_.erase(it);
    }
  }
}

// A pending job left the pending set without running (cancelled): forget its hold.
void HeadCore::Unhold(const Job& job) {
  ForgetWaits(job);
  held_.erase(job.id);
  doomed_.erase(job.id);
  singletons_.erase(job.id);
  if (job.IsArrayElement()) array_held_[job.array_id].erase(job.id);
}

void HeadCore::OnTerminal(const Job& job, bool was_live) {
  estimator_.Observe(sched::EndedJobOf(job));
  if (job.IsArrayElement() && was_live) {
    --array_live_[job.array_id];
    release_arrays_.insert(job.array_id);
  }
  for (JobId key : {job.id, job.array_id}) {
    auto it = waiting_on_.find(key);
    if (key == 0 || it == waiting_on_.end()) continue;
    recheck_.insert(it->second.begin(), it->second.end());
    waiting_on_.erase(it);
  }
  if (!job.spec.name.empty()) recheck_.insert(singletons_.begin(), singletons_.end());
}

void HeadCore::Settle(TimeMs now) {
  if (settling_) return;
  settling_ = true;
  while (!recheck_.empty() || !release_arrays_.empty() || !doomed_.empty()) {
    if (!doomed_.empty()) {
      auto [id, why] = *doomed_.begin();
      doomed_.erase(doomed_.begin());
      auto it = state_.jobs.find(id);
      if (it != state_.jobs.end() && it->second.state == JobState::kPending) {
        Emit(Caller::System(), now, JobEnded{id, JobState::kCancelled, why});
      }
      continue;
    }
    if (!recheck_.empty()) {
      JobId id = *recheck_.begin();
      recheck_.erase(recheck_.begin());
      // It may have ended, and even been retired, since it was queued for a look.
      auto it = state_.jobs.find(id);
      if (it == state_.jobs.end()) continue;
      const Job& job = it->second;
      if (job.state != JobState::kPending || !held_.count(id)) continue;
      ForgetWaits(job);  // AdmitPending waits again for what is still not met
      singletons_.erase(id);
      held_.erase(id);
      AdmitPending(job);
      continue;
    }
    JobId array = *release_arrays_.begin();
    release_arrays_.erase(release_arrays_.begin());
    auto& queue = array_held_[array];
    while (!queue.empty()) {
      const Job& next = state_.jobs.at(*queue.begin());
      if (array_live_[array] >= next.array_max_running) break;
      queue.erase(queue.begin());
      held_.erase(next.id);
      pending_reason_.erase(next.id);
      ++array_live_[array];
      scheduler_->AddPending(SchedulerInput(next));
      WantSchedule();
    }
  }
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
