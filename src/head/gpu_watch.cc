// GPU use and idleness from the agents' samples (see gpu_watch.h).
#include "head/gpu_watch.h"

#include <algorithm>

namespace corral::head {
namespace {

// A queue or one of its children in the tree ("a" holds "a/b").
bool InQueueTree(const std::set<std::string>& queues, const std::string& queue) {
  for (const std::string& q : queues) {
    if (queue == q ||
        (queue.size() > q.size() && queue.compare(0, q.size(), q) == 0 && queue[q.size()] == '/')) {
      return true;
    }
  }
  return false;
}

// Whether every GPU of `run` on `node` is measured under the threshold; nullopt when the run
// holds no GPU there.
std::optional<bool> AllLow(const Run& run, const std::string& node,
                           const std::vector<GpuSample>& samples, int32_t threshold_percent) {
  bool holds_gpus = false, busy = false;
  for (const ReplicaPlacement& p : run.placement) {
    if (p.node != node) continue;
    for (int32_t gpu : p.gpus) {
      holds_gpus = true;
      auto s = std::find_if(samples.begin(), samples.end(),
                            [&](const GpuSample& x) { return x.index == gpu; });
      if (s == samples.end() || s->utilization_percent >= threshold_percent) busy = true;
    }
  }
  if (!holds_gpus) return std::nullopt;
  return !busy;
}

}  // namespace

void GpuWatch::Observe(const std::string& node, std::vector<GpuSample> samples) {
  samples_[node] = std::move(samples);
}

void GpuWatch::Forget(const std::string& node) {
  samples_.erase(node);
  checks_.erase(node);
  std::erase_if(xid_counts_, [&](const auto& kv) { return kv.first.first == node; });
}

const std::vector<GpuSample>* GpuWatch::SamplesOf(const std::string& node) const {
  auto it = samples_.find(node);
  return it == samples_.end() ? nullptr : &it->second;
}

void GpuWatch::ObserveUse(const ClusterState& s, const std::set<JobId>& on_node,
                          const std::string& node, int32_t threshold_percent, TimeMs now) {
  const std::vector<GpuSample>* samples = SamplesOf(node);
  if (samples == nullptr) return;
  for (JobId id : on_node) {
    const Run& run = *s.jobs.at(id).CurrentRun();
    if (run.state != RunState::kRunning) continue;
    std::optional<bool> low = AllLow(run, node, *samples, threshold_percent);
    if (!low) continue;
    RunId key{id, run.attempt};
    if (*low) {
      low_since_[key].try_emplace(node, now);
    } else {
      low_since_[key].erase(node);
    }
  }
}

void GpuWatch::FlagIdle(const ClusterState& s, DurationMs idle_after_ms, TimeMs now) {
  idle_.clear();
  for (auto it = low_since_.begin(); it != low_since_.end();) {
    const RunId& key = it->first;
    auto job = s.jobs.find(key.job);
    const Run* run = job == s.jobs.end() ? nullptr : job->second.CurrentRun();
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
    if (all && any && now - since >= idle_after_ms) idle_[key.job] = since;
    ++it;
  }
}

std::optional<TimeMs> GpuWatch::LowSince(RunId run, const std::string& node) const {
  auto low = low_since_.find(run);
  if (low == low_since_.end()) return std::nullopt;
  auto n = low->second.find(node);
  if (n == low->second.end()) return std::nullopt;
  return n->second;
}

GpuWatch::IdleStops GpuWatch::DueStops(const ClusterState& s, const std::set<std::string>& queues,
                                       TimeMs now) {
  for (auto it = idle_stop_at_.begin(); it != idle_stop_at_.end();) {
    auto job = s.jobs.find(it->first.job);
    const Run* run = job == s.jobs.end() ? nullptr : job->second.CurrentRun();
    bool still = idle_.count(it->first.job) && run && run->attempt == it->first.attempt;
    it = still ? std::next(it) : idle_stop_at_.erase(it);
  }
  IdleStops out;
  if (queues.empty()) return out;
  for (const auto& [id, since] : idle_) {
    const Job& job = s.jobs.at(id);
    const Run* run = job.CurrentRun();
    if (!job.spec.preemptible || !run || run->stop_requested ||
        !InQueueTree(queues, job.spec.queue)) {
      continue;
    }
    auto at = idle_stop_at_.find(RunId{id, run->attempt});
    if (at == idle_stop_at_.end()) {
      out.warn.emplace_back(id, since);
    } else if (now >= at->second) {
      out.stop.emplace_back(id, since);
    }
  }
  return out;
}

}  // namespace corral::head
