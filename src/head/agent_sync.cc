// Head side of the agent protocol (DESIGN §7): registration, the long-poll sync that
// reconciles desired against actual runs, liveness, and each run's environment (DESIGN §8).
#include <boost/asio/post.hpp>

#include "head/head.h"
#include "head/tokens.h"

namespace corral::head {

sched::NodeInfo Head::ToNodeInfo(const Node& node) const {
  sched::NodeInfo info;
  info.name = node.name;
  info.labels = node.labels;
  info.schedulable = node.state == NodeState::kReady;
  info.cpu_milli = node.cpu_milli;
  info.memory_mb = node.memory_mb;
  info.gpus = node.gpus;
  return info;
}

void Head::DoRegister(RegisterRequest req, Callback<RegisterResponse> done) {
  if (req.name.empty()) {
    return Reply<RegisterResponse>(std::move(done),
                                   InvalidArgument("field 'name': the node needs a name"));
  }
  TimeMs now = clock_->Now();
  Node& n = nodes_[req.name];
  bool is_new = n.name.empty();
  n.name = req.name;
  n.address = req.address;
  n.cpu_milli = req.cpu_milli;
  n.memory_mb = req.memory_mb;
  n.gpus = req.gpus;
  n.labels = req.labels;
  if (!n.gpus.empty() && !n.labels.count("gpu_model")) n.labels["gpu_model"] = n.gpus[0].model;
  if (n.state == NodeState::kUnreachable || n.state == NodeState::kDown)
    n.state = NodeState::kReady;
  n.agent_epoch += 1;
  n.registered_at = now;
  n.last_heartbeat = now;
  std::string token = RandomToken();
  node_tokens_[n.name] = token;
  if (is_new) node_version_[n.name] = epoch_ << 32;
  PersistNode(n);
  Edit(store::PutMeta{"node_token/" + n.name, token});
  scheduler_.UpsertNode(ToNodeInfo(n));
  BumpNode(n.name);
  RequestSchedule();
  Reply<RegisterResponse>(std::move(done), RegisterResponse{token, epoch_, n.agent_epoch});
}

void Head::DoSync(SyncRequest req, std::string token, Callback<SyncResponse> done) {
  auto it = nodes_.find(req.node);
  if (it == nodes_.end() || req.agent_epoch != it->second.agent_epoch) {
    SyncResponse r;
    r.head_epoch = epoch_;
    r.reregister = true;
    return Reply<SyncResponse>(std::move(done), r);
  }
  auto tok = node_tokens_.find(req.node);
  if (tok == node_tokens_.end() || !TokensEqual(tok->second, token)) {
    return Reply<SyncResponse>(
        std::move(done), Status(ErrorCode::kUnauthenticated, "bad node token for " + req.node));
  }
  Node& node = it->second;
  TimeMs now = clock_->Now();
  node.last_heartbeat = now;
  if (node.state == NodeState::kUnreachable || node.state == NodeState::kDown) {
    node.state = NodeState::kReady;
    PersistNode(node);
    scheduler_.UpsertNode(ToNodeInfo(node));
    RequestSchedule();
  }
  for (const RunReport& r : req.runs) {
    RunId id;
    if (!ParseRunId(r.run_id, &id)) continue;
    auto job = jobs_.find(id.job);
    if (job == jobs_.end() || !active_jobs_.count(id.job)) continue;
    if (job->second.CurrentRun()->attempt != id.attempt) continue;
    OnReplicaReport(job->second, req.node, r, now);
  }
  // A newer call supersedes a held one.
  if (auto p = parked_.find(req.node); p != parked_.end()) {
    Parked old = std::move(p->second);
    parked_.erase(p);
    old.timer->cancel();
    Reply<SyncResponse>(std::move(old.done), DesiredFor(req.node));
  }
  uint64_t version = node_version_[req.node];
  if (req.desired_version == version && req.wait_ms > 0) {
    Parked& parked = parked_[req.node];
    parked.req = std::move(req);
    parked.done = std::move(done);
    parked.timer = std::make_unique<boost::asio::steady_timer>(io_);
    parked.timer->expires_after(
        std::chrono::milliseconds(std::min<int64_t>(parked.req.wait_ms, config_.max_sync_hold_ms)));
    std::string name = parked.req.node;
    parked.timer->async_wait([this, name](const boost::system::error_code& ec) {
      if (!ec) AnswerParked(name);
    });
    return;
  }
  Reply<SyncResponse>(std::move(done), DesiredFor(req.node));
}

void Head::BumpNode(const std::string& node) {
  ++node_version_[node];
  if (!parked_.count(node)) return;
  bool first = nodes_to_answer_.empty();
  nodes_to_answer_.insert(node);
  // Answer once per turn, after every change of this turn is in the desired state.
  if (first) {
    Post([this] {
      auto names = std::move(nodes_to_answer_);
      nodes_to_answer_.clear();
      for (const std::string& n : names) AnswerParked(n);
    });
  }
}

void Head::AnswerParked(const std::string& node) {
  auto p = parked_.find(node);
  if (p == parked_.end()) return;
  Parked parked = std::move(p->second);
  parked_.erase(p);
  parked.timer->cancel();
  if (auto n = nodes_.find(node); n != nodes_.end()) n->second.last_heartbeat = clock_->Now();
  // The desired state is taken now and sent once everything it reflects is durable.
  Reply<SyncResponse>(std::move(parked.done), DesiredFor(node));
}

SyncResponse Head::DesiredFor(const std::string& node) {
  SyncResponse r;
  r.head_epoch = epoch_;
  r.desired_version = node_version_[node];
  for (JobId id : node_runs_[node]) {
    const Job& job = jobs_.at(id);
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

void Head::CheckLiveness(TimeMs now) {
  for (auto& [name, node] : nodes_) {
    if (parked_.count(name)) {
      node.last_heartbeat = now;  // a held sync is a live connection
      continue;
    }
    DurationMs silent = now - node.last_heartbeat;
    if (silent > config_.down_after_ms && node.state != NodeState::kDown) {
      LoseNode(node, now);
    } else if (silent > config_.unreachable_after_ms && node.state == NodeState::kReady) {
      node.state = NodeState::kUnreachable;
      PersistNode(node);
      scheduler_.UpsertNode(ToNodeInfo(node));
    }
  }
}

void Head::LoseNode(Node& node, TimeMs now) {
  node.state = NodeState::kDown;
  PersistNode(node);
  scheduler_.UpsertNode(ToNodeInfo(node));
  std::set<JobId> lost = node_runs_[node.name];
  for (JobId id : lost) {
    Job& job = jobs_.at(id);
    AddEvent(job, now, "node lost", node.name);
    FinishRun(job, RunState::kLost, "node " + node.name + " lost", now);
  }
}

std::map<std::string, std::string> Head::RunEnv(const Job& job, const Run& run,
                                                int32_t replica) const {
  std::map<std::string, std::string> env = job.spec.env;
  const std::string node = run.placement[replica].node;
  int32_t n = static_cast<int32_t>(run.placement.size());
  std::string nodes, gpus;
  for (const ReplicaPlacement& p : run.placement) nodes += (nodes.empty() ? "" : ",") + p.node;
  for (int32_t g : run.placement[replica].gpus)
    gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
  std::string master = "127.0.0.1";
  if (auto it = nodes_.find(run.placement[0].node);
      it != nodes_.end() && !it->second.address.empty()) {
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
  env["MASTER_PORT"] = std::to_string(20000 + (job.id * 16 + run.attempt) % 20000);
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
  return env;
}

}  // namespace corral::head
