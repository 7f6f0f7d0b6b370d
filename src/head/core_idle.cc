// Idle GPUs (DESIGN §11): a running run whose GPUs all stay under a utilisation threshold for a
// while is flagged idle. Built from the agents' samples, which are observations like
// last-heard times: nothing here is a change, nothing is durable, and a restarted head starts
// the idle clocks again.
#include <algorithm>

#include "head/head_core.h"

namespace corral::head {

void HeadCore::ObserveUse(const std::string& node, TimeMs now) {
  auto samples = gpu_samples_.find(node);
  auto runs = node_runs_.find(node);
  if (samples == gpu_samples_.end() || runs == node_runs_.end()) return;
  for (JobId id : runs->second) {
    const Run& run = *state_.jobs.at(id).CurrentRun();
    RunId key{id, run.attempt};
    if (run.state != RunState::kRunning) continue;
    bool holds_gpus = false, busy = false;
    for (const ReplicaPlacement& p : run.placement) {
      if (p.node != node) continue;
      for (int32_t gpu : p.gpus) {
        holds_gpus = true;
        auto s = std::find_if(samples->second.begin(), samples->second.end(),
                              [&](const GpuSample& x) { return x.index == gpu; });
        // An unmeasured GPU counts as busy: never call a run idle on missing data.
        if (s == samples->second.end() ||
            s->utilization_percent >= config_.idle_threshold_percent) {
          busy = true;
        }
      }
    }
    if (!holds_gpus) continue;
    if (busy) {
      low_since_[key].erase(node);
    } else {
      low_since_[key].try_emplace(node, now);
    }
  }
  FlagIdle(now);
}

void HeadCore::FlagIdle(TimeMs now) {
  idle_.clear();
  for (auto it = low_since_.begin(); it != low_since_.end();) {
    const RunId& key = it->first;
    auto job = state_.jobs.find(key.job);
    const Run* run = job == state_.jobs.end() ? nullptr : job->second.CurrentRun();
    if (run == nullptr || run->attempt != key.attempt || run->state != RunState::kRunning) {
      it = low_since_.erase(it);  // the run is over (or requeued): its clocks go with it
      continue;
    }
    // Idle only when every node holding its GPUs says so, since the latest of them.
    TimeMs since = 0;
    bool all = true, any = false;
    for (const ReplicaPlacement& p : run->placement) {
      if (p.gpus.empty()) continue;
      any = true;
      auto n = it->second.find(p.node);
      if (n == it->second.end()) {
        all = false;
        break;
      }
      since = std::max(since, n->second);
    }
    if (all && any && now - since >= config_.idle_after_ms) idle_[key.job] = since;
    ++it;
  }
}

}  // namespace corral::head
