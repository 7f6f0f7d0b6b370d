// The head core's side of the agent protocol (DESIGN §7): registration, reports,
// each node's desired runs, liveness, drain, and each run's environment (DESIGN §8).
#include <algorithm>
#include <set>

#include "core/spec.h"
#include "core/task_env.h"
#include "head/head_core.h"
#include "head/tokens.h"

namespace corral::head {

void HeadCore::Bump(const std::string& node, JobId job) {
  node_watch_.Changed(node, job);
  out_.nodes_to_notify.insert(node);
}

void HeadCore::BumpAll(const std::string& node) {
  node_watch_.ChangedAll(node);
  out_.nodes_to_notify.insert(node);
}

void HeadCore::SetLiveness(const std::string& node, Liveness liveness, const std::string& reason,
                           TimeMs now) {
  Emit(Caller::System(), now, NodeLivenessSet{node, liveness, reason});
}

void HeadCore::SetDrainState(const std::string& node, Drain drain, const std::string& reason,
                             TimeMs now) {
  Emit(Caller::System(), now, NodeDrainSet{node, drain, reason});
}

Result<RegisterResponse> HeadCore::Register(const Caller& by, RegisterRequest req,
                                            const std::string& secret, TimeMs now) {
  // A node registers again with its own credential (rotating it); only the join token or an
  // admin may register a name for the first time or in another node's stead.
  const bool own = by.kind == Caller::Kind::kNode && by.name == req.name;
  if (by.kind != Caller::Kind::kJoin && !by.IsAdmin() && !own) {
    return PermissionDenied(by.kind == Caller::Kind::kNode
                                ? "node " + by.name + "'s credential registers only node " +
                                      by.name + ", not '" + req.name + "'"
                                : "registering a node needs the join token");
  }
  if (req.name.empty()) return InvalidArgument("field 'name': the node needs a name");
  if (req.protocol < kMinAgentProtocol) {
    return FailedPrecondition("field 'protocol': agent " + req.name + " speaks protocol version " +
                              std::to_string(req.protocol) + ", too old for this head (version " +
                              std::to_string(kAgentProtocol) + ", needs at least " +
                              std::to_string(kMinAgentProtocol) + "): upgrade the agent");
  }
  Node n;
  if (auto it = state_.nodes.find(req.name); it != state_.nodes.end()) n = it->second;
  n.name = req.name;
  n.address = req.address;
  n.cpu_milli = req.cpu_milli;
  n.memory_mb = req.memory_mb;
  n.gpus = req.gpus;
  n.labels = req.labels;
  if (req.port_lo > 0 && req.port_hi >= req.port_lo && req.port_hi <= 65535) {
    n.port_lo = req.port_lo;
    n.port_hi = req.port_hi;
  }
  if (!n.gpus.empty() && !n.labels.count("gpu_model")) n.labels["gpu_model"] = n.gpus[0].model;
  n.liveness = Liveness::kAlive;  // its drain stays what the operator made it
  n.agent_epoch += 1;
  n.registered_at = now;
  n.unhealthy.clear();         // its GPUs were just probed afresh; the next sync reports any fault
  gpus_.ForgetChecks(n.name);  // a new agent counts its checks from 1
  n.last_heartbeat = 0;
  Credential cred;
  cred.hash = Sha256Hex(secret);
  cred.id = "n-" + cred.hash.substr(0, 8);
  cred.who = Caller::Node(n.name);
  cred.created_at = now;
  uint64_t agent_epoch = n.agent_epoch;
  Emit(by, now, NodeRegistered{std::move(n), std::move(cred)});
  return RegisterResponse{secret, state_.epoch, agent_epoch};
}

Result<bool> HeadCore::Report(const Caller& by, const SyncRequest& req, TimeMs now) {
  if (by.kind != Caller::Kind::kNode || by.name != req.node) {
    return PermissionDenied("a node credential reports only on its own node");
  }
  auto it = state_.nodes.find(req.node);
  if (it == state_.nodes.end() || req.agent_epoch != it->second.agent_epoch) return false;
  node_watch_.Heard(req.node, now);
  node_watch_.ObservePorts(req.node, req.busy_ports);
  node_watch_.ObserveImageCache(req.node, req.image_cache);
  ObserveDatasets(req.node, req.datasets);
  prefetch_.Observe(req.node, req.prefetching);
  if (!req.gpu_samples.empty()) {
    gpus_.Observe(req.node, req.gpu_samples);
    ObserveUse(req.node, now);
    ObserveHealth(it->second, req.gpu_samples, now);
    ObserveGpuHealth(state_.nodes.at(req.node), req.gpu_samples, now);
  }
  if (it->second.liveness != Liveness::kAlive) {
    SetLiveness(req.node, Liveness::kAlive, "agent heard from again", now);
  }
  for (const RunReport& r : req.runs) {
    RunId id;
    int32_t step = 0;
    if (ParseStepRunId(r.run_id, &id, &step)) {
      auto job = state_.jobs.find(id.job);
      if (job != state_.jobs.end() && active().IsActive(id.job) &&
          job->second.CurrentRun()->attempt == id.attempt) {
        OnStepReport(job->second, step, req.node, r, now);
      }
      continue;
    }
    if (!ParseRunId(r.run_id, &id)) continue;
    auto job = state_.jobs.find(id.job);
    if (job == state_.jobs.end() || !active().IsActive(id.job)) continue;
    if (job->second.CurrentRun()->attempt != id.attempt) continue;
    if (r.running && r.notebook_idle_ms >= 0) {
      sessions_.KernelActivity(id.job, r.notebook_idle_ms, now);
    }
    OnReplicaReport(job->second, req.node, r, now);
  }
  return true;
}

// A node whose GPUs fail their probe gets no new runs until they all pass again (DESIGN §9).
// Only a change of the faults is a change: a node that keeps failing is not re-recorded on
// every sync.
void HeadCore::ObserveHealth(const Node& node, const std::vector<GpuSample>& samples, TimeMs now) {
  std::map<int32_t, std::string> faults;
  for (const GpuSample& s : samples) {
    if (!s.fault.empty()) faults[s.index] = s.fault;
  }
  // The node's reason is derived from exactly its faults (and cleared with them at
  // registration), so it alone says whether they changed.
  if (UnhealthyReason(faults) != node.unhealthy) {
    Emit(Caller::Node(node.name), now, NodeHealthSet{node.name, std::move(faults)});
  }
}

uint64_t HeadCore::NodeVersion(const std::string& node) const {
  return node_watch_.Version(node, state_.epoch);
}

// A replica's memory cap: what its job asked for, else its node's memory in proportion to the
// GPUs it holds there (a 2-GPU replica on an 8-GPU node may use a quarter); none for a replica
// that asked for neither memory nor GPUs.
int64_t HeadCore::ReplicaMemoryCapMb(const Job& job, const ReplicaPlacement& p) const {
  if (job.spec.per_replica.memory_mb > 0) return job.spec.per_replica.memory_mb;
  auto node = state_.nodes.find(p.node);
  if (node == state_.nodes.end() || node->second.gpus.empty() || p.gpus.empty()) return 0;
  int64_t held_milli = 0;
  for (const GpuShare& s : Shares(p)) held_milli += s.milli;
  return node->second.memory_mb * held_milli /
         (static_cast<int64_t>(node->second.gpus.size()) * kGpuMilli);
}

RunOrder HeadCore::ReplicaOrder(const Job& job, const Run& run, int32_t replica) const {
  RunOrder o;
  o.job_id = job.id;
  o.attempt = run.attempt;
  o.replica = replica;
  o.user = job.owner;
  o.cpu_milli = job.spec.per_replica.cpu_milli;
  o.memory_mb = ReplicaMemoryCapMb(job, run.placement[replica]);
  o.gpus = run.placement[replica].gpus;
  o.container = job.spec.container;  // a job step runs in a container of the job's image too
  o.datasets = job.spec.datasets;
  o.source_rates = StageInRates(job.id);  // its share of its sources' budgets
  o.stage_out = job.spec.stage_out;
  // A replica an elastic run gave up stops alone, with the checkpoint signal and grace.
  o.stop = run.stop_requested || run.Departed(replica);
  o.stop_signal = job.spec.checkpoint_signal;
  // A checkpoint reported after the stop was asked for is the job saying it is ready to go:
  // its grace ends there (the preemption handshake), and the node stops it at once.
  o.grace_ms =
      run.stop_requested && run.last_checkpoint_at >= run.stop_requested_at ? 0 : job.spec.grace_ms;
  return o;
}

SyncResponse HeadCore::DesiredFor(const std::string& node) const {
  SyncResponse r;
  r.head_epoch = state_.epoch;
  r.desired_version = NodeVersion(node);
  for (JobId id : active().OnNode(node)) AddJobOrders(state_.jobs.at(id), node, &r);
  r.prefetch = prefetch_.For(node);
  return r;
}

SyncResponse HeadCore::AnswerFor(const std::string& node, uint64_t from) const {
  const DesiredLog* log = node_watch_.LogOf(node);
  std::optional<std::vector<JobId>> changed;
  if (from != 0 && log != nullptr) changed = log->ChangedSince(from);
  if (!changed) return DesiredFor(node);
  const std::set<JobId>& runs = active().OnNode(node);
  // Where every job left on the node changed, the full answer lists no more orders and names
  // no jobs: it is the smaller one (a node whose runs all ended, or all just began).
  size_t here = 0;
  for (JobId id : *changed) here += runs.count(id);
  if (here == runs.size()) return DesiredFor(node);
  SyncResponse r;
  r.head_epoch = state_.epoch;
  r.desired_version = log->version();
  r.delta = true;
  r.base_version = from;
  r.changed_jobs = std::move(*changed);
  for (JobId id : r.changed_jobs) {
    if (runs.count(id)) AddJobOrders(state_.jobs.at(id), node, &r);
  }
  r.prefetch = prefetch_.For(node);  // whole in every answer
  return r;
}

void HeadCore::AddJobOrders(const Job& job, const std::string& node, SyncResponse* out) const {
  const Run& run = *job.CurrentRun();
  // Waiting for its turn at a budgeted source: its nodes hear of it once it is admitted (a
  // stop is still sent: the node answers it as stopped before it started).
  if (StageInWaits(job.id) && !run.stop_requested) return;
  const RunLayout layout = LayoutFor(job, run);
  for (int32_t replica = 0; replica < static_cast<int32_t>(run.placement.size()); ++replica) {
    if (run.placement[replica].node != node || run.exit_codes[replica] != kNotExited) continue;
    RunOrder o = ReplicaOrder(job, run, replica);
    o.run_id = ToString(RunId{job.id, run.attempt});
    o.command = job.spec.command;
    o.layout = layout;  // the agent derives the tasks' environments (ExpandOrderEnv)
    o.workdir = job.spec.workdir;
    o.notebook = job.spec.notebook;
    o.interactive = job.spec.interactive;
    o.elastic = job.spec.IsElastic() && !job.spec.batch;  // sbatch's allocation is not resized
    o.signals = run.signals;
    o.signal = run.last_signal;
    o.peers_lost = run.peers_lost;  // the survivors of a lost node kill their workers (elastic)
    if (!state_.step_key.empty()) {
      // Every task holds its run's own credential (CORRAL_STEP_TOKEN): it may report its
      // checkpoints, cancel, requeue and read its job, start and follow job steps (srun), and
      // nothing else; it ends with the run.
      o.step_token = StepToken(state_.step_key, RunId{job.id, run.attempt});
    }
    out->runs.push_back(std::move(o));
  }
  if (!run.steps.empty()) AddStepOrders(job, run, layout, node, out);
}

void HeadCore::Tick(TimeMs now) {
  CheckLiveness(now);
  EnforceTimeLimits(now);
  ExpireStops(now);
  FlagIdle(now);
  CullSessions(now);
  RetireEnded(now);
  KeepServices(now);
  WantSchedule();
}

void HeadCore::CheckLiveness(TimeMs now) {
  std::vector<std::string> down, unreachable;
  for (const auto& [name, node] : state_.nodes) {
    DurationMs silent = now - node_watch_.LastHeard(name, now);  // new: a full timeout
    if (silent > config_.down_after_ms && node.liveness != Liveness::kDown) {
      down.push_back(name);
    } else if (silent > config_.unreachable_after_ms && node.liveness == Liveness::kAlive) {
      unreachable.push_back(name);
    }
  }
  for (const std::string& n : unreachable) {
    SetLiveness(n, Liveness::kUnreachable,
                "no sync for " + FormatDuration(config_.unreachable_after_ms), now);
  }
  for (const std::string& n : down) LoseNode(state_.nodes.at(n), now);
}

void HeadCore::LoseNode(const Node& node, TimeMs now) {
  std::string name = node.name;
  SetLiveness(name, Liveness::kDown, "no sync for " + FormatDuration(config_.down_after_ms), now);
  std::set<JobId> lost = active().OnNode(name);
  for (JobId id : lost) {
    if (DropLostReplicas(state_.jobs.at(id), name, now)) continue;
    FinishRun(state_.jobs.at(id), RunState::kLost, "node " + name + " lost", now);
  }
}

Result<NodeView> HeadCore::SetDrain(const Caller& by, const std::string& name, bool drain,
                                    TimeMs now, const std::string& reason) {
  if (!by.IsAdmin()) return PermissionDenied("draining a node needs an admin");
  auto it = state_.nodes.find(name);
  if (it == state_.nodes.end()) return NotFound("no node " + name);
  // A node may be drained whatever its liveness: an operator takes out a silent node for repair
  // before it comes back.
  Drain now_drain = it->second.drain;
  if (drain && now_drain == Drain::kNone) {
    SetDrainState(name, active().OnNode(name).empty() ? Drain::kDrained : Drain::kDraining,
                  "drained by " + by.name + (reason.empty() ? "" : ": " + reason), now);
  } else if (!drain && now_drain != Drain::kNone) {
    SetDrainState(name, Drain::kNone, "undrained by " + by.name, now);
  }
  return NodeView{state_.nodes.at(name), 0, {}};
}

Result<Node> HeadCore::RemoveNode(const Caller& by, const std::string& name, TimeMs now) {
  if (!by.IsAdmin()) return PermissionDenied("removing a node needs an admin");
  auto it = state_.nodes.find(name);
  if (it == state_.nodes.end()) return NotFound("node '" + name + "': no such node");
  const std::set<JobId>& live = active().OnNode(name);
  if (!live.empty()) {
    std::string jobs;
    for (JobId id : live) jobs += (jobs.empty() ? "" : ", ") + std::to_string(id);
    return FailedPrecondition("node '" + name + "': " + std::to_string(live.size()) +
                              " live run(s) (job " + jobs +
                              "): drain it and let them end, or cancel them, then remove it");
  }
  Node gone = it->second;
  Emit(by, now, NodeRemoved{name});
  return gone;
}

void HeadCore::ForgetNode(const std::string& node) {
  node_watch_.Forget(node);
  gpus_.Forget(node);
}

std::vector<NodeView> HeadCore::ListNodes(TimeMs now) const {
  std::vector<NodeView> out;
  for (const auto& [name, node] : state_.nodes) {
    NodeView v{node, 0, {}, {}, {}};
    // Reservations on a node do not overlap (CreateReservation): at most one is on now.
    for (const auto& [rname, r] : state_.reservations) {
      if (r.start_ms <= now && now < r.end_ms &&
          std::binary_search(r.nodes.begin(), r.nodes.end(), name)) {
        v.reservation = rname;
        v.maintenance = r.maintenance;
      }
    }
    std::set<int32_t> held;
    if (auto h = node_watch_.LastHeardIfAny(name)) v.node.last_heartbeat = *h;
    if (const std::vector<GpuSample>* g = gpus_.SamplesOf(name)) v.gpu_samples = *g;
    if (const ImageCacheReport* c = node_watch_.ImageCacheOf(name)) v.image_cache = *c;
    for (JobId id : active().OnNode(name)) {
      const Job& job = state_.jobs.at(id);
      const Run& run = *job.CurrentRun();
      v.runs.push_back(ToString(RunId{id, run.attempt}));
      for (const ReplicaPlacement& p : run.placement) {
        if (p.node != name) continue;
        for (const GpuShare& g : Shares(p)) {
          held.insert(g.index);
          if (p.gpu_milli.empty()) continue;
          v.shares.push_back(
              {g.index, id, job.owner, g.milli, g.memory_mb, job.spec.per_replica.gpu_isolation});
        }
      }
    }
    v.gpus_used = static_cast<int32_t>(held.size());
    out.push_back(std::move(v));
  }
  return out;
}

Result<Node> HeadCore::GetNode(const std::string& name) const {
  auto it = state_.nodes.find(name);
  if (it == state_.nodes.end()) return NotFound("no node " + name);
  return it->second;
}

RunLayout HeadCore::LayoutFor(const Job& job, const Run& run) const {
  std::vector<std::string> hosts;
  for (const ReplicaPlacement& p : run.placement) {
    auto it = state_.nodes.find(p.node);
    std::string addr = it == state_.nodes.end() ? "" : it->second.address;
    std::string host = addr.substr(0, addr.rfind(':'));
    if (host.size() > 1 && host.front() == '[') host = host.substr(1, host.size() - 2);
    hosts.push_back(host);
  }
  return LayoutOf(job, run, std::move(hosts),
                  config_.checkpoint_root + "/job-" + std::to_string(job.id));
}

}  // namespace corral::head
