// The head core's bookkeeping: its indexes and components kept in step with each change,
// recovery, queues, and identities.
#include <vector>

#include "core/queue_tree.h"
#include "core/spec.h"
#include "head/head_core.h"
#include "head/service_guarantee.h"
#include "head/tokens.h"

namespace corral::head {
// What the core itself follows of a change: admission, the orders to each node, the
// explanations. The scheduler's model follows it after (SchedulerModel::Apply).
struct HeadCore::ChangeFollower {
  HeadCore& core;
  const Change& c;
  void operator()(const HeadStarted&) { core.node_watch_.NewEpoch(core.state_); }
  void operator()(const JobSubmitted& e) { core.AdmitPending(core.state_.jobs.at(e.job->id)); }
  void operator()(const ArraySubmitted& e) {
    for (size_t i = 0; i < e.size(); ++i) core.AdmitPending(core.state_.jobs.at(e.job->id + i));
  }
  void operator()(const RunPlaced& e) {
    core.explained_.Admitted(e.job);
    for (const ReplicaPlacement& p : e.placement) core.Bump(p.node, e.job);
  }
  void operator()(const ReplicaExited& e) {
    const corral::Run& run = core.state_.jobs.at(e.job).runs[e.attempt - 1];
    core.Bump(run.placement[e.replica].node, e.job);
  }
  // Every node of the run gets new orders.
  void BumpRun(JobId job, int32_t attempt) {
    for (const ReplicaPlacement& p : core.state_.jobs.at(job).runs[attempt - 1].placement) {
      core.Bump(p.node, job);
    }
  }
  void operator()(const StopRequested& e) { BumpRun(e.job, e.attempt); }
  void operator()(const RunEnded& e) {
    BumpRun(e.job, e.attempt);
    if (e.job_state == JobState::kPending) return;  // a requeue stays admitted (the model's)
    const corral::Job& job = core.state_.jobs.at(e.job);
    core.admission_.Release(job);
    core.admission_.OnEnded(job);
  }
  void operator()(const JobEnded& e) {
    const corral::Job& job = core.state_.jobs.at(e.job);
    if (core.admission_.Withdraw(job)) core.model_.Unqueue(e.job);
    core.explained_.Ended(e.job);
    core.admission_.OnEnded(job);
    core.WantSchedule();
  }
  void operator()(const RunSignalled& e) { BumpRun(e.job, e.attempt); }
  void operator()(const JobHoldSet& e) { Readmit(e.job); }
  // The scheduler takes the job's new limit, priority and queue as it takes a release.
  void operator()(const JobUpdated& e) { Readmit(e.job); }
  void Readmit(JobId id) {
    const corral::Job& job = core.state_.jobs.at(id);
    if (job.state != JobState::kPending) return;
    // Out of whatever held or admitted it, then admitted again: AdmitPending now sees the
    // user hold (or its absence) first.
    if (core.admission_.Withdraw(job)) core.model_.Unqueue(id);
    core.explained_.Admitted(id);
    core.AdmitPending(job);
    core.WantSchedule();
  }
  void operator()(const StepStarted& e) {
    const Run& run = core.state_.jobs.at(e.job).runs[e.attempt - 1];
    for (int32_t r : e.step.replicas) core.Bump(run.placement[r].node, e.job);
  }
  void operator()(const StepExited& e) {
    const Run& run = core.state_.jobs.at(e.job).runs[e.attempt - 1];
    core.Bump(run.placement[run.steps[e.step].replicas[e.index]].node, e.job);
  }
  // Every node of the run gets new orders: replicas added start, replicas removed stop.
  void operator()(const JobResized& e) { BumpRun(e.job, e.attempt); }
  void operator()(const CheckpointReported& e) {
    // During a stop's grace it ends the grace (ReplicaOrder): the nodes get new orders.
    const Run& run = core.state_.jobs.at(e.job).runs[e.attempt - 1];
    if (run.stop_requested) BumpRun(e.job, e.attempt);
  }
  void operator()(const NodeRegistered& e) {
    core.node_watch_.Registered(e.node.name, core.state_.epoch, c.at);
    core.BumpAll(e.node.name);
  }
  void operator()(const NodeRemoved& e) { core.ForgetNode(e.node); }
  void operator()(const QosSet&) { core.RefreshPendingInputs(); }
  void operator()(const QosDeleted&) { core.RefreshPendingInputs(); }
  void operator()(const JobsRetired& e) { core.OnRetired(e); }
  // Nothing else here: queues, reservations and nodes' states are the model's, tokens,
  // datasets and services the indexes'.
  template <typename Other>
  void operator()(const Other&) {}
};

void HeadCore::Index(const Change& c) {
  MarkDirty(c);
  indexes_.Apply(state_, c);
  autoscaler_.Apply(state_, c);
  std::visit(ChangeFollower{*this, c}, c.what);
  if (model_.Apply(state_, c, node_watch_.dataset_holders())) WantSchedule();
}

void HeadCore::MarkDirty(const Change& c) {
  struct Visitor {
    Dirty& d;
    void operator()(const HeadStarted&) { d.meta = true; }
    void operator()(const JobSubmitted& e) {
      d.jobs.insert(e.job->id);
      d.meta = true;  // next_job_id
    }
    void operator()(const ArraySubmitted& e) {
      for (size_t i = 0; i < e.size(); ++i) d.jobs.insert(d.jobs.end(), e.job->id + i);
      d.meta = true;
    }
    void operator()(const RunPlaced& e) { d.jobs.insert(e.job); }
    void operator()(const RunStarted& e) { d.jobs.insert(e.job); }
    void operator()(const ReplicaExited& e) { d.jobs.insert(e.job); }
    void operator()(const StopRequested& e) { d.jobs.insert(e.job); }
    void operator()(const RunEnded& e) { d.jobs.insert(e.job); }
    void operator()(const JobEnded& e) { d.jobs.insert(e.job); }
    void operator()(const CheckpointReported& e) { d.jobs.insert(e.job); }
    void operator()(const RunNoted& e) { d.jobs.insert(e.job); }
    void operator()(const RunUsageSampled& e) { d.jobs.insert(e.job); }
    void operator()(const JobResized& e) { d.jobs.insert(e.job); }
    void operator()(const IdleWarned& e) { d.jobs.insert(e.job); }
    void operator()(const StepStarted& e) { d.jobs.insert(e.job); }
    void operator()(const JobHoldSet& e) { d.jobs.insert(e.job); }
    void operator()(const JobUpdated& e) { d.jobs.insert(e.job); }
    void operator()(const RunSignalled& e) { d.jobs.insert(e.job); }
    void operator()(const JobsRetired& e) {
      // Its row is current (a job is retired only once it is), and the change's own commit
      // marks it retired (EditLog::Append).
      for (JobId id : e.jobs) d.jobs.erase(id);
    }
    void operator()(const StepExited& e) { d.jobs.insert(e.job); }
    void operator()(const NodeRegistered& e) {
      d.nodes.insert(e.node.name);
      d.credentials = true;
    }
    void operator()(const NodeLivenessSet& e) { d.nodes.insert(e.node); }
    void operator()(const NodeRemoved& e) {
      d.nodes.insert(e.node);  // no longer in the state: its row is deleted
      d.credentials = true;
    }
    void operator()(const NodeDrainSet& e) { d.nodes.insert(e.node); }
    void operator()(const NodeHealthSet& e) { d.nodes.insert(e.node); }
    void operator()(const GpuDrainSet& e) { d.nodes.insert(e.node); }
    void operator()(const QueueSet& e) { d.queues.insert(e.queue.name); }
    void operator()(const QosSet&) { d.qos = true; }
    void operator()(const QosDeleted&) { d.qos = true; }
    void operator()(const ReservationSet&) { d.reservations = true; }
    void operator()(const ReservationDeleted&) { d.reservations = true; }
    void operator()(const DatasetAdded&) { d.datasets = true; }
    void operator()(const DatasetRemoved&) { d.datasets = true; }
    void operator()(const SourceRateMeasured&) { d.datasets = true; }
    void operator()(const SourceLimitSet&) { d.datasets = true; }
    void operator()(const StageInQueued&) { d.datasets = true; }
    void operator()(const StageInAdmitted&) { d.datasets = true; }
    void operator()(const ServiceCreated&) { d.services = true; }
    void operator()(const ServiceUpdated&) { d.services = true; }
    void operator()(const ServiceRemoved&) { d.services = true; }
    void operator()(const ServiceRolloutStarted&) { d.services = true; }
    void operator()(const ServiceRolloutEnded&) { d.services = true; }
    void operator()(const ServiceReplicaMarked&) { d.services = true; }
    void operator()(const ServiceScaled&) { d.services = true; }
    void operator()(const TokenIssued&) { d.credentials = true; }
    void operator()(const TokenRevoked&) { d.credentials = true; }
  };
  std::visit(Visitor{dirty_}, c.what);
  // The line of stage-ins also loses runs by their own changes (a start, an end).
  if (state_.datasets.budget_version() != budget_version_seen_) {
    budget_version_seen_ = state_.datasets.budget_version();
    dirty_.datasets = true;
  }
}

Json HeadCore::DerivedSummary() const {
  auto ids = [](const auto& set) {
    Json a = Json::array();
    for (const auto& x : set) a.push_back(x);
    return a;
  };
  Json node_runs = Json::object();
  for (const auto& [node, jobs] : indexes_.get<ActiveRuns>().by_node()) node_runs[node] = ids(jobs);
  Json pending = Json::array();
  for (const auto& [key, n] : indexes_.get<PendingCounts>().all()) {
    pending.push_back(Json{key.first, key.second, n});
  }
  Json requests = Json::array();
  for (const auto& [key, id] : indexes_.get<RequestIds>().all()) {
    requests.push_back(Json{key.first, key.second, id});
  }
  Json elastic = Json::object();
  for (const auto& [id, e] : indexes_.get<ElasticSizes>().all()) {
    elastic[std::to_string(id)] = Json{e.attempt, e.min, e.max, e.current, e.resizes};
  }
  return Json{{"elastic", elastic},
              {"node_runs", node_runs},
              {"active", ids(indexes_.get<ActiveRuns>().jobs())},
              {"pending_count", pending},
              {"requests", requests},
              {"admission", admission_.Summary()},
              {"services", services().Summary()},
              {"scheduler", model_.scheduler().ModelSummary()}};
}

Status HeadCore::Recover(ClusterState snapshot, const std::vector<Change>& tail, TimeMs now) {
  state_ = std::move(snapshot);
  for (const Change& c : tail) {
    if (c.revision <= state_.revision) {  // a warm state holds it already
      MarkDirty(c);
      continue;
    }
    if (c.revision != state_.revision + 1) {
      return Internal("change log has a gap: revision " + std::to_string(c.revision) + " after " +
                      std::to_string(state_.revision));
    }
    ApplyChange(state_, c);
    MarkDirty(c);  // not in the snapshot rows yet: the next snapshot must write it
  }
  RebuildIndexes(now);
  return Status::Ok();
}

void HeadCore::RebuildIndexes(TimeMs now) {
  indexes_.Rebuild(state_, now);
  // What follows is not an index but a decision or an observation: the scheduler's model and
  // the holds (admission decides which pending jobs it sees), orders to agents (versions start
  // afresh each epoch), and liveness and session clocks (a new leadership restarts them).
  node_watch_.Rebuild(state_, now);
  explained_.Clear();
  admission_ = {};
  sessions_.Rebuild(state_, now);
  autoscaler_.Rebuild(state_, now);
  for (const auto& [id, job] : state_.jobs) {
    if (job.state == JobState::kScheduled || job.state == JobState::kRunning) {
      admission_.CountAdmitted(job);
    }
  }
  model_.Rebuild(state_, now, node_watch_.dataset_holders(), [this](const Job& job) {
    // A requeued job was admitted before; only one that never ran waits again for room.
    if (!job.runs.empty()) {
      admission_.CountAdmitted(job);
      return true;
    }
    return Admit(job);
  });
  WantSchedule();
}

void HeadCore::Start(TimeMs now, const std::string& new_step_key) {
  Emit(Caller::System(), now,
       HeadStarted{state_.epoch + 1, state_.step_key.empty() ? new_step_key : ""});
  if (!state_.queues.count("default")) {
    Emit(Caller::System(), now, QueueSet{QueueConfig{"default", 0, -1, 1.0}});
  }
  WantSchedule();
}

CoreOutput HeadCore::TakeOutput() {
  CoreOutput o = std::move(out_);
  out_ = {};
  return o;
}

HeadCore::Dirty HeadCore::TakeDirty() {
  Dirty d = std::move(dirty_);
  dirty_ = {};
  return d;
}

// --- queues ---

std::vector<QueueView> HeadCore::ListQueues() const {
  std::map<std::string, QueueView> views;
  for (const auto& [name, q] : state_.queues) views[name].config = q;
  for (const auto& [id, job] : state_.jobs) {
    if (IsTerminal(job.state)) continue;
    QueueView& v = views[job.spec.queue];
    if (v.config.name.empty()) v.config = {job.spec.queue, 0, -1, 1.0};
    if (job.state == JobState::kPending) {
      ++v.pending;
    } else {
      ++v.running;
      // An elastic run holds what it holds now, not its maximum.
      const Run* run = job.CurrentRun();
      const int32_t replicas = job.spec.IsElastic() && run
                                   ? static_cast<int32_t>(run->HeldPlacement().size())
                                   : job.spec.replicas;
      v.used_gpus += replicas * job.spec.per_replica.WholeGpus();
    }
  }
  std::vector<QueueView> out;
  for (auto& [name, v] : views) out.push_back(std::move(v));
  return out;
}

Result<QueueConfig> HeadCore::SetQueue(const Caller& by, QueueConfig q, TimeMs now) {
  bool allowed = by.IsAdmin();
  if (by.kind == Caller::Kind::kUser && by.role == Role::kQueueAdmin) {
    for (const std::string& mine : by.queues) {
      allowed |= q.name == mine || q.name.rfind(mine + "/", 0) == 0;
    }
  }
  if (!allowed)
    return PermissionDenied("user '" + by.name + "' may not set queue '" + q.name + "'");
  CORRAL_RETURN_IF_ERROR(ValidateQueue(q));
  CORRAL_RETURN_IF_ERROR(ValidateQuotaInTree(q, state_.queues));
  CORRAL_RETURN_IF_ERROR(CheckQueueKeepsGuarantees(q, state_.services));
  Emit(by, now, QueueSet{q});
  return q;
}

// --- identities ---

Result<Caller> HeadCore::Authenticate(const std::string& bearer, TimeMs now) const {
  if (bearer.empty()) return Unauthenticated("missing bearer token");
  if (auto step = AuthenticateStep(bearer)) return *step;
  auto it = state_.credentials.find(Sha256Hex(bearer));
  if (it == state_.credentials.end()) return Unauthenticated("invalid or revoked token");
  if (it->second.expires_at > 0 && now >= it->second.expires_at) {
    return Unauthenticated("token " + it->second.id + " expired");
  }
  return it->second.who;
}

bool HeadCore::HasCredentialFor(Caller::Kind kind, Role role) const {
  for (const auto& [hash, c] : state_.credentials) {
    if (c.who.kind == kind && (kind != Caller::Kind::kUser || c.who.role == role)) return true;
  }
  return false;
}

Result<Credential> HeadCore::IssueToken(const Caller& by, const TokenRequest& req,
                                        const std::string& secret, TimeMs now) {
  if (!by.IsAdmin()) return PermissionDenied("creating tokens needs an admin");
  Credential c;
  c.hash = Sha256Hex(secret);
  c.id = "t-" + c.hash.substr(0, 8);
  c.created_at = now;
  c.expires_at = req.expires_after_ms > 0 ? now + req.expires_after_ms : 0;
  if (req.user == "@join") {
    c.who = Caller{Caller::Kind::kJoin, "join", Role::kUser, {}};
  } else {
    if (req.user.empty()) return InvalidArgument("field 'user': a token needs a user name");
    c.who = Caller::User(req.user, req.role);
    c.who.queues = req.queues;
    c.who.groups = req.groups;
  }
  Emit(by, now, TokenIssued{c});
  return c;
}

Result<Credential> HeadCore::RevokeToken(const Caller& by, const std::string& id, TimeMs now) {
  if (!by.IsAdmin()) return PermissionDenied("revoking tokens needs an admin");
  for (const auto& [hash, c] : state_.credentials) {
    if (c.id == id) {
      Credential copy = c;
      Emit(by, now, TokenRevoked{id});
      return copy;
    }
  }
  return NotFound("no token " + id);
}

std::vector<Credential> HeadCore::ListTokens(const Caller& by) const {
  std::vector<Credential> out;
  for (const auto& [hash, c] : state_.credentials) {
    if (by.IsAdmin() || (c.who.kind == Caller::Kind::kUser && c.who.name == by.name)) {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace corral::head
