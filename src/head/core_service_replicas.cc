// Keeping a service's replicas (docs/services.md), each tick and after each of its changes:
// `desired` replicas of its current version alive, a rolling update replacing replicas of an
// older version one at a time, and replicas leaving (scale-down, update, removal) drained of
// their requests before they stop. Pure: the head's proxy reports readiness and drained
// replicas as commands (ReportReplicaReady, ReportReplicaDrained).
#include <algorithm>

#include "core/service.h"
#include "head/core_services.h"
#include "head/head_core.h"

namespace corral::head {
namespace {

// Failures of an update's new version that roll it back: a crash loop, not one bad node.
constexpr int32_t kRollbackFailures = 2;

bool StopAsked(const Job& job) {
  const Run* run = job.CurrentRun();
  return run && run->stop_requested;
}

}  // namespace

void HeadCore::StopReplica(const Caller& by, const Job& job, const std::string& reason,
                           TimeMs now) {
  if (job.state == JobState::kPending) {
    Emit(by, now, JobEnded{job.id, JobState::kCancelled, reason});
  } else if (const Run* run = job.CurrentRun(); run && !run->stop_requested) {
    RequestStop(job, StopCause::kCancelled, reason, now);
  }
}

void HeadCore::LeaveReplica(const Service& s, const Job& job, const std::string& reason,
                            TimeMs now) {
  const Run* run = job.CurrentRun();
  const bool serving = run && run->state == RunState::kRunning && !run->stop_requested &&
                       s.ready.count(job.id) && s.spec.drain_timeout_ms > 0;
  if (!serving) return StopReplica(Caller::System(), job, reason, now);
  if (!s.draining.count(job.id)) {
    Emit(Caller::System(), now,
         ServiceReplicaMarked{s.spec.name, job.id, ReplicaMark::kDraining,
                              now + s.spec.drain_timeout_ms});
  }
}

void HeadCore::StopDrainedReplicas(const Service& s, TimeMs now) {
  const std::map<JobId, TimeMs> draining = s.draining;  // a copy: the stops change the state
  for (const auto& [id, until] : draining) {
    auto it = state_.jobs.find(id);
    if (it == state_.jobs.end() || IsTerminal(it->second.state) || until > now) continue;
    StopReplica(Caller::System(), it->second,
                "drain timeout " + ServiceDurationText(s.spec.drain_timeout_ms) +
                    " over: stopped with requests in flight",
                now);
  }
}

void HeadCore::KeepServices(TimeMs now) {
  std::vector<std::string> names;
  for (const auto& [name, s] : state_.services) names.push_back(name);
  for (const std::string& name : names) KeepReplicas(state_.services.at(name), now);
}

// Starts replicas up to `desired` (after a crash loop's backoff), lets the newest above it
// leave, and goes on with an update in progress.
void HeadCore::KeepReplicas(const Service& service, TimeMs now) {
  const std::string name = service.spec.name;  // a copy: the changes below replace `service`
  StopDrainedReplicas(state_.services.at(name), now);
  if (state_.services.at(name).removing) {
    const std::set<JobId>& live = services().Live(name);
    if (std::all_of(live.begin(), live.end(),
                    [&](JobId id) { return StopAsked(state_.jobs.at(id)); })) {
      Emit(Caller::System(), now, ServiceRemoved{name});
    }
    return;
  }
  CheckRollout(state_.services.at(name), now);
  const Service& s = state_.services.at(name);
  // Replicas that serve or will: not stopping, not leaving; of the current version or older.
  std::vector<JobId> current, stale;
  for (JobId id : services().Live(name)) {
    const Job& job = state_.jobs.at(id);
    if (StopAsked(job) || s.draining.count(id)) continue;
    (s.VersionOf(id) == s.version ? current : stale).push_back(id);
  }
  while (static_cast<int32_t>(current.size()) > s.desired) {  // the newest leave first
    LeaveReplica(s, state_.jobs.at(current.back()),
                 "service scaled to " + std::to_string(s.desired), now);
    current.pop_back();
  }
  explained_.ServiceFine(name);
  if (!stale.empty()) return RollOneReplica(s, current, stale, now);
  for (auto count = static_cast<int32_t>(current.size()); count < s.desired; ++count) {
    if (!StartReplica(s, count, now)) return;
  }
}

bool HeadCore::StartReplica(const Service& s, int32_t index, TimeMs now) {
  const std::string& name = s.spec.name;
  int32_t recent = 0;
  if (DurationMs wait = CrashBackoff(services().FailedAt(name), now, &recent); wait > 0) {
    explained_.ServiceShort(name, "crash loop: " + std::to_string(recent) +
                                      " replicas failed in the last " +
                                      ServiceDurationText(kCrashWindow) + "; next replica in " +
                                      ServiceDurationText(wait));
    return false;
  }
  JobSpec spec = ReplicaSpec(s.spec, index >= s.spec.min_replicas);
  auto job = Submit(Caller::System(), std::move(spec), s.spec.owner, now);
  if (!job.ok()) {
    explained_.ServiceShort(name, "cannot start a replica: " + job.status().message());
    return false;
  }
  return true;
}

// Surge one, then drain one: while a replica of the current version is not ready yet, wait;
// once all are, one replica of an older version leaves if that keeps `desired`, else one more
// of the current version starts. So the ready replicas never drop below what they were.
void HeadCore::RollOneReplica(const Service& s, const std::vector<JobId>& current,
                              const std::vector<JobId>& stale, TimeMs now) {
  const std::string name = s.spec.name;
  const std::string progress = "updating to version " + std::to_string(s.version) + ": " +
                               std::to_string(stale.size()) +
                               " replica(s) of an older version left";
  for (JobId id : current) {
    if (!s.ready.count(id)) {
      explained_.ServiceShort(name, progress + "; waiting for replica " + std::to_string(id) +
                                        " to answer GET " + s.spec.health_path);
      return;
    }
  }
  std::vector<JobId> old = stale;
  if (static_cast<int32_t>(current.size() + old.size()) > s.desired) {
    // One that does not serve goes first: it takes nothing away.
    auto leave = std::find_if(old.begin(), old.end(), [&](JobId id) { return !s.ready.count(id); });
    if (leave == old.end()) leave = old.begin();
    LeaveReplica(s, state_.jobs.at(*leave), "replaced by version " + std::to_string(s.version),
                 now);
    old.erase(leave);
  }
  const Service& after = state_.services.at(name);
  if (!old.empty() && static_cast<int32_t>(current.size() + old.size()) <= after.desired &&
      StartReplica(after, static_cast<int32_t>(current.size()), now)) {
    explained_.ServiceShort(name, progress);
  }
}

bool HeadCore::CheckRollout(const Service& s, TimeMs now) {
  if (!s.rollout) return false;
  const std::string& name = s.spec.name;
  const std::string version = std::to_string(s.version);
  std::string why;
  const int32_t failed = services().FailuresSince(name, s.version, s.rollout->started_at);
  if (failed >= kRollbackFailures) {
    why = std::to_string(failed) + " of its replicas failed (a crash loop)";
  }
  int32_t ready = 0;
  bool older_left = false;
  for (JobId id : services().Live(name)) {
    const Job& job = state_.jobs.at(id);
    if (StopAsked(job) || s.draining.count(id)) continue;
    if (s.VersionOf(id) != s.version) {
      older_left = true;
    } else if (s.ready.count(id)) {
      ++ready;
    } else if (why.empty() && now - job.submitted_at >= s.rollout->ready_timeout_ms) {
      why = "replica " + std::to_string(id) + " did not answer GET " + s.spec.health_path +
            " with 2xx within " + ServiceDurationText(s.rollout->ready_timeout_ms);
    }
  }
  if (!why.empty()) {
    Emit(Caller::System(), now,
         ServiceRolloutEnded{name, true,
                             "version " + version + " rolled back to version " +
                                 std::to_string(s.rollout->from_version) + ": " + why});
    return true;
  }
  if (older_left || ready < s.desired) return false;
  Emit(Caller::System(), now,
       ServiceRolloutEnded{
           name, false,
           "version " + version + " ready on " + std::to_string(ready) + " replica(s)"});
  return true;
}

}  // namespace corral::head
