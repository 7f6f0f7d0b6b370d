// Jobs through their lifecycle (DESIGN §5) in the head's core: submit, schedule, stop,
// finish, requeue. Every change goes through Emit.
#include <utility>

#include <algorithm>
#include <optional>

#include "core/spec.h"
#include "core/task_env.h"
#include "head/head_core.h"
#include "head/queue_admin.h"
#include "sched/job_input.h"

namespace corral::head {
namespace {

// "replica 1" for a one-task replica, "replica 1 task 3" otherwise: what `corral show` names.
std::string TaskName(const ReplicaPlacement& p, int32_t replica, int32_t task) {
  std::string name = "replica " + std::to_string(replica);
  if (p.tasks > 1 && task >= 0) name += " task " + std::to_string(task);
  return name;
}

// A client's request id: short, printable, and safe in logs.
Status CheckRequestId(const std::string& id) {
  if (id.size() > 128) return InvalidArgument("field 'request_id': longer than 128 characters");
  for (char ch : id) {
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '-' || ch == '_' || ch == '.';
    if (!ok) return InvalidArgument("field 'request_id': want letters, digits, '-', '_' or '.'");
  }
  return Status::Ok();
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

// Whether `by` may submit to `queue`: every queue on its path ("org", "org/team") that has an
// access list names the user or one of the token's groups. Admins may submit anywhere.
Status CheckQueueAccess(const std::map<std::string, QueueConfig>& queues, const Caller& by,
                        const std::string& queue) {
  if (by.IsAdmin()) return Status::Ok();
  for (size_t end = 0; end != std::string::npos;) {
    end = queue.find('/', end + 1);
    auto q = queues.find(queue.substr(0, end));
    if (q == queues.end()) continue;
    const QueueConfig& c = q->second;
    if (c.allowed_users.empty() && c.allowed_groups.empty()) continue;
    bool allowed =
        std::find(c.allowed_users.begin(), c.allowed_users.end(), by.name) != c.allowed_users.end();
    for (const std::string& g : by.groups) {
      allowed |=
          std::find(c.allowed_groups.begin(), c.allowed_groups.end(), g) != c.allowed_groups.end();
    }
    if (!allowed) {
      return PermissionDenied("user '" + by.name + "' may not submit to queue '" + queue +
                              "': queue '" + c.name + "' admits users [" +
                              JoinNames(c.allowed_users) + "] and groups [" +
                              JoinNames(c.allowed_groups) + "]");
    }
  }
  return Status::Ok();
}

// A job's grace within its queue's max_grace_ms and its parents': a preempted run keeps its
// GPUs for the grace, so the queue's admins bound how long a preemptor may wait.
Status CheckGrace(const std::map<std::string, QueueConfig>& queues, const JobSpec& spec) {
  for (size_t end = 0; end != std::string::npos;) {
    end = spec.queue.find('/', end + 1);
    auto q = queues.find(spec.queue.substr(0, end));
    if (q == queues.end() || q->second.max_grace_ms <= 0) continue;
    if (spec.grace_ms > q->second.max_grace_ms) {
      return InvalidArgument("field 'grace_period': got " + FormatDuration(spec.grace_ms) +
                             ", want at most " + FormatDuration(q->second.max_grace_ms) +
                             " (queue '" + q->second.name + "' max_grace)");
    }
  }
  return Status::Ok();
}

// The lines of a replica's note not yet among the job's events, each with its event's name:
// a job's events are durable, so a repeated report (or one after a failover) finds them there.
std::vector<std::pair<const char*, std::string>> NewNotes(const Job& job, const std::string& text) {
  std::vector<std::pair<const char*, std::string>> out;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string note = text.substr(at, end - at);
    at = end + 1;
    if (note.empty()) continue;
    bool known = false;
    for (const JobEvent& e : job.events) known = known || e.reason == note;
    if (known) continue;
    const char* what = note.rfind("notebook ready", 0) == 0    ? "notebook ready"
                       : note.rfind("pulling", 0) == 0         ? "pulling image"
                       : note.rfind(kShareNotEnforced, 0) == 0 ? kShareNotEnforced
                                                               : "image pulled";
    out.emplace_back(what, std::move(note));
  }
  return out;
}

// Why a replica's end loses the run rather than ending it as the job's own doing (requeued
// without spending a restart, as with a lost node), or nullopt: its agent stopped it after
// losing the head (fenced), lost track of it (vanished), or it failed on a GPU that failed its
// probe. REQUIRES: the replica has ended, no exit of it is recorded, no stop was requested.
std::optional<std::string> LossOfReplica(const ClusterState& s, const Run& run,
                                         const std::string& node, const RunReport& r) {
  if (r.fenced) return "node " + node + " stopped it after losing contact with the head (fenced)";
  if (r.vanished) {
    return "node " + node + " lost replica " + std::to_string(r.replica) +
           " without an exit status (its launch or monitor was killed)";
  }
  auto n = s.nodes.find(node);
  if (r.exit_code == 0 || n == s.nodes.end()) return std::nullopt;
  for (int32_t gpu : run.placement[r.replica].gpus) {
    for (const Gpu& g : n->second.gpus) {
      if (g.index != gpu || g.healthy) continue;
      return "replica " + std::to_string(r.replica) + " died with GPU " + std::to_string(gpu) +
             " of node " + node + " (" + n->second.unhealthy + ")";
    }
  }
  return std::nullopt;
}

}  // namespace

HeadCore::HeadCore(CoreConfig config)
    : config_(std::move(config)),
      model_(config_.scheduler, config_.estimator, config_.adjust_scheduler_input) {}

void HeadCore::Emit(const Caller& by, TimeMs now, ChangeKind what) {
  Change c{state_.revision + 1, now, by, std::move(what)};
  ApplyChange(state_, c);
  Index(c);
  out_.changes.push_back(std::move(c));
  Settle(now);  // what this change released (held jobs, array room) follows it
}

bool HeadCore::MayManageJob(const Caller& by, const Job& job) const {
  if (by.IsAdmin()) return true;
  if (by.kind != Caller::Kind::kUser) return false;
  if (by.name == job.owner) return true;
  return by.role == Role::kQueueAdmin && ManagesQueue(by, job.spec.queue);
}

Status HeadCore::CheckGpuShare(const JobSpec& spec) const {
  const Resources& r = spec.per_replica;
  if (!r.IsShare()) return Status::Ok();
  if (auto q = state_.queues.find(spec.queue); q != state_.queues.end() && !q->second.gpu_sharing) {
    return InvalidArgument("field 'gpus': queue '" + spec.queue +
                           "' does not allow shares of a GPU (its gpu_sharing is off); ask for "
                           "whole GPUs or use another queue");
  }
  if (r.gpu_memory_mb > 0 && !state_.nodes.empty()) {
    int64_t largest = 0;
    for (const auto& [name, node] : state_.nodes) {
      for (const Gpu& g : node.gpus) largest = std::max(largest, ShareableMemoryMb(g.memory_mb));
    }
    if (r.gpu_memory_mb > largest) {
      return InvalidArgument("field 'gpu_memory': got " + std::to_string(r.gpu_memory_mb) +
                             " MB, more than any GPU of the cluster can share (at most " +
                             std::to_string(largest) +
                             " MB: its memory less the driver's reserve of max(3%, 256 MiB))");
    }
  }
  return Status::Ok();
}

// A new job's checks against the queues, limits and nodes: what Submit refuses before it
// changes anything (a service's replica template is checked with them too).
Status HeadCore::CheckNewJob(const Caller& by, const Job& job, TimeMs now) {
  CORRAL_RETURN_IF_ERROR(CheckQueueAccess(state_.queues, by, job.spec.queue));
  CORRAL_RETURN_IF_ERROR(CheckGrace(state_.queues, job.spec));
  if (!by.IsAdmin()) CORRAL_RETURN_IF_ERROR(CheckUserLimits(job.spec, job.owner));
  CORRAL_RETURN_IF_ERROR(CheckPriority(by, job.spec, job.owner));
  CORRAL_RETURN_IF_ERROR(CheckReservation(job.spec, job.owner, now));
  // An elastic job needs its minimum to ever run.
  int32_t total_gpus = (job.spec.IsElastic() ? job.spec.min_replicas : job.spec.replicas) *
                       job.spec.per_replica.WholeGpus();
  if (auto q = state_.queues.find(job.spec.queue);
      q != state_.queues.end() && q->second.limit_gpus >= 0 && total_gpus > q->second.limit_gpus) {
    return InvalidArgument("field 'gpus': the job needs " + std::to_string(total_gpus) +
                           " GPUs, more than queue '" + job.spec.queue + "' may ever use (limit " +
                           std::to_string(q->second.limit_gpus) + ")");
  }
  CORRAL_RETURN_IF_ERROR(CheckGpuShare(job.spec));
  if (auto q = state_.queues.find(job.spec.queue);
      q != state_.queues.end() && q->second.max_pending_per_user > 0) {
    int64_t adding = job.spec.array.empty() ? 1 : 0;
    if (!job.spec.array.empty()) {
      auto a = ParseArray(job.spec.array);
      if (a.ok()) adding = static_cast<int64_t>(a->indices.size());
    }
    int64_t pending = indexes_.get<PendingCounts>().Of(job.spec.queue, job.owner);
    if (pending + adding > q->second.max_pending_per_user) {
      return Status(ErrorCode::kResourceExhausted,
                    "user '" + job.owner + "' has " + std::to_string(pending) +
                        " jobs pending in queue '" + job.spec.queue + "'; its limit is " +
                        std::to_string(q->second.max_pending_per_user) + " (max_pending_per_user)");
    }
  }
  // Only against nodes the cluster knows: with none yet, the job waits for them.
  std::string why;
  if (!state_.nodes.empty() &&
      model_.scheduler().Admit(model_.Input(state_, job), &why) == sched::Fit::kInfeasible) {
    return InvalidArgument("job can never fit: " + why);
  }
  for (const Dependency& d : job.spec.dependencies) {
    for (JobId t : d.jobs) {
      if (!state_.jobs.count(t) && !state_.retired.count(t)) {
        return InvalidArgument("field 'dependency': job " + std::to_string(t) + " does not exist");
      }
    }
  }
  return Status::Ok();
}

Result<Job> HeadCore::Submit(const Caller& by, JobSpec spec, std::string owner, TimeMs now,
                             std::string request_id) {
  if (by.kind != Caller::Kind::kUser && by.kind != Caller::Kind::kSystem) {
    return PermissionDenied("only users submit jobs");
  }
  if (owner.empty()) owner = by.name;
  if (owner != by.name && !by.IsAdmin()) {
    return PermissionDenied("user '" + by.name + "' may not submit jobs as '" + owner + "'");
  }
  CORRAL_RETURN_IF_ERROR(CheckRequestId(request_id));
  if (!request_id.empty()) {
    if (JobId seen = indexes_.get<RequestIds>().Find(owner, request_id)) {
      return state_.jobs.at(seen);
    }
  }
  Job job;
  job.spec = std::move(spec);
  job.owner = std::move(owner);
  job.request_id = std::move(request_id);
  job.held = job.spec.hold;
  CORRAL_RETURN_IF_ERROR(ResolveDatasets(&job.spec));
  CORRAL_RETURN_IF_ERROR(CheckNewJob(by, job, now));
  job.submitted_at = now;
  job.state = JobState::kPending;
  if (job.spec.array.empty()) {
    job.id = state_.next_job_id;
    if (job.spec.IsElastic() && !job.spec.batch) AddRendezvousEnv(&job);
    Emit(by, now, JobSubmitted{job});
    if (job.spec.interactive) sessions_.Start(job.id, now);
    return state_.jobs.at(job.id);
  }
  auto array = ParseArray(job.spec.array);
  if (!array.ok()) return array.status();
  // One request, one change: every element is an ordinary job with consecutive ids.
  JobId first = state_.next_job_id;
  job.id = first;
  job.array_id = first;
  job.array_max_running = array->max_running;
  job.array_index = array->indices.front();
  Emit(by, now, ArraySubmitted{std::move(job), std::move(array->indices)});
  return state_.jobs.at(first);
}

Result<Job> HeadCore::Cancel(const Caller& by, JobId id, TimeMs now, bool element_only,
                             int32_t max_elements, bool* more) {
  if (more) *more = false;
  auto it = state_.jobs.find(id);
  if (it == state_.jobs.end()) return UnknownJob(id);
  if (!element_only && it->second.array_id == id) {
    if (!MayManageJob(by, it->second)) {
      return PermissionDenied("user '" + by.name + "' may not cancel array " + std::to_string(id) +
                              " of '" + it->second.owner + "'");
    }
    bool any = false;
    int32_t done = 0;
    for (const Job* e : DependencyTargets(id)) {
      if (IsTerminal(e->state)) continue;
      if (max_elements > 0 && done == max_elements) {
        if (more) *more = true;
        break;
      }
      ++done;
      any = true;
      if (e->state == JobState::kPending) {
        Emit(by, now, JobEnded{e->id, JobState::kCancelled, "array cancelled by " + by.name});
      } else {
        RequestStop(*e, StopCause::kCancelled, std::string(kReasonCancelled) + " by " + by.name,
                    now);
      }
    }
    if (!any) return FailedPrecondition("array " + std::to_string(id) + " already ended");
    return state_.jobs.at(id);
  }
  const Job& job = it->second;
  const bool own = by.kind == Caller::Kind::kJob && by.job == id;  // a job may end itself
  if (!own && !MayManageJob(by, job)) {
    return PermissionDenied("user '" + by.name + "' may not cancel job " + std::to_string(id) +
                            " of '" + job.owner + "'");
  }
  if (IsTerminal(job.state)) {
    return FailedPrecondition("job " + std::to_string(id) + " already " + JobStateName(job.state));
  }
  if (job.state == JobState::kPending) {
    Emit(by, now, JobEnded{id, JobState::kCancelled, "by " + by.name + " while pending"});
  } else {
    RequestStop(job, StopCause::kCancelled, std::string(kReasonCancelled) + " by " + by.name, now);
  }
  return state_.jobs.at(id);
}

Result<Job> HeadCore::Requeue(const Caller& by, JobId id, TimeMs now) {
  auto it = state_.jobs.find(id);
  if (it == state_.jobs.end()) return UnknownJob(id);
  const Job& job = it->second;
  // submitit requeues its own job from inside it (scontrol requeue $SLURM_JOB_ID).
  bool own = by.kind == Caller::Kind::kJob && by.job == id;
  if (!own && !MayManageJob(by, job)) {
    return PermissionDenied("user '" + by.name + "' may not requeue job " + std::to_string(id) +
                            " of '" + job.owner + "'");
  }
  if (IsTerminal(job.state)) {
    return FailedPrecondition("job " + std::to_string(id) + " already " + JobStateName(job.state) +
                              "; only a live job can be requeued");
  }
  if (job.state != JobState::kPending) {
    RequestStop(job, StopCause::kRequeued, std::string(kReasonRequeued) + " by " + by.name, now);
  }
  return state_.jobs.at(id);
}

Result<Job> HeadCore::Signal(const Caller& by, JobId id, int32_t signal, SignalTarget to,
                             TimeMs now) {
  auto it = state_.jobs.find(id);
  if (it == state_.jobs.end()) return UnknownJob(id);
  // srun forwards the signals it gets to its job's steps with the job's own credential.
  bool own_steps = by.kind == Caller::Kind::kJob && by.job == id && to == SignalTarget::kDefault &&
                   it->second.spec.batch;
  if (!own_steps && !MayManageJob(by, it->second)) {
    return PermissionDenied("user '" + by.name + "' may not signal job " + std::to_string(id) +
                            " of '" + it->second.owner + "'");
  }
  if (signal < 1 || signal > 64) {
    return InvalidArgument("field 'signal': got " + std::to_string(signal) +
                           ", want a signal number from 1 to 64");
  }
  // An array's id stands for its running elements.
  std::vector<const Job*> targets =
      it->second.array_id == id ? DependencyTargets(id) : std::vector<const Job*>{&it->second};
  bool any = false;
  for (const Job* t : targets) {
    const Run* run = t->CurrentRun();
    if (t->state != JobState::kRunning || !run || run->stop_requested) continue;
    // Slurm's default for a batch job: its steps, not its batch shell.
    bool replicas = to == SignalTarget::kAll || to == SignalTarget::kBatch ||
                    (to == SignalTarget::kDefault && !t->spec.batch);
    bool steps = to != SignalTarget::kBatch;
    Emit(by, now, RunSignalled{t->id, run->attempt, signal, replicas, steps});
    any = true;
  }
  if (!any) {
    return FailedPrecondition("job " + std::to_string(id) + " is " +
                              JobStateName(it->second.state) + ": only a running job is signalled");
  }
  return state_.jobs.at(id);
}

Result<Job> HeadCore::ReportCheckpoint(const Caller& by, JobId id, TimeMs now) {
  auto it = state_.jobs.find(id);
  if (it == state_.jobs.end()) return UnknownJob(id);
  const bool own = by.kind == Caller::Kind::kJob && by.job == id;  // its own credential
  if (!own && !MayManageJob(by, it->second)) return PermissionDenied("not your job");
  const Run* run = it->second.CurrentRun();
  if (!run || !active().IsActive(id)) {
    return FailedPrecondition("job " + std::to_string(id) + " has no live run");
  }
  Emit(by, now, CheckpointReported{id, run->attempt});
  return state_.jobs.at(id);
}

Result<Job> HeadCore::GetJob(const Caller& by, JobId id) const {
  // Every caller sees every job (like squeue), but a job's environment (tokens, keys) only
  // its owner and those who may manage it.
  auto it = state_.jobs.find(id);
  if (it == state_.jobs.end()) return NotFound("no job " + std::to_string(id));
  Job job = JobAsSeenBy(by, it->second);
  explained_.Explain(&job);
  prefetch_.Explain(&job);
  if (job.spec.hot_spares > 0 && active().IsActive(id)) {
    for (const ReplicaPlacement& p : model_.scheduler().HotSpares(id)) {
      job.hot_spare_nodes.push_back(p.node);
    }
  }
  if (auto i = gpus_.idle().find(id); i != gpus_.idle().end() && job.state == JobState::kRunning) {
    job.idle_since = i->second;
  }
  return job;
}

Status HeadCore::MayReadLogs(const Caller& by, const Job& job) const {
  bool own_step = by.kind == Caller::Kind::kJob && by.job == job.id;  // srun following its step
  if (!own_step && !MayManageJob(by, job)) {
    return PermissionDenied("the output of job " + std::to_string(job.id) + " is for its owner (" +
                            job.owner + ") and admins");
  }
  return Status::Ok();
}

Result<Job> HeadCore::GetJobForLogs(const Caller& by, JobId id) const {
  auto it = state_.jobs.find(id);
  if (it == state_.jobs.end()) return NotFound("no job " + std::to_string(id));
  CORRAL_RETURN_IF_ERROR(MayReadLogs(by, it->second));
  return GetJob(by, id);
}

bool FilterMatches(const JobFilter& f, const Job& j) {
  if (!f.states.empty() && !f.states.count(j.state)) return false;
  if (!f.queue.empty() && j.spec.queue != f.queue) return false;
  if (!f.user.empty() && j.owner != f.user) return false;
  if (f.array_id != 0 && j.array_id != f.array_id) return false;
  return f.ended_since <= 0 || !IsTerminal(j.state) || j.ended_at >= f.ended_since;
}

std::vector<Job> HeadCore::ListJobs(const Caller& by, const JobFilter& f) const {
  std::vector<Job> out;
  for (auto it = state_.jobs.upper_bound(f.after); it != state_.jobs.end(); ++it) {
    const Job& j = it->second;
    if (!FilterMatches(f, j)) continue;
    out.push_back(*GetJob(by, j.id));
    if (static_cast<int32_t>(out.size()) >= f.limit) break;
  }
  return out;
}

void HeadCore::Schedule(TimeMs now) {
  agenda_.schedule = false;
  sched::Decisions d = model_.scheduler().Schedule(now);
  for (const sched::PlaceDecision& p : d.place) PlaceRun(p, now);
  for (const sched::PreemptDecision& p : d.preempt) {
    auto it = state_.jobs.find(p.job);
    if (it == state_.jobs.end() || !active().IsActive(p.job)) continue;
    RequestStop(it->second, StopCause::kPreempted, std::string(kReasonPreempted) + ": " + p.reason,
                now, p.kind);
  }
  for (const sched::ResizeDecision& r : d.resize) ResizeRun(r, now);
  for (const sched::WaitReason& w : d.waiting) explained_.Waiting(w.job, {w.code, w.reason});
  PlanPrefetch(d.reservations);
  // A pass cut short by its work budget that got somewhere goes on at once, not a tick later.
  if (model_.scheduler().GetStats().last_pass_budget_exhausted &&
      (!d.place.empty() || !d.preempt.empty() || !d.resize.empty())) {
    WantSchedule();
  }
}

int32_t HeadCore::PickMasterPort(const std::string& node) const {
  int32_t lo = config_.master_port_lo, hi = config_.master_port_hi;
  if (auto n = state_.nodes.find(node); n != state_.nodes.end() && n->second.port_lo > 0) {
    lo = n->second.port_lo;
    hi = n->second.port_hi;
  }
  std::set<int32_t> used;
  for (JobId id : active().OnNode(node)) {
    const Run& r = *state_.jobs.at(id).CurrentRun();
    if (!r.placement.empty() && r.placement[0].node == node) used.insert(r.master_port);
  }
  const std::set<int32_t>& busy = node_watch_.BusyPorts(node);
  used.insert(busy.begin(), busy.end());
  for (int32_t p = lo; p <= hi; ++p) {
    if (!used.count(p)) return p;
  }
  return 0;  // range exhausted: the run starts without a rendezvous port
}

void HeadCore::PlaceRun(const sched::PlaceDecision& d, TimeMs now) {
  auto it = state_.jobs.find(d.job);
  if (it == state_.jobs.end() || it->second.state != JobState::kPending) {
    model_.scheduler().RemoveRunning(d.job);  // stale decision: give the resources back
    return;
  }
  const Job& job = it->second;
  std::vector<ReplicaPlacement> placement = d.placement;
  for (ReplicaPlacement& p : placement) p.tasks = TasksFor(job.spec, p);
  int32_t attempt = static_cast<int32_t>(job.runs.size()) + 1;
  int32_t port = placement.empty() ? 0 : PickMasterPort(placement[0].node);
  NoteLacking(job, attempt, placement);
  const std::vector<ReplicaPlacement> where = placement;
  Emit(Caller::System(), now, RunPlaced{job.id, attempt, std::move(placement), port});
  QueueStageIn(state_.jobs.at(d.job), attempt, where, now);
}

void HeadCore::RequestStop(const Job& job, StopCause cause, const std::string& reason, TimeMs now,
                           PreemptKind preempt) {
  const Run* run = job.CurrentRun();
  if (!run || run->stop_requested || IsRunOver(run->state)) return;
  Emit(Caller::System(), now, StopRequested{job.id, run->attempt, reason, cause, preempt});
}

namespace {

// Why a replica that ended unrecorded stops its run, if it does: it could not start, its
// stage-out failed (what it made is not where it belongs) or it ran out of memory.
std::optional<std::pair<StopCause, std::string>> ReplicaFailure(const std::string& node,
                                                                const RunReport& r) {
  const std::string replica = "replica " + std::to_string(r.replica) + " on node " + node;
  if (!r.error.empty()) {
    return std::pair{StopCause::kCannotStart,
                     std::string(kReasonCannotStart) + " " + replica + ": " + r.error};
  }
  if (!r.stage_out.error.empty()) {
    return std::pair{StopCause::kFailed, DescribeStageOut(r.stage_out, node)};
  }
  if (r.oom_killed) {
    return std::pair{StopCause::kOutOfMemory, std::string(kReasonOutOfMemory) + ": " + replica +
                                                  " exceeded its memory limit"};
  }
  return std::nullopt;
}

}  // namespace

void HeadCore::OnReplicaReport(const Job& job, const std::string& node, const RunReport& r,
                               TimeMs now) {
  const Run& run = *job.CurrentRun();
  if (r.replica < 0 || r.replica >= static_cast<int32_t>(run.placement.size()) ||
      run.placement[r.replica].node != node) {
    return;
  }
  RecordUsage(job, node, r, now);
  if (IsRunOver(run.state)) return;
  if (r.staging && r.running && r.started_at <= 0) {  // its datasets: the note is its reason
    if (run.state == RunState::kScheduled) explained_.Staging(job.id, r.note);
    return;
  }
  // Started, and staging: its processes have ended and its stage-out copies. It stays running
  // (its GPUs held) and its note says how far, as its reason, never an event.
  const bool staging_out = r.staging && r.running;
  if (staging_out) {
    explained_.Staging(job.id, r.note);
  } else {
    explained_.StagingDone(job.id);
  }
  if (run.state == RunState::kScheduled) {
    const TimeMs started_at = r.started_at ? r.started_at : now;
    MeasureStageIn(job, node, started_at, now);
    Emit(Caller::Node(node), now, RunStarted{job.id, run.attempt, started_at});
  }
  for (auto& [what, note] : NewNotes(state_.jobs.at(job.id), staging_out ? "" : r.note)) {
    Emit(Caller::Node(node), now, RunNoted{job.id, run.attempt, what, std::move(note)});
  }
  if (run.Departed(r.replica)) {  // it left an elastic run: only its exit is recorded
    if (!r.running && run.exit_codes[r.replica] == kNotExited) {
      Emit(Caller::Node(node), now,
           ReplicaExited{job.id, run.attempt, r.replica, r.exit_code, -1, r.peak_memory_bytes,
                         r.cpu_ms});
      MaybeFinishRun(state_.jobs.at(job.id), now);
    }
    return;
  }
  const bool ended_unrecorded =
      !r.running && run.exit_codes[r.replica] == kNotExited && !run.stop_requested;
  if (ended_unrecorded) {
    if (std::optional<std::string> loss = LossOfReplica(state_, run, node, r)) {
      FinishRun(job, RunState::kLost, *loss, now);
      return;
    }
    if (std::optional<std::pair<StopCause, std::string>> why = ReplicaFailure(node, r)) {
      RequestStop(job, why->first, why->second, now);
    }
  }
  if (!r.running && run.exit_codes[r.replica] == kNotExited) {
    if (r.stage_out.done) {  // the job's record keeps what its stage-out did, once
      Emit(Caller::Node(node), now,
           RunNoted{job.id, run.attempt,
                    r.stage_out.error.empty() ? "staged out" : "stage-out failed",
                    DescribeStageOut(r.stage_out, node)});
    }
    int32_t task = r.exit_code == 0 ? -1 : std::max(0, r.failed_task);
    Emit(Caller::Node(node), now,
         ReplicaExited{job.id, run.attempt, r.replica, r.exit_code, task, r.peak_memory_bytes,
                       r.cpu_ms});
    const Run& after = *state_.jobs.at(job.id).CurrentRun();
    if (job.spec.batch && r.replica == 0 && !after.stop_requested && after.placement.size() > 1) {
      // The batch script is the job; the other replicas only held their nodes for it.
      RequestStop(
          state_.jobs.at(job.id), r.exit_code == 0 ? StopCause::kCompleted : StopCause::kFailed,
          "the batch script (replica 0) ended with code " + std::to_string(r.exit_code), now);
    } else if (r.exit_code != 0 && !after.stop_requested && after.placement.size() > 1) {
      RequestStop(state_.jobs.at(job.id), StopCause::kFailed,
                  TaskName(after.placement[r.replica], r.replica, task) + " exited with code " +
                      std::to_string(r.exit_code) + "; stopping the gang",
                  now);
    }
    MaybeFinishRun(state_.jobs.at(job.id), now);
  }
}

void HeadCore::RecordUsage(const Job& job, const std::string& node, const RunReport& r,
                           TimeMs now) {
  if (r.usage.empty()) return;
  const Run& run = *job.CurrentRun();
  int64_t held = 0;
  for (const ReplicaUsage& u : run.usage) {
    if (u.replica == r.replica) held = u.last_seq;
  }
  std::vector<UsagePoint> fresh = UsageAfter(r.usage, held);
  if (fresh.empty()) return;
  std::sort(fresh.begin(), fresh.end(),
            [](const UsagePoint& a, const UsagePoint& b) { return a.seq < b.seq; });
  Emit(Caller::Node(node), now, RunUsageSampled{job.id, run.attempt, r.replica, std::move(fresh)});
}

void HeadCore::MaybeFinishRun(const Job& job, TimeMs now) {
  const Run& run = *job.CurrentRun();
  if (IsRunOver(run.state)) return;
  // Replicas an elastic run gave up neither keep it going nor decide how it ended.
  bool all_zero = true;
  for (size_t i = 0; i < run.exit_codes.size(); ++i) {
    if (run.Departed(static_cast<int32_t>(i))) continue;
    if (run.exit_codes[i] == kNotExited) return;
    all_zero &= run.exit_codes[i] == 0;
  }
  if (job.spec.batch) all_zero = run.exit_codes[0] == 0 && run.failed_replica <= 0;
  if (run.stop_requested &&
      (run.cause == StopCause::kPreempted || run.cause == StopCause::kRequeued)) {
    FinishRun(job, RunState::kPreempted, "", now);  // a requeue: back to pending, no restart spent
  } else if (run.stop_requested && run.cause == StopCause::kCancelled) {
    FinishRun(job, RunState::kCancelled, "", now);
  } else if (run.stop_requested && run.cause == StopCause::kGpuError) {
    FinishRun(job, RunState::kFailed, run.reason, now);
  } else if (run.stop_requested && run.cause == StopCause::kFailed && all_zero) {
    FinishRun(job, RunState::kFailed, run.reason, now);  // exits 0, failed otherwise: stage-out
  } else if (all_zero) {
    FinishRun(job, RunState::kSucceeded, "", now);
  } else {
    FinishRun(job, RunState::kFailed, "", now);
  }
}

void HeadCore::FinishRun(const Job& job, RunState state, const std::string& reason, TimeMs now,
                         std::optional<JobState> next_state) {
  const Run& run = *job.CurrentRun();
  // The job's exit code: the replica that failed first, else the first that did not exit 0.
  int32_t first_failure = 0;
  if (run.failed_replica >= 0) {
    first_failure = run.exit_codes[run.failed_replica];
  } else if (job.spec.batch && !run.exit_codes.empty() && run.exit_codes[0] != kNotExited) {
    first_failure = run.exit_codes[0];  // the holders' codes say nothing about the job
  } else {
    for (size_t i = 0; i < run.exit_codes.size(); ++i) {
      const int32_t code = run.exit_codes[i];
      if (code != 0 && code != kNotExited && !run.Departed(static_cast<int32_t>(i))) {
        first_failure = code;
        break;
      }
    }
  }
  int32_t failed_runs = 1;  // this one, if it failed
  for (const Run& r : job.runs) failed_runs += r.state == RunState::kFailed;
  // A lost session ends, never requeued (as Slurm's srun): its command died with its node.
  const bool session_lost = state == RunState::kLost && job.spec.interactive && !next_state;
  std::string why = reason + (session_lost ? "; an interactive session is not requeued" : "");
  if (why.empty() && state == RunState::kFailed &&
      (run.cause == StopCause::kCannotStart || run.cause == StopCause::kOutOfMemory)) {
    why = run.reason;
  } else if (why.empty() && state == RunState::kFailed && run.failed_replica >= 0) {
    why = TaskName(run.placement[run.failed_replica], run.failed_replica, run.failed_task) +
          " exited with code " + std::to_string(first_failure);
  } else if (why.empty() && state == RunState::kFailed && run.reason.empty()) {
    why = first_failure < 0 ? "killed by signal " + std::to_string(-first_failure)
                            : "exit code " + std::to_string(first_failure);
  }
  JobState next = JobState::kFailed;
  switch (state) {
    case RunState::kSucceeded:
      next = JobState::kSucceeded;
      break;
    case RunState::kCancelled:
      next = JobState::kCancelled;
      break;
    case RunState::kPreempted:
    case RunState::kLost:  // neither counts against the job's restarts
      next = session_lost ? JobState::kFailed : JobState::kPending;
      break;
    default:
      next = failed_runs <= job.spec.max_restarts ? JobState::kPending : JobState::kFailed;
      break;
  }
  if (next_state) next = *next_state;
  JobId id = job.id;
  Emit(Caller::System(), now,
       RunEnded{id, run.attempt, state, why, next, first_failure, RunEndCause(state, run.cause)});
  // A draining node whose last run ended is drained.
  for (const ReplicaPlacement& p : state_.jobs.at(id).CurrentRun()->placement) {
    auto n = state_.nodes.find(p.node);
    if (n != state_.nodes.end() && n->second.drain == Drain::kDraining &&
        active().OnNode(p.node).empty()) {
      SetDrainState(p.node, Drain::kDrained, "drained: its last run ended", now);
    }
  }
}

void HeadCore::EnforceTimeLimits(TimeMs now) {
  std::vector<JobId> over;
  for (JobId id : active().jobs()) {
    const Job& job = state_.jobs.at(id);
    const Run& run = *job.CurrentRun();
    // Killed once it has run its limit (Slurm's TimeLimit is the longest a job may run).
    if (job.spec.time_limit_ms > 0 && run.started_at > 0 && !run.stop_requested &&
        now - run.started_at >= job.spec.time_limit_ms) {
      over.push_back(id);
    }
  }
  for (JobId id : over) {
    const Job& job = state_.jobs.at(id);
    RequestStop(
        job, StopCause::kTimeLimit,
        std::string(kReasonTimeLimit) + " " + FormatDuration(job.spec.time_limit_ms) + " exceeded",
        now);
  }
}

void HeadCore::ExpireStops(TimeMs now) {
  std::vector<JobId> overdue;
  for (JobId id : active().jobs()) {
    const Job& job = state_.jobs.at(id);
    const Run& run = *job.CurrentRun();
    if (run.stop_requested &&
        now - run.stop_requested_at > job.spec.grace_ms + config_.stop_confirm_after_ms) {
      overdue.push_back(id);
    }
  }
  for (JobId id : overdue) {
    const Job& job = state_.jobs.at(id);
    const Run& run = *job.CurrentRun();
    // What the stop was for still decides what becomes of the job: a cancelled job is not
    // brought back by its run's loss, a preempted one is requeued as it would have been.
    std::optional<JobState> next;
    if (run.cause == StopCause::kCancelled) {
      next = JobState::kCancelled;
    } else if (run.cause != StopCause::kPreempted && run.cause != StopCause::kRequeued) {
      int32_t failed_runs = 1;
      for (const Run& r : job.runs) failed_runs += r.state == RunState::kFailed;
      next = failed_runs <= job.spec.max_restarts ? JobState::kPending : JobState::kFailed;
    }
    FinishRun(job, RunState::kLost,
              "its stop (" + run.reason + ") was not confirmed by its node within " +
                  FormatDuration(job.spec.grace_ms + config_.stop_confirm_after_ms) +
                  "; declared lost, its GPUs freed",
              now, next);
  }
}

Status HeadCore::CheckUserLimits(const JobSpec& spec, const std::string& owner) const {
  int64_t adding = 1;
  if (!spec.array.empty()) {
    auto a = ParseArray(spec.array);
    if (!a.ok()) return a.status();
    adding = static_cast<int64_t>(a->indices.size());
    if (config_.max_array_size > 0 && adding > config_.max_array_size) {
      return InvalidArgument("field 'array': " + std::to_string(adding) +
                             " elements, more than one submission may have (" +
                             std::to_string(config_.max_array_size) +
                             ", the head's --max-array-size)");
    }
  }
  if (config_.max_pending_per_user > 0) {
    int64_t pending = 0;
    for (const auto& [key, n] : indexes_.get<PendingCounts>().all()) {
      if (key.second == owner) pending += n;
    }
    if (pending + adding > config_.max_pending_per_user) {
      return Status(ErrorCode::kResourceExhausted,
                    "user '" + owner + "' has " + std::to_string(pending) +
                        " jobs pending; adding " + std::to_string(adding) + " would pass " +
                        std::to_string(config_.max_pending_per_user) +
                        " (the head's --max-pending-per-user)");
    }
  }
  return Status::Ok();
}

Result<Job> HeadCore::UpdateJob(const Caller& by, JobId id, const JobUpdate& update, TimeMs now) {
  auto it = state_.jobs.find(id);
  if (it == state_.jobs.end()) return UnknownJob(id);
  const Job& job = it->second;
  if (!MayManageJob(by, job)) {
    return PermissionDenied("user '" + by.name + "' may not update job " + std::to_string(id) +
                            " of '" + job.owner + "'");
  }
  if (job.state != JobState::kPending) {
    return FailedPrecondition("job " + std::to_string(id) + " is " + JobStateName(job.state) +
                              ": only a pending job's time limit, priority and queue may be "
                              "updated");
  }
  auto spec = UpdatedSpec(by, job, update, now);
  if (!spec.ok()) return spec.status();
  if (spec->time_limit_ms != job.spec.time_limit_ms || spec->priority != job.spec.priority ||
      spec->queue != job.spec.queue) {
    Emit(by, now, JobUpdated{id, spec->time_limit_ms, spec->priority, spec->queue, job.spec.queue});
  }
  return state_.jobs.at(id);
}

Result<JobSpec> HeadCore::UpdatedSpec(const Caller& by, const Job& job, const JobUpdate& u,
                                      TimeMs now) const {
  JobSpec spec = job.spec;
  const std::string id = std::to_string(job.id);
  auto ms = [](DurationMs d) { return d > 0 ? std::to_string(d) + " ms" : std::string("none"); };
  if (u.time_limit_ms) {
    const DurationMs from = job.spec.time_limit_ms, to = *u.time_limit_ms;
    if (to < 0) {
      return InvalidArgument("field 'time_limit_ms': got " + std::to_string(to) +
                             ", want 0 (none) or more");
    }
    if (from > 0 && (to == 0 || to > from) && !by.IsAdmin()) {  // Slurm: users only lower it
      return PermissionDenied("field 'time_limit_ms': only an admin may raise job " + id +
                              "'s time limit (from " + ms(from) + " to " + ms(to) + ")");
    }
    spec.time_limit_ms = to;
  }
  if (u.priority) {
    if (*u.priority > job.spec.priority && !by.IsAdmin()) {
      return PermissionDenied("field 'priority': only an admin may raise job " + id +
                              "'s priority (from " + std::to_string(job.spec.priority) + " to " +
                              std::to_string(*u.priority) + ")");
    }
    spec.priority = *u.priority;
  }
  if (u.queue && *u.queue != job.spec.queue) {
    if (u.queue->empty()) return InvalidArgument("field 'queue': got \"\", want a queue's name");
    spec.queue = *u.queue;
    CORRAL_RETURN_IF_ERROR(CheckQueueAccess(state_.queues, by, spec.queue));
    CORRAL_RETURN_IF_ERROR(CheckGrace(state_.queues, spec));
    CORRAL_RETURN_IF_ERROR(CheckGpuShare(spec));
    CORRAL_RETURN_IF_ERROR(CheckQueueRoom(spec, job.owner));
  }
  // A lower priority is always the user's to choose (Slurm's rule); in another queue the job's
  // priority must be one its QoS there allows.
  if (spec.queue != job.spec.queue) CORRAL_RETURN_IF_ERROR(CheckPriority(by, spec, job.owner));
  CORRAL_RETURN_IF_ERROR(CheckReservation(spec, job.owner, now));
  return spec;
}

Status HeadCore::CheckQueueRoom(const JobSpec& spec, const std::string& owner) const {
  auto q = state_.queues.find(spec.queue);
  if (q == state_.queues.end()) return Status::Ok();
  const int32_t total_gpus = spec.replicas * spec.per_replica.WholeGpus();
  if (q->second.limit_gpus >= 0 && total_gpus > q->second.limit_gpus) {
    return InvalidArgument("field 'queue': the job needs " + std::to_string(total_gpus) +
                           " GPUs, more than queue '" + spec.queue + "' may ever use (limit " +
                           std::to_string(q->second.limit_gpus) + ")");
  }
  const int32_t max = q->second.max_pending_per_user;
  if (max > 0 && indexes_.get<PendingCounts>().Of(spec.queue, owner) + 1 > max) {
    return Status(ErrorCode::kResourceExhausted,
                  "field 'queue': user '" + owner + "' has " +
                      std::to_string(indexes_.get<PendingCounts>().Of(spec.queue, owner)) +
                      " jobs pending in queue '" + spec.queue + "'; its limit is " +
                      std::to_string(max) + " (max_pending_per_user)");
  }
  return Status::Ok();
}

}  // namespace corral::head
