// Interactive sessions (docs/interactive.md): `corral exec` into a running job, and the two
// rules that end a session no one uses: its client is gone (the head's inactive limit, as
// Slurm's InactiveLimit), or its terminal (a notebook's kernels and terminals) and GPUs stay
// idle past its queue's idle_timeout.
// The sessions' clocks and the rules that end them are SessionClocks' (session_clocks.h); the
// core opens sessions, combines their idleness with their GPUs', and emits what they decide.
#include <algorithm>

#include "core/spec.h"
#include "head/head_core.h"

namespace corral::head {

Result<ExecTarget> HeadCore::OpenExec(const Caller& by, JobId id, int32_t replica, TimeMs now) {
  auto it = state_.jobs.find(id);
  if (it == state_.jobs.end()) return UnknownJob(id);
  const Job& job = it->second;
  if (!MayManageJob(by, job)) {
    return PermissionDenied("running commands inside job " + std::to_string(id) +
                            " is for its owner (" + job.owner + "), the admins of queue " +
                            job.spec.queue + " and admins, not " +
                            (by.name.empty() ? std::string("this caller") : by.name));
  }
  const Run* run = job.CurrentRun();
  if (job.state != JobState::kRunning || run == nullptr || run->state != RunState::kRunning) {
    return FailedPrecondition("job " + std::to_string(id) + " is " + JobStateName(job.state) +
                              ", not running: there is no allocation to run a command in");
  }
  if (run->stop_requested) {
    return FailedPrecondition("job " + std::to_string(id) + " is stopping: " + run->reason);
  }
  if (replica < 0 || replica >= static_cast<int32_t>(run->placement.size())) {
    return InvalidArgument("replica: job " + std::to_string(id) + " has " +
                           std::to_string(run->placement.size()) + " replica(s), 0.." +
                           std::to_string(run->placement.size() - 1));
  }
  ExecTarget t;
  t.job = id;
  t.run_id = ToString(RunId{id, run->attempt});
  t.replica = replica;
  t.node = run->placement[replica].node;
  t.owner = job.owner;
  t.caller = by.name;
  t.notebook = job.spec.notebook;
  Result<const Node*> node = AgentNode(t.node);
  if (!node.ok()) return node.status();
  // The node's state is said at once, rather than the relay's timeout later.
  if ((*node)->liveness != Liveness::kAlive) {
    return FailedPrecondition("node " + t.node + " is " + LivenessName((*node)->liveness));
  }
  t.address = (*node)->address;
  sessions_.Heard(id, /*typed=*/false, now);
  return t;
}

Result<SessionStatus> HeadCore::TouchSession(const Caller& by, JobId id, bool typed, TimeMs now) {
  auto it = state_.jobs.find(id);
  if (it == state_.jobs.end()) return UnknownJob(id);
  const Job& job = it->second;
  if (!MayManageJob(by, job)) {
    return PermissionDenied("job " + std::to_string(id) + " is a session of " + job.owner +
                            "; only its owner, its queue's admins and admins keep it alive");
  }
  if (!job.spec.interactive) {
    return FailedPrecondition("job " + std::to_string(id) +
                              " is not an interactive session (kind job): nothing to keep alive");
  }
  SessionStatus out;
  out.inactive_limit_ms = config_.inactive_limit_ms;
  sessions_.Heard(id, typed, now);
  if (const Run* run = job.CurrentRun()) {
    // Typing now forgives it at the next check; say so only while it still stands.
    std::optional<TimeMs> at = sessions_.StopAt(RunId{id, run->attempt});
    if (at && !typed) out.idle_stop_at = *at;
  }
  auto seen = GetJob(by, id);
  if (!seen.ok()) return seen.status();
  out.job = std::move(*seen);
  return out;
}

TimeMs HeadCore::SessionIdleSince(const Job& job, const Run& run) const {
  TimeMs since = sessions_.UserIdleSince(job.id, run.started_at);
  if (since == 0) return 0;
  for (const ReplicaPlacement& p : run.placement) {
    if (p.gpus.empty()) continue;
    // GPUs not (yet) measured under the threshold count as in use.
    std::optional<TimeMs> low = gpus_.LowSince(RunId{job.id, run.attempt}, p.node);
    if (!low) return 0;
    since = std::max(since, *low);
  }
  return since;
}

void HeadCore::CullSessions(TimeMs now) {
  SessionClocks::Verdicts verdicts = sessions_.Check(
      state_, {config_.inactive_limit_ms, config_.idle_threshold_percent},
      [this](const Job& job, const Run& run) { return SessionIdleSince(job, run); }, now);
  for (const auto& [id, since] : verdicts.warn) {
    const Job& j = state_.jobs.at(id);
    const int32_t attempt = j.CurrentRun()->attempt;
    DurationMs timeout = state_.queues.at(j.spec.queue).idle_timeout_ms;
    TimeMs stop_at = now + std::min(config_.idle_stop_warning_ms, timeout);
    sessions_.Warned(RunId{id, attempt}, stop_at);
    Emit(Caller::System(), now, IdleWarned{id, attempt, since, stop_at});
  }
  for (const auto& [id, reason] : verdicts.end) {
    const Job& j = state_.jobs.at(id);
    if (j.state == JobState::kPending) {
      Emit(Caller::System(), now, JobEnded{id, JobState::kCancelled, reason});
    } else {
      RequestStop(j, StopCause::kCancelled, reason, now);
    }
  }
}

}  // namespace corral::head
