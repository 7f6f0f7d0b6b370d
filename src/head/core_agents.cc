// The head core's side of the agent protocol (DESIGN §7): registration, reports,
// each node's desired runs, liveness, drain, and each run's environment (DESIGN §8).
#include "core/spec.h"
#include "head/head_core.h"
#include "head/tokens.h"

namespace corral::head {

sched::NodeInfo HeadCore::ToNodeInfo(const Node& node) const {
  sched::NodeInfo info;
  info.name = node.name;
  info.labels = node.labels;
  info.schedulable = node.state == NodeState::kReady;
  info.cpu_milli = node.cpu_milli;
  info.memory_mb = node.memory_mb;
  info.gpus = node.gpus;
  return info;
}

void HeadCore::Bump(const std::string& node) {
  ++node_version_[node];
  out_.nodes_to_notify.insert(node);
}

void HeadCore::SetNodeState(const std::string& node, NodeState state, const std::string& reason,
                            TimeMs now) {
  Emit(Caller::System(), now, NodeStateSet{node, state, reason});
}

Result<RegisterResponse> HeadCore::Register(const Caller& by, RegisterRequest req,
                                            const std::string& secret, TimeMs now) {
  if (by.kind != Caller::Kind::kJoin && !by.IsAdmin()) {
    return PermissionDenied("registering a node needs the join token");
  }
  if (req.name.empty()) return InvalidArgument("field 'name': the node needs a name");
  Node n;
  if (auto it = state_.nodes.find(req.name); it != state_.nodes.end()) n = it->second;
  n.name = req.name;
  n.address = req.address;
  n.cpu_milli = req.cpu_milli;
  n.memory_mb = req.memory_mb;
  n.gpus = req.gpus;
  n.labels = req.labels;
  if (!n.gpus.empty() && !n.labels.count("gpu_model")) n.labels["gpu_model"] = n.gpus[0].model;
  if (n.state == NodeState::kUnreachable || n.state == NodeState::kDown) {
    n.state = NodeState::kReady;
  }
  n.agent_epoch += 1;
  n.registered_at = now;
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
  last_heard_[req.node] = now;
  NodeState st = it->second.state;
  if (st == NodeState::kUnreachable || st == NodeState::kDown) {
    SetNodeState(req.node, NodeState::kReady, "agent heard from again", now);
  }
  for (const RunReport& r : req.runs) {
    RunId id;
    if (!ParseRunId(r.run_id, &id)) continue;
    auto job = state_.jobs.find(id.job);
    if (job == state_.jobs.end() || !active_jobs_.count(id.job)) continue;
    if (job->second.CurrentRun()->attempt != id.attempt) continue;
    OnReplicaReport(job->second, req.node, r, now);
  }
  return true;
}

uint64_t HeadCore::NodeVersion(const std::string& node) const {
  auto it = node_version_.find(node);
  return it == node_version_.end() ? state_.epoch << 32 : it->second;
}

SyncResponse HeadCore::DesiredFor(const std::string& node) const {
  SyncResponse r;
  r.head_epoch = state_.epoch;
  r.desired_version = NodeVersion(node);
  auto runs = node_runs_.find(node);
  if (runs == node_runs_.end()) return r;
  for (JobId id : runs->second) {
    const Job& job = state_.jobs.at(id);
    const Run& run = *job.CurrentRun();
    for (int32_t replica = 0; replica < static_cast<int32_t>(run.placement.size()); ++replica) {
      if (run.placement[replica].node != node || run.exit_codes[replica] != kNotExited) continue;
      RunOrder o;
      o.run_id = ToString(RunId{id, run.attempt});
      o.job_id = id;
      o.attempt = run.attempt;
      o.replica = replica;
      o.command = job.spec.command;
      o.env = RunEnv(job, run, replica);
      o.workdir = job.spec.workdir;
      o.gpus = run.placement[replica].gpus;
      o.stop = run.stop_requested;
      o.stop_signal = job.spec.checkpoint_signal;
      o.grace_ms = job.spec.grace_ms;
      r.runs.push_back(std::move(o));
    }
  }
  return r;
}

void HeadCore::Tick(TimeMs now) {
  CheckLiveness(now);
  EnforceTimeLimits(now);
  WantSchedule();
}

void HeadCore::CheckLiveness(TimeMs now) {
  std::vector<std::string> down, unreachable;
  for (const auto& [name, node] : state_.nodes) {
    auto heard = last_heard_.find(name);
    TimeMs last = heard == last_heard_.end() ? now : heard->second;
    if (heard == last_heard_.end()) last_heard_[name] = now;  // a full timeout to reconnect
    DurationMs silent = now - last;
    if (silent > config_.down_after_ms && node.state != NodeState::kDown) {
      down.push_back(name);
    } else if (silent > config_.unreachable_after_ms && node.state == NodeState::kReady) {
      unreachable.push_back(name);
    }
  }
  for (const std::string& n : unreachable) {
    SetNodeState(n, NodeState::kUnreachable,
                 "no sync for " + FormatDuration(config_.unreachable_after_ms), now);
  }
  for (const std::string& n : down) LoseNode(state_.nodes.at(n), now);
}

void HeadCore::LoseNode(const Node& node, TimeMs now) {
  std::string name = node.name;
  SetNodeState(name, NodeState::kDown, "no sync for " + FormatDuration(config_.down_after_ms), now);
  std::set<JobId> lost = node_runs_[name];
  for (JobId id : lost)
    FinishRun(state_.jobs.at(id), RunState::kLost, "node " + name + " lost", now);
}

Result<NodeView> HeadCore::SetDrain(const Caller& by, const std::string& name, bool drain,
                                    TimeMs now) {
  if (!by.IsAdmin()) return PermissionDenied("draining a node needs an admin");
  auto it = state_.nodes.find(name);
  if (it == state_.nodes.end()) return NotFound("no node " + name);
  NodeState st = it->second.state;
  if (drain && st == NodeState::kReady) {
    SetNodeState(name, node_runs_[name].empty() ? NodeState::kDrained : NodeState::kDraining,
                 "drained by " + by.name, now);
  } else if (!drain && (st == NodeState::kDraining || st == NodeState::kDrained)) {
    SetNodeState(name, NodeState::kReady, "undrained by " + by.name, now);
  }
  return NodeView{state_.nodes.at(name), 0, {}};
}

std::vector<NodeView> HeadCore::ListNodes() const {
  std::vector<NodeView> out;
  for (const auto& [name, node] : state_.nodes) {
    NodeView v{node, 0, {}};
    if (auto h = last_heard_.find(name); h != last_heard_.end()) v.node.last_heartbeat = h->second;
    if (auto runs = node_runs_.find(name); runs != node_runs_.end()) {
      for (JobId id : runs->second) {
        const Run& run = *state_.jobs.at(id).CurrentRun();
        v.runs.push_back(ToString(RunId{id, run.attempt}));
        for (const ReplicaPlacement& p : run.placement) {
          if (p.node == name) v.gpus_used += static_cast<int32_t>(p.gpus.size());
        }
      }
    }
    out.push_back(std::move(v));
  }
  return out;
}

Result<Node> HeadCore::GetNode(const std::string& name) const {
  auto it = state_.nodes.find(name);
  if (it == state_.nodes.end()) return NotFound("no node " + name);
  return it->second;
}

std::map<std::string, std::string> HeadCore::RunEnv(const Job& job, const Run& run,
                                                    int32_t replica) const {
  std::map<std::string, std::string> env = job.spec.env;
  const std::string node = run.placement[replica].node;
  int32_t n = static_cast<int32_t>(run.placement.size());
  std::string nodes, gpus;
  for (const ReplicaPlacement& p : run.placement) nodes += (nodes.empty() ? "" : ",") + p.node;
  for (int32_t g : run.placement[replica].gpus)
    gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
  std::string master = "127.0.0.1";
  if (auto it = state_.nodes.find(run.placement[0].node);
      it != state_.nodes.end() && !it->second.address.empty()) {
    master = it->second.address.substr(0, it->second.address.rfind(':'));
  }
  std::string id = std::to_string(job.id);
  env["CORRAL_JOB_ID"] = id;
  env["CORRAL_RUN"] = ToString(RunId{job.id, run.attempt});
  env["CORRAL_NODE"] = node;
  env["CORRAL_REPLICA"] = std::to_string(replica);
  env["CORRAL_NUM_REPLICAS"] = std::to_string(n);
  env["CORRAL_NODES"] = nodes;
  env["CORRAL_CHECKPOINT_DIR"] = config_.checkpoint_root + "/job-" + id;
  env["CUDA_VISIBLE_DEVICES"] = gpus;
  env["MASTER_ADDR"] = master;
  env["MASTER_PORT"] = std::to_string(run.master_port);
  env["WORLD_SIZE"] = std::to_string(n);
  env["RANK"] = std::to_string(replica);
  env["LOCAL_RANK"] = "0";
  env["LOCAL_WORLD_SIZE"] = "1";
  env["NODE_RANK"] = std::to_string(replica);
  env["NNODES"] = std::to_string(n);
  env["SLURM_JOB_ID"] = id;
  env["SLURM_PROCID"] = std::to_string(replica);
  env["SLURM_NTASKS"] = std::to_string(n);
  env["SLURM_NODEID"] = std::to_string(replica);
  env["SLURM_JOB_NUM_NODES"] = std::to_string(n);
  env["SLURMD_NODENAME"] = node;
  if (job.IsArrayElement()) {
    env["CORRAL_ARRAY_JOB_ID"] = env["SLURM_ARRAY_JOB_ID"] = std::to_string(job.array_id);
    env["CORRAL_ARRAY_INDEX"] = env["SLURM_ARRAY_TASK_ID"] = std::to_string(job.array_index);
  }
  return env;
}

}  // namespace corral::head
