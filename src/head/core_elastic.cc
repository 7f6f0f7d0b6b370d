// Elastic runs in the head's core (docs/elastic.md): the scheduler's resize decisions become
// JobResized changes, and a lost node drops its replicas from an elastic run that keeps its
// minimum instead of ending the run.
#include <algorithm>

#include "core/task_env.h"
#include "head/head_core.h"

namespace corral::head {
namespace {

// Positions in `run` of the live replicas placed as `want` (node and GPUs); -1 for any not found.
std::vector<int32_t> ElasticPositionsOf(const Run& run, const std::vector<ReplicaPlacement>& want) {
  std::vector<int32_t> out;
  for (const ReplicaPlacement& w : want) {
    int32_t found = -1;
    for (size_t i = 0; i < run.placement.size() && found < 0; ++i) {
      const int32_t r = static_cast<int32_t>(i);
      const ReplicaPlacement& p = run.placement[i];
      if (!run.Departed(r) && p.node == w.node && p.gpus == w.gpus &&
          std::find(out.begin(), out.end(), r) == out.end()) {
        found = r;
      }
    }
    out.push_back(found);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The port of job `id`'s rendezvous store on the head's host.
int32_t ElasticRendezvousPort(const CoreConfig& c, JobId id) {
  const int64_t span = std::max<int64_t>(1, int64_t{c.rdzv_port_hi} - c.rdzv_port_lo + 1);
  return c.rdzv_port_lo + static_cast<int32_t>(id % static_cast<uint64_t>(span));
}

bool ElasticRunIsOpen(const Job& job) {
  const Run* run = job.CurrentRun();
  return job.spec.IsElastic() && !job.spec.batch && run && !IsRunOver(run->state) &&
         !run->stop_requested;
}

}  // namespace

void HeadCore::ResizeRun(const sched::ResizeDecision& d, TimeMs now) {
  auto it = state_.jobs.find(d.job);
  if (it == state_.jobs.end() || !ElasticRunIsOpen(it->second)) {
    // Stale: the run ended or is stopping. The scheduler holds what the state says it holds.
    if (it != state_.jobs.end() && active().IsActive(d.job)) {
      const Run& run = *it->second.CurrentRun();
      model_.scheduler().ResizeRunning(d.job, run.HeldPlacement(), run.Leaving());
    }
    return;
  }
  const Job& job = it->second;
  const Run& run = *job.CurrentRun();
  const std::vector<int32_t> removed = ElasticPositionsOf(run, d.removed);
  if (!removed.empty() && removed.front() < 0) {  // not the run the scheduler saw: resync it
    model_.scheduler().ResizeRunning(d.job, run.HeldPlacement(), run.Leaving());
    return;
  }
  JobResized change{job.id, run.attempt, {}, {}, ResizeCause::kGrow, d.reason};
  if (!d.added.empty()) {
    change.added = d.added;
    for (ReplicaPlacement& p : change.added) p.tasks = TasksFor(job.spec, p);
  } else {
    change.cause = ResizeCause::kReclaim;
    change.removed = removed;
  }
  Emit(Caller::System(), now, std::move(change));
}

bool HeadCore::DropLostReplicas(const Job& job, const std::string& node, TimeMs now) {
  if (!ElasticRunIsOpen(job)) return false;
  // Replicas that were leaving the run from there will never say they exited: they are gone
  // with the node, and what they held is free for the job they left for.
  for (size_t i = 0; i < job.CurrentRun()->placement.size(); ++i) {
    const Run& run = *state_.jobs.at(job.id).CurrentRun();
    const int32_t r = static_cast<int32_t>(i);
    if (run.placement[i].node == node && run.Departed(r) && run.exit_codes[i] == kNotExited) {
      Emit(Caller::System(), now, ReplicaExited{job.id, run.attempt, r, kReplicaLost, -1, 0, 0});
    }
  }
  const Run& run = *state_.jobs.at(job.id).CurrentRun();
  std::vector<int32_t> lost;
  for (size_t i = 0; i < run.placement.size(); ++i) {
    const int32_t r = static_cast<int32_t>(i);
    if (run.placement[i].node == node && !run.Departed(r) && run.exit_codes[i] == kNotExited) {
      lost.push_back(r);
    }
  }
  const int32_t left = run.LiveReplicas() - static_cast<int32_t>(lost.size());
  if (lost.empty() || left < job.spec.min_replicas) return false;
  Emit(Caller::System(), now,
       JobResized{job.id,
                  run.attempt,
                  {},
                  lost,
                  ResizeCause::kNodeLost,
                  "node " + node + " lost; " + std::to_string(left) +
                      " replica(s) go on (minimum " + std::to_string(job.spec.min_replicas) + ")"});
  return true;
}

void HeadCore::AddRendezvousEnv(Job* job) const {
  if (config_.rdzv_host.empty()) return;
  std::map<std::string, std::string>& env = job->spec.env;
  const std::string port = std::to_string(ElasticRendezvousPort(config_, job->id));
  // A user's own value wins: they may run their own store.
  env.try_emplace("CORRAL_RDZV_ENDPOINT", config_.rdzv_host + ":" + port);
  env.try_emplace("CORRAL_RDZV_ID", "corral-job-" + std::to_string(job->id));
  env.try_emplace("CORRAL_NNODES", std::to_string(job->spec.min_replicas) + ":" +
                                       std::to_string(job->spec.replicas));
  // The store is not on any replica's node (is_host=false), and a joining or leaving replica
  // is taken in seconds, not torchrun's default 30 s.
  env.try_emplace("CORRAL_RDZV_CONF", "is_host=false,last_call_timeout=3");
}

std::map<JobId, int32_t> HeadCore::RendezvousWanted() const {
  std::map<JobId, int32_t> out;
  if (config_.rdzv_host.empty()) return out;
  for (const auto& [id, size] : indexes_.get<ElasticSizes>().all()) {
    if (!state_.jobs.at(id).spec.batch) out[id] = ElasticRendezvousPort(config_, id);
  }
  return out;
}

}  // namespace corral::head
