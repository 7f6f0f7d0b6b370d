// Idle GPUs (DESIGN §11): a running run whose GPUs all stay under a utilisation threshold for a
// while is flagged idle. Built from the agents' samples, which are observations like
// last-heard times: nothing here is a change, nothing is durable, and a restarted head starts
// the idle clocks again.
#include <algorithm>

#include "core/spec.h"
#include "head/head_core.h"

namespace corral::head {

void HeadCore::ObserveUse(const std::string& node, TimeMs now) {
  auto samples = gpu_samples_.find(node);
  if (samples == gpu_samples_.end()) return;
  for (JobId id : active().OnNode(node)) {
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
  StopIdle(now);
}

namespace {

bool InQueue(const std::set<std::string>& queues, const std::string& queue) {
  for (const std::string& q : queues) {
    if (queue == q ||
        (queue.size() > q.size() && queue.compare(0, q.size(), q) == 0 && queue[q.size()] == '/')) {
      return true;
    }
  }
  return false;
}

}  // namespace

// The second half of the idle rule, for queues that opt in: a warning (a durable job event the
// owner sees in `corral show` and the event stream), then, if the GPUs stay idle through the
// warning period, a stop. Only preemptible runs: their owners accepted being stopped for
// others. The run is cancelled rather than requeued, since a requeued idle job would only
// hold GPUs idle again. A run used again before its stop is forgiven: its clocks start over.
void HeadCore::StopIdle(TimeMs now) {
  for (auto it = idle_stop_at_.begin(); it != idle_stop_at_.end();) {
    auto idle = idle_.find(it->first.job);
    auto job = state_.jobs.find(it->first.job);
    const Run* run = job == state_.jobs.end() ? nullptr : job->second.CurrentRun();
    bool still = idle != idle_.end() && run && run->attempt == it->first.attempt;
    it = still ? std::next(it) : idle_stop_at_.erase(it);
  }
  if (config_.idle_stop_queues.empty()) return;
  std::vector<std::pair<JobId, TimeMs>> warn, stop;
  for (const auto& [id, since] : idle_) {
    const Job& job = state_.jobs.at(id);
    const Run* run = job.CurrentRun();
    if (!job.spec.preemptible || !run || run->stop_requested ||
        !InQueue(config_.idle_stop_queues, job.spec.queue)) {
      continue;
    }
    auto at = idle_stop_at_.find(RunId{id, run->attempt});
    if (at == idle_stop_at_.end()) {
      warn.emplace_back(id, since);
    } else if (now >= at->second) {
      stop.emplace_back(id, since);
    }
  }
  for (const auto& [id, since] : warn) {
    int32_t attempt = state_.jobs.at(id).CurrentRun()->attempt;
    TimeMs stop_at = now + config_.idle_stop_warning_ms;
    idle_stop_at_[RunId{id, attempt}] = stop_at;
    Emit(Caller::System(), now, IdleWarned{id, attempt, since, stop_at});
  }
  for (const auto& [id, since] : stop) {
    // Cancelled: the run ends cancelled, and so does the job (core_jobs.cc).
    RequestStop(state_.jobs.at(id), StopCause::kCancelled,
                std::string(kReasonCancelled) + ": its GPUs stayed under " +
                    std::to_string(config_.idle_threshold_percent) + "% use for " +
                    FormatDuration(now - since) + " (queue " + state_.jobs.at(id).spec.queue +
                    " stops idle runs)",
                now);
  }
}

}  // namespace corral::head
