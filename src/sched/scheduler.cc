#include "sched/scheduler.h"

#include <algorithm>
#include <set>

namespace corral::sched {

const char* OrderPolicyName(OrderPolicy p) {
  switch (p) {
    case OrderPolicy::kCorral: return "corral";
    case OrderPolicy::kFifo: return "fifo";
    case OrderPolicy::kSjf: return "sjf";
    case OrderPolicy::kSrtf: return "srtf";
    case OrderPolicy::kLas: return "las";
  }
  return "unknown";
}

bool ParseOrderPolicy(const std::string& text, OrderPolicy* out) {
  for (OrderPolicy p : {OrderPolicy::kCorral, OrderPolicy::kFifo, OrderPolicy::kSjf,
                        OrderPolicy::kSrtf, OrderPolicy::kLas}) {
    if (text == OrderPolicyName(p)) {
      *out = p;
      return true;
    }
  }
  return false;
}

namespace {

struct NodeModel {
  NodeInfo info;
  std::vector<bool> gpu_busy;  // by position in info.gpus
  int32_t free_cpu_milli = 0;
  int64_t free_memory_mb = 0;

  int32_t FreeGpus() const {
    int32_t n = 0;
    for (size_t i = 0; i < gpu_busy.size(); ++i) n += !gpu_busy[i] && info.gpus[i].healthy;
    return n;
  }
};

bool LabelsMatch(const NodeInfo& node, const PendingJob& job) {
  for (const auto& [k, v] : job.node_labels) {
    auto it = node.labels.find(k);
    if (it == node.labels.end() || it->second != v) return false;
  }
  if (!job.gpu_model.empty()) {
    for (const Gpu& g : node.gpus) {
      if (g.model != job.gpu_model) return false;
    }
  }
  return true;
}

}  // namespace

struct Scheduler::Impl {
  SchedulerConfig config;
  std::map<std::string, NodeModel> nodes;  // ordered: deterministic iteration
  std::map<JobId, PendingJob> pending;
  std::map<JobId, RunningJob> running;
  std::map<std::string, QueueConfig> queues;
  std::map<JobId, std::string> last_reason;

  void Bind(const std::vector<ReplicaPlacement>& placement, const Resources& r, bool bind) {
    for (const ReplicaPlacement& p : placement) {
      auto it = nodes.find(p.node);
      if (it == nodes.end()) continue;
      NodeModel& n = it->second;
      for (int32_t idx : p.gpus) {
        for (size_t i = 0; i < n.info.gpus.size(); ++i) {
          if (n.info.gpus[i].index == idx) n.gpu_busy[i] = bind;
        }
      }
      int sign = bind ? -1 : 1;
      n.free_cpu_milli += sign * r.cpu_milli;
      n.free_memory_mb += sign * r.memory_mb;
    }
  }

  bool FitsReplica(const NodeModel& n, const PendingJob& job) const {
    return n.info.schedulable && LabelsMatch(n.info, job) &&
           n.FreeGpus() >= job.per_replica.WholeGpus() &&
           n.free_cpu_milli >= job.per_replica.cpu_milli &&
           n.free_memory_mb >= job.per_replica.memory_mb;
  }

  // Best fit: the node with the fewest free GPUs that still fits, to keep whole nodes free.
  bool TryPlace(const PendingJob& job, std::vector<ReplicaPlacement>* out) {
    std::vector<std::pair<NodeModel*, int32_t>> taken;  // undo log
    for (int32_t r = 0; r < job.replicas; ++r) {
      NodeModel* best = nullptr;
      for (auto& [name, n] : nodes) {
        if (job.replicas > 1) {
          // Replicas of a gang go to distinct nodes only when a node cannot hold two; here the
          // first version spreads one replica per node as DESIGN §6 asks for DDP gangs.
          bool used = false;
          for (const ReplicaPlacement& p : *out) used |= p.node == name;
          if (used) continue;
        }
        if (!FitsReplica(n, job)) continue;
        if (!best || n.FreeGpus() < best->FreeGpus()) best = &n;
      }
      if (!best) {
        Unbind(*out, job.per_replica);
        out->clear();
        return false;
      }
      ReplicaPlacement p{best->info.name, {}};
      int32_t want = job.per_replica.WholeGpus();
      for (size_t i = 0; i < best->gpu_busy.size() && want > 0; ++i) {
        if (!best->gpu_busy[i] && best->info.gpus[i].healthy) {
          p.gpus.push_back(best->info.gpus[i].index);
          --want;
        }
      }
      Bind({p}, job.per_replica, true);
      out->push_back(std::move(p));
    }
    return true;
  }

  void Unbind(const std::vector<ReplicaPlacement>& placement, const Resources& r) {
    Bind(placement, r, false);
  }
};

Scheduler::Scheduler(SchedulerConfig config) : impl_(std::make_unique<Impl>()) {
  impl_->config = config;
}
Scheduler::~Scheduler() = default;

void Scheduler::UpsertNode(const NodeInfo& node) {
  NodeModel& n = impl_->nodes[node.name];
  std::vector<bool> busy(node.gpus.size(), false);
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    for (size_t j = 0; j < n.info.gpus.size(); ++j) {
      if (n.info.gpus[j].index == node.gpus[i].index) busy[i] = n.gpu_busy[j];
    }
  }
  int32_t used_cpu = n.info.cpu_milli - n.free_cpu_milli;
  int64_t used_mem = n.info.memory_mb - n.free_memory_mb;
  n.info = node;
  n.gpu_busy = busy;
  n.free_cpu_milli = node.cpu_milli - used_cpu;
  n.free_memory_mb = node.memory_mb - used_mem;
}

void Scheduler::RemoveNode(const std::string& name) { impl_->nodes.erase(name); }

void Scheduler::SetQueue(const QueueConfig& queue) { impl_->queues[queue.name] = queue; }

void Scheduler::AddPending(const PendingJob& job) { impl_->pending[job.id] = job; }

void Scheduler::RemovePending(JobId id) {
  impl_->pending.erase(id);
  impl_->last_reason.erase(id);
}

void Scheduler::AddRunning(const RunningJob& run) {
  impl_->pending.erase(run.job.id);
  impl_->Bind(run.placement, run.job.per_replica, true);
  impl_->running[run.job.id] = run;
}

void Scheduler::RemoveRunning(JobId id) {
  auto it = impl_->running.find(id);
  if (it == impl_->running.end()) return;
  impl_->Unbind(it->second.placement, it->second.job.per_replica);
  impl_->running.erase(it);
}

Fit Scheduler::Admit(const PendingJob& job, std::string* why) const {
  int32_t fitting_nodes = 0;
  for (const auto& [name, n] : impl_->nodes) {
    int32_t healthy = 0;
    for (const Gpu& g : n.info.gpus) healthy += g.healthy;
    if (LabelsMatch(n.info, job) && healthy >= job.per_replica.WholeGpus() &&
        n.info.cpu_milli >= job.per_replica.cpu_milli &&
        n.info.memory_mb >= job.per_replica.memory_mb) {
      ++fitting_nodes;
    }
  }
  if (fitting_nodes >= job.replicas) return Fit::kWait;
  if (why) {
    *why = "needs " + std::to_string(job.replicas) + " node(s) with " +
           std::to_string(job.per_replica.WholeGpus()) + " GPU(s), " +
           std::to_string(job.per_replica.cpu_milli / 1000.0) + " CPUs, " +
           std::to_string(job.per_replica.memory_mb) + " MB memory" +
           (job.gpu_model.empty() ? "" : ", GPU model " + job.gpu_model) +
           " each; the cluster has " + std::to_string(fitting_nodes) + " such node(s)";
  }
  return Fit::kInfeasible;
}

Decisions Scheduler::Schedule(TimeMs /*now*/) {
  Decisions d;
  std::vector<const PendingJob*> order;
  for (const auto& [id, j] : impl_->pending) order.push_back(&j);
  std::stable_sort(order.begin(), order.end(), [](const PendingJob* a, const PendingJob* b) {
    if (a->priority != b->priority) return a->priority > b->priority;
    if (a->submitted_at != b->submitted_at) return a->submitted_at < b->submitted_at;
    return a->id < b->id;
  });
  std::vector<JobId> placed;
  for (const PendingJob* job : order) {
    std::vector<ReplicaPlacement> placement;
    if (impl_->TryPlace(*job, &placement)) {
      impl_->running[job->id] = RunningJob{*job, placement, 0};
      d.place.push_back({job->id, std::move(placement)});
      placed.push_back(job->id);
      impl_->last_reason.erase(job->id);
    } else {
      std::string reason = "waiting for free GPUs";
      auto& last = impl_->last_reason[job->id];
      if (last != reason) {
        last = reason;
        d.waiting.push_back({job->id, reason});
      }
    }
  }
  for (JobId id : placed) impl_->pending.erase(id);
  return d;
}

Scheduler::Stats Scheduler::GetStats() const {
  Stats s;
  s.pending = static_cast<int64_t>(impl_->pending.size());
  s.running = static_cast<int64_t>(impl_->running.size());
  for (const auto& [name, n] : impl_->nodes) {
    s.total_gpus += static_cast<int64_t>(n.info.gpus.size());
    s.free_gpus += n.FreeGpus();
  }
  return s;
}

}  // namespace corral::sched
