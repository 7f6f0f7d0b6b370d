#include "head/head.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <filesystem>
#include <fstream>

#include "head/tokens.h"

namespace corral::head {

namespace asio = boost::asio;

Result<std::unique_ptr<Head>> Head::Open(HeadConfig config, const Clock* clock) {
  std::error_code ec;
  std::filesystem::create_directories(config.state_dir, ec);
  if (ec) return Unavailable("cannot create state dir " + config.state_dir + ": " + ec.message());
  if (config.checkpoint_root.empty()) config.checkpoint_root = config.state_dir + "/checkpoints";
  auto store = store::OpenSqliteStore(config.state_dir + "/corral.db");
  if (!store.ok()) return store.status();
  auto loaded = (*store)->Load();
  if (!loaded.ok()) return loaded.status();
  std::unique_ptr<Head> head(new Head(std::move(config), clock, std::move(*store)));
  auto admin = LoadOrCreateToken(head->config_.state_dir + "/admin.token");
  if (!admin.ok()) return admin.status();
  auto join = LoadOrCreateToken(head->config_.state_dir + "/join.token");
  if (!join.ok()) return join.status();
  head->tokens_ = {*admin, *join};
  CORRAL_RETURN_IF_ERROR(head->Recover(std::move(*loaded)));
  return head;
}

Head::Head(HeadConfig config, const Clock* clock, std::unique_ptr<store::Store> store)
    : config_(std::move(config)),
      clock_(clock),
      store_(std::move(store)),
      scheduler_(config_.scheduler) {}

Head::~Head() { Stop(); }

// Rebuilds memory from the store; the agents' next syncs reconcile what actually runs.
Status Head::Recover(store::StoredState state) {
  TimeMs now = clock_->Now();
  epoch_ = 1;
  if (auto it = state.meta.find("head_epoch"); it != state.meta.end()) {
    epoch_ = std::stoull(it->second) + 1;
  }
  // The epoch must be durable before any agent sees it, or two leaderships could share one.
  CORRAL_RETURN_IF_ERROR(store_->Commit({store::PutMeta{"head_epoch", std::to_string(epoch_)}}));
  for (auto& [key, value] : state.meta) {
    if (key.rfind("node_token/", 0) == 0) node_tokens_[key.substr(11)] = value;
  }
  for (QueueConfig& q : state.queues) {
    scheduler_.SetQueue(q);
    queues_[q.name] = q;
  }
  if (!queues_.count("default")) {
    QueueConfig def{"default", 0, -1, 1.0};
    queues_["default"] = def;
    scheduler_.SetQueue(def);
    CORRAL_RETURN_IF_ERROR(store_->Commit({store::PutQueue{def}}));
  }
  for (Node& n : state.nodes) {
    n.last_heartbeat = now;  // give every agent a full timeout to reconnect
    scheduler_.UpsertNode(ToNodeInfo(n));
    node_version_[n.name] = epoch_ << 32;
    nodes_[n.name] = std::move(n);
  }
  for (Job& job : state.jobs) {
    next_job_id_ = std::max(next_job_id_, job.id + 1);
    if (job.state == JobState::kPending) {
      scheduler_.AddPending(ToPending(job));
    } else if (job.state == JobState::kScheduled || job.state == JobState::kRunning) {
      const Run& run = *job.CurrentRun();
      active_jobs_.insert(job.id);
      for (const ReplicaPlacement& p : run.placement) node_runs_[p.node].insert(job.id);
      scheduler_.AddRunning(
          {ToPending(job), run.placement, run.started_at ? run.started_at : run.scheduled_at});
    }
    JobId id = job.id;
    jobs_[id] = std::move(job);
  }
  return Status::Ok();
}

void Head::Start() {
  pipeline_ = std::make_unique<CommitPipeline>(
      store_.get(), [this](Status st) { Post([this, st] { OnDurable(st); }); });
  tick_timer_ = std::make_unique<asio::steady_timer>(io_);
  Post([this] {
    Tick();
    RequestSchedule();
  });
  thread_ = std::thread([this] {
    auto guard = asio::make_work_guard(io_);
    io_.run();
  });
}

void Head::Stop() {
  if (stopped_ || !thread_.joinable()) return;
  stopped_ = true;
  io_.stop();
  thread_.join();
  pipeline_.reset();  // finishes an in-flight commit
}

void Head::Post(std::function<void()> fn) { asio::post(io_, std::move(fn)); }

void Head::Tick() {
  TimeMs now = clock_->Now();
  CheckLiveness(now);
  EnforceTimeLimits(now);
  RequestSchedule();
  tick_timer_->expires_after(std::chrono::milliseconds(config_.tick_ms));
  tick_timer_->async_wait([this](const boost::system::error_code& ec) {
    if (!ec) Tick();
  });
}

// --- durability ---

void Head::Edit(store::StateEdit edit) {
  next_edits_.push_back(std::move(edit));
  if (!flush_posted_) {
    flush_posted_ = true;
    Post([this] {
      flush_posted_ = false;
      FlushEdits();
    });
  }
}

void Head::PersistJob(const Job& job) { Edit(store::PutJob{job}); }
void Head::PersistNode(const Node& node) { Edit(store::PutNode{node}); }

void Head::AfterDurable(std::function<void()> fn) {
  if (!next_edits_.empty()) {
    next_callbacks_.push_back(std::move(fn));
  } else if (inflight_) {
    inflight_callbacks_.push_back(std::move(fn));
  } else {
    fn();
  }
}

void Head::FlushEdits() {
  if (inflight_ || next_edits_.empty()) return;
  inflight_ = true;
  inflight_callbacks_ = std::move(next_callbacks_);
  next_callbacks_.clear();
  std::vector<store::StateEdit> batch = std::move(next_edits_);
  next_edits_.clear();
  pipeline_->Submit(std::move(batch));
}

void Head::OnDurable(Status st) {
  // Memory already holds the change; if the store refused it, memory and disk disagree and
  // the only safe move is to crash and recover from what is durable.
  CORRAL_CHECK(st.ok(), "store commit failed: " + st.ToString());
  inflight_ = false;
  auto callbacks = std::move(inflight_callbacks_);
  inflight_callbacks_.clear();
  for (auto& fn : callbacks) fn();
  FlushEdits();
}

// --- queries and admin commands ---

void Head::Submit(JobSpec spec, std::string user, Callback<Job> done) {
  Post([this, spec = std::move(spec), user = std::move(user), done = std::move(done)]() mutable {
    DoSubmit(std::move(spec), std::move(user), std::move(done));
  });
}

void Head::Cancel(JobId id, Callback<Job> done) {
  Post([this, id, done = std::move(done)]() mutable { DoCancel(id, std::move(done)); });
}

void Head::GetJob(JobId id, Callback<Job> done) {
  Post([this, id, done = std::move(done)]() mutable {
    auto it = jobs_.find(id);
    if (it == jobs_.end())
      return Reply<Job>(std::move(done), NotFound("no job " + std::to_string(id)));
    Reply<Job>(std::move(done), it->second);
  });
}

void Head::ListJobs(JobFilter f, Callback<std::vector<Job>> done) {
  Post([this, f = std::move(f), done = std::move(done)]() mutable {
    std::vector<Job> out;
    for (auto it = jobs_.upper_bound(f.after); it != jobs_.end(); ++it) {
      const Job& j = it->second;
      if (!f.states.empty() && !f.states.count(j.state)) continue;
      if (!f.queue.empty() && j.spec.queue != f.queue) continue;
      if (!f.user.empty() && j.owner != f.user) continue;
      out.push_back(j);
      if (static_cast<int32_t>(out.size()) >= f.limit) break;
    }
    Reply<std::vector<Job>>(std::move(done), std::move(out));
  });
}

void Head::ListNodes(Callback<std::vector<NodeView>> done) {
  Post([this, done = std::move(done)]() mutable {
    std::vector<NodeView> out;
    for (const auto& [name, node] : nodes_) {
      NodeView v{node, 0, {}};
      for (JobId id : node_runs_[name]) {
        const Job& job = jobs_.at(id);
        const Run& run = *job.CurrentRun();
        v.runs.push_back(ToString(RunId{id, run.attempt}));
        for (const ReplicaPlacement& p : run.placement) {
          if (p.node == name) v.gpus_used += static_cast<int32_t>(p.gpus.size());
        }
      }
      out.push_back(std::move(v));
    }
    Reply<std::vector<NodeView>>(std::move(done), std::move(out));
  });
}

void Head::GetNode(std::string name, Callback<Node> done) {
  Post([this, name = std::move(name), done = std::move(done)]() mutable {
    auto it = nodes_.find(name);
    if (it == nodes_.end()) return Reply<Node>(std::move(done), NotFound("no node " + name));
    Reply<Node>(std::move(done), it->second);
  });
}

void Head::SetDrain(std::string name, bool drain, Callback<NodeView> done) {
  Post([this, name = std::move(name), drain, done = std::move(done)]() mutable {
    auto it = nodes_.find(name);
    if (it == nodes_.end()) return Reply<NodeView>(std::move(done), NotFound("no node " + name));
    Node& n = it->second;
    if (drain) {
      if (n.state == NodeState::kReady) {
        n.state = node_runs_[name].empty() ? NodeState::kDrained : NodeState::kDraining;
      }
    } else if (n.state == NodeState::kDraining || n.state == NodeState::kDrained) {
      n.state = NodeState::kReady;
    }
    PersistNode(n);
    scheduler_.UpsertNode(ToNodeInfo(n));
    RequestSchedule();
    Reply<NodeView>(std::move(done), NodeView{n, 0, {}});
  });
}

void Head::ListQueues(Callback<std::vector<QueueView>> done) {
  Post([this, done = std::move(done)]() mutable {
    std::map<std::string, QueueView> views;
    for (const auto& [name, q] : queues_) views[name].config = q;
    for (const auto& [id, job] : jobs_) {
      if (IsTerminal(job.state)) continue;
      QueueView& v = views[job.spec.queue];
      if (v.config.name.empty()) v.config = {job.spec.queue, 0, -1, 1.0};
      if (job.state == JobState::kPending) {
        ++v.pending;
      } else {
        ++v.running;
        v.used_gpus += job.spec.replicas * job.spec.per_replica.WholeGpus();
      }
    }
    std::vector<QueueView> out;
    for (auto& [name, v] : views) out.push_back(std::move(v));
    Reply<std::vector<QueueView>>(std::move(done), std::move(out));
  });
}

void Head::SetQueue(QueueConfig q, Callback<QueueConfig> done) {
  Post([this, q = std::move(q), done = std::move(done)]() mutable {
    queues_[q.name] = q;
    scheduler_.SetQueue(q);
    Edit(store::PutQueue{q});
    RequestSchedule();
    Reply<QueueConfig>(std::move(done), q);
  });
}

void Head::Register(RegisterRequest req, Callback<RegisterResponse> done) {
  Post([this, req = std::move(req), done = std::move(done)]() mutable {
    DoRegister(std::move(req), std::move(done));
  });
}

void Head::Sync(SyncRequest req, std::string token, Callback<SyncResponse> done) {
  Post([this, req = std::move(req), token = std::move(token), done = std::move(done)]() mutable {
    DoSync(std::move(req), std::move(token), std::move(done));
  });
}

}  // namespace corral::head
