// Admission's decisions: a user hold first, then the dependencies, then the array's %P limit.
// Which jobs are held is derived from the durable state, so recovery rebuilds it; the one
// decision that changes state, cancelling a job whose dependency can never be met, is a step
// the core turns into a change like any other.
#include "head/admission.h"

namespace corral::head {
namespace {

enum class DepState { kMet, kWaiting, kNever };

// Whether a singleton dependency waits: an older job of the same owner and name not over.
bool SingletonWaits(const ClusterState& s, const Job& job, std::string* why) {
  for (const auto& [id, other] : s.jobs) {
    if (id >= job.id) break;
    if (other.owner == job.owner && other.spec.name == job.spec.name && !IsTerminal(other.state)) {
      *why =
          "singleton: job " + std::to_string(id) + " named '" + job.spec.name + "' has not ended";
      return true;
    }
  }
  return false;
}

// The states of what a dependency's target names, retired ones included.
std::vector<JobState> TargetStates(const ClusterState& s, JobId target) {
  std::vector<JobState> states;
  for (const Job* t : DependencyTargets(s, target)) states.push_back(t->state);
  if (auto it = s.retired.find(target); it != s.retired.end()) states.push_back(it->second);
  return states;
}

// Whether `job`'s dependencies hold now, wait, or can never hold (with the reason).
DepState EvaluateDependencies(const ClusterState& s, const Job& job, std::string* why) {
  DepState result = DepState::kMet;
  for (const Dependency& d : job.spec.dependencies) {
    if (d.type == DependencyType::kSingleton) {
      if (SingletonWaits(s, job, why)) result = DepState::kWaiting;
      continue;
    }
    for (JobId target : d.jobs) {
      bool all_over = true, any_bad = false, all_ok = true;
      for (JobState t : TargetStates(s, target)) {
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

}  // namespace

std::vector<const Job*> DependencyTargets(const ClusterState& s, JobId id) {
  std::vector<const Job*> out;
  auto it = s.jobs.find(id);
  if (it == s.jobs.end()) return out;
  if (it->second.array_id != id) return {&it->second};
  for (; it != s.jobs.end() && it->second.array_id == id; ++it) out.push_back(&it->second);
  return out;
}

std::optional<PendingReason> Admission::Admit(const ClusterState& s, const Job& job) {
  if (job.held) {
    held_.insert(job.id);
    return PendingReason{PendingCode::kHeld,
                         "held by its user (scontrol release, or POST /v1/jobs/" +
                             std::to_string(job.id) + "/release)"};
  }
  std::string why;
  switch (EvaluateDependencies(s, job, &why)) {
    case DepState::kNever:
      doomed_[job.id] = why;
      held_.insert(job.id);
      return PendingReason{PendingCode::kDependencyNever, why};
    case DepState::kWaiting:
      Hold(job, /*waits=*/true);
      return PendingReason{PendingCode::kDependency, why};
    case DepState::kMet:
      break;
  }
  if (job.IsArrayElement() && job.array_max_running > 0 &&
      array_live_[job.array_id] >= job.array_max_running) {
    held_.insert(job.id);
    array_held_[job.array_id].insert(job.id);
    return PendingReason{PendingCode::kArrayLimit,
                         "array " + std::to_string(job.array_id) + ": at most " +
                             std::to_string(job.array_max_running) + " elements run at once"};
  }
  held_.erase(job.id);
  CountAdmitted(job);
  return std::nullopt;
}

// Held on its dependencies: it waits on each target, and on its singleton name.
void Admission::Hold(const Job& job, bool waits) {
  held_.insert(job.id);
  if (!waits) return;
  for (const Dependency& d : job.spec.dependencies) {
    for (JobId t : d.jobs) waiting_on_[t].insert(job.id);
    if (d.type == DependencyType::kSingleton) singletons_.insert(job.id);
  }
}

// A job no longer waits for its dependencies (it is admitted, looked at again or cancelled):
// it leaves their waiters, so that the index holds only jobs that wait, as a recovery builds it.
void Admission::ForgetWaits(const Job& job) {
  for (const Dependency& d : job.spec.dependencies) {
    for (JobId t : d.jobs) {
      auto it = waiting_on_.find(t);
      if (it == waiting_on_.end()) continue;
      it->second.erase(job.id);
      if (it->second.empty()) waiting_on_.erase(it);
    }
  }
}

bool Admission::Withdraw(const Job& job) {
  if (!held_.count(job.id)) {
    Release(job);
    return true;
  }
  ForgetWaits(job);
  held_.erase(job.id);
  doomed_.erase(job.id);
  singletons_.erase(job.id);
  if (job.IsArrayElement()) array_held_[job.array_id].erase(job.id);
  return false;
}

void Admission::CountAdmitted(const Job& job) {
  if (job.IsArrayElement()) ++array_live_[job.array_id];
}

void Admission::Release(const Job& job) {
  if (!job.IsArrayElement()) return;
  --array_live_[job.array_id];
  release_arrays_.insert(job.array_id);
}

void Admission::OnEnded(const Job& job) {
  for (JobId key : {job.id, job.array_id}) {
    auto it = waiting_on_.find(key);
    if (key == 0 || it == waiting_on_.end()) continue;
    recheck_.insert(it->second.begin(), it->second.end());
    waiting_on_.erase(it);
  }
  if (!job.spec.name.empty()) recheck_.insert(singletons_.begin(), singletons_.end());
}

void Admission::Forget(JobId retired) {
  array_live_.erase(retired);
  array_held_.erase(retired);
  waiting_on_.erase(retired);
}

std::optional<Admission::Step> Admission::Next(const ClusterState& s) {
  if (!doomed_.empty()) {
    auto node = doomed_.extract(doomed_.begin());
    return Cancel{node.key(), std::move(node.mapped())};
  }
  while (!recheck_.empty()) {
    JobId id = recheck_.extract(recheck_.begin()).value();
    // It may have ended, and even been retired, since it was queued for a look.
    auto it = s.jobs.find(id);
    if (it == s.jobs.end() || it->second.state != JobState::kPending || !held_.count(id)) continue;
    ForgetWaits(it->second);  // Admit waits again for what is still not met
    singletons_.erase(id);
    held_.erase(id);
    return Reconsider{id};
  }
  return NextArrayElement(s);
}

// The next element of an array with room again, admitted now; an array without more room (or
// elements) leaves the list.
std::optional<Admission::Step> Admission::NextArrayElement(const ClusterState& s) {
  while (!release_arrays_.empty()) {
    JobId array = *release_arrays_.begin();
    auto& queue = array_held_[array];
    if (!queue.empty()) {
      const Job& next = s.jobs.at(*queue.begin());
      if (array_live_[array] < next.array_max_running) {
        queue.erase(queue.begin());
        held_.erase(next.id);
        ++array_live_[array];
        return Admitted{next.id};
      }
    }
    release_arrays_.erase(release_arrays_.begin());
  }
  return std::nullopt;
}

Json Admission::Summary() const {
  auto ids = [](const auto& set) {
    Json a = Json::array();
    for (const auto& x : set) a.push_back(x);
    return a;
  };
  Json array_held = Json::object();
  for (const auto& [array, jobs] : array_held_) {
    if (!jobs.empty()) array_held[std::to_string(array)] = ids(jobs);
  }
  Json array_live = Json::object();
  for (const auto& [array, n] : array_live_) {
    if (n != 0) array_live[std::to_string(array)] = n;
  }
  Json waiting_on = Json::object();
  for (const auto& [job, held] : waiting_on_) {
    if (!held.empty()) waiting_on[std::to_string(job)] = ids(held);
  }
  Json doomed = Json::array();
  for (const auto& [id, why] : doomed_) doomed.push_back(id);
  return Json{
      {"held", ids(held_)},       {"array_held", array_held},       {"array_live", array_live},
      {"waiting_on", waiting_on}, {"singletons", ids(singletons_)}, {"doomed", doomed}};
}

}  // namespace corral::head
