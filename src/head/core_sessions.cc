// Interactive sessions (docs/interactive.md): `corral exec` into a running job, and the two
// rules that end a session no one uses: its client is gone (the head's inactive limit, as
// Slurm's InactiveLimit), or its terminal (a notebook's kernels and terminals) and GPUs stay
// idle past its queue's idle_timeout.
// When a client was last heard from and last typed are observations, like an agent's
// last-heard time: not durable, and a new leadership starts every session's clocks afresh.
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
  auto node = state_.nodes.find(t.node);
  // A precondition, not "unavailable": clients take a 503 for a head without a leader and try
  // every head again for their failover window; the node's state is said at once.
  if (node == state_.nodes.end() || node->second.address.empty()) {
    return FailedPrecondition("node " + t.node + " has no address to reach its agent at");
  }
  if (node->second.liveness != Liveness::kAlive) {
    return FailedPrecondition("node " + t.node + " is " + LivenessName(node->second.liveness));
  }
  t.address = node->second.address;
  if (auto s = session_heard_.find(id); s != session_heard_.end()) s->second.heard = now;
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
  if (auto s = session_heard_.find(id); s != session_heard_.end()) {
    s->second.heard = now;
    if (typed) s->second.typed = now;
  }
  if (const Run* run = job.CurrentRun()) {
    if (auto at = session_stop_at_.find(RunId{id, run->attempt}); at != session_stop_at_.end()) {
      // Typing now forgives it at the next check; say so only while it still stands.
      if (!typed) out.idle_stop_at = at->second;
    }
  }
  auto seen = GetJob(by, id);
  if (!seen.ok()) return seen.status();
  out.job = std::move(*seen);
  return out;
}

// A notebook's agent reports how long ago its kernels or terminals were last active; taken as
// a time on the head's clock, so that the two clocks need not agree. A kernel running a cell
// (0) is in use until a report says otherwise: agents sync every few seconds, cells run longer.
void HeadCore::ObserveNotebookActivity(JobId job, int64_t idle_ms, TimeMs now) {
  auto s = session_heard_.find(job);
  if (s == session_heard_.end()) return;
  s->second.kernel = std::max(s->second.kernel, now - idle_ms);
  s->second.kernel_busy = idle_ms == 0;
}

TimeMs HeadCore::SessionIdleSince(const Job& job, const Run& run) const {
  auto heard = session_heard_.find(job.id);
  TimeMs since = run.started_at;
  if (heard != session_heard_.end()) {
    if (heard->second.kernel_busy) return 0;
    since = std::max({since, heard->second.typed, heard->second.kernel});
  }
  auto low = low_since_.find(RunId{job.id, run.attempt});
  for (const ReplicaPlacement& p : run.placement) {
    if (p.gpus.empty()) continue;
    // GPUs not (yet) measured under the threshold count as in use.
    if (low == low_since_.end()) return 0;
    auto n = low->second.find(p.node);
    if (n == low->second.end()) return 0;
    since = std::max(since, n->second);
  }
  return since;
}

void HeadCore::CullSessions(TimeMs now) {
  std::vector<std::pair<JobId, std::string>> end;
  std::vector<std::pair<JobId, TimeMs>> warn;  // with the time it has been idle since
  for (auto it = session_heard_.begin(); it != session_heard_.end();) {
    auto job = state_.jobs.find(it->first);
    if (job == state_.jobs.end() || IsTerminal(job->second.state)) {
      it = session_heard_.erase(it);
      continue;
    }
    const Job& j = job->second;
    const Run* run = j.CurrentRun();
    if (run != nullptr && run->stop_requested) {
      ++it;
      continue;
    }
    // A notebook has no attached client: its browser comes and goes, and only idle culling
    // ends it.
    if (config_.inactive_limit_ms > 0 && !j.spec.notebook &&
        now - it->second.heard > config_.inactive_limit_ms) {
      end.emplace_back(
          j.id, std::string(kReasonCancelled) + ": its client has not been heard from for " +
                    FormatDuration(now - it->second.heard) + " (the head's inactive limit is " +
                    FormatDuration(config_.inactive_limit_ms) + ")");
      ++it;
      continue;
    }
    auto queue = state_.queues.find(j.spec.queue);
    DurationMs timeout = queue == state_.queues.end() ? 0 : queue->second.idle_timeout_ms;
    if (timeout <= 0 || j.state != JobState::kRunning || run == nullptr ||
        run->state != RunState::kRunning) {
      ++it;
      continue;
    }
    RunId key{j.id, run->attempt};
    TimeMs since = SessionIdleSince(j, *run);
    if (since == 0 || now - since < timeout) {
      session_stop_at_.erase(key);  // used again: forgiven, the clock starts over
    } else if (auto at = session_stop_at_.find(key); at == session_stop_at_.end()) {
      warn.emplace_back(j.id, since);
    } else if (now >= at->second) {
      bool gpus = std::any_of(run->placement.begin(), run->placement.end(),
                              [](const ReplicaPlacement& p) { return !p.gpus.empty(); });
      end.emplace_back(
          j.id, std::string(kReasonCancelled) + ": idle for " + FormatDuration(now - since) +
                    (j.spec.notebook ? ": no kernel or terminal activity in its notebook"
                                     : ": no terminal input") +
                    (gpus ? " and its GPUs under " +
                                std::to_string(config_.idle_threshold_percent) + "% use"
                          : std::string()) +
                    " (queue " + j.spec.queue + "'s idle_timeout is " + FormatDuration(timeout) +
                    ")");
    }
    ++it;
  }
  for (const auto& [id, since] : warn) {
    const Job& j = state_.jobs.at(id);
    const int32_t attempt = j.CurrentRun()->attempt;
    DurationMs timeout = state_.queues.at(j.spec.queue).idle_timeout_ms;
    TimeMs stop_at = now + std::min(config_.idle_stop_warning_ms, timeout);
    session_stop_at_[RunId{id, attempt}] = stop_at;
    Emit(Caller::System(), now, IdleWarned{id, attempt, since, stop_at});
  }
  for (const auto& [id, reason] : end) {
    const Job& j = state_.jobs.at(id);
    if (j.state == JobState::kPending) {
      Emit(Caller::System(), now, JobEnded{id, JobState::kCancelled, reason});
    } else {
      RequestStop(j, StopCause::kCancelled, reason, now);
    }
  }
}

}  // namespace corral::head
