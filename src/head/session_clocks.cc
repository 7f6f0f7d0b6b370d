// The two rules that end a session no one uses: its client is gone (the head's inactive
// limit, as Slurm's InactiveLimit), or its terminal (a notebook's kernels and terminals) and
// GPUs stay idle past its queue's idle_timeout, after a warning.
#include "head/session_clocks.h"

#include <algorithm>

#include "core/spec.h"
#include "core/stop_cause.h"

namespace corral::head {

void SessionClocks::Rebuild(const ClusterState& s, TimeMs now) {
  heard_.clear();
  stop_at_.clear();
  for (const auto& [id, job] : s.jobs) {
    if (job.spec.interactive && !IsTerminal(job.state)) Start(id, now);
  }
}

void SessionClocks::Start(JobId job, TimeMs now) { heard_[job] = {now, now}; }

void SessionClocks::Heard(JobId job, bool typed, TimeMs now) {
  auto s = heard_.find(job);
  if (s == heard_.end()) return;
  s->second.heard = now;
  if (typed) s->second.typed = now;
}

void SessionClocks::KernelActivity(JobId job, int64_t idle_ms, TimeMs now) {
  auto s = heard_.find(job);
  if (s == heard_.end()) return;
  s->second.kernel = std::max(s->second.kernel, now - idle_ms);
  s->second.kernel_busy = idle_ms == 0;
}

TimeMs SessionClocks::UserIdleSince(JobId job, TimeMs started) const {
  auto heard = heard_.find(job);
  if (heard == heard_.end()) return started;
  if (heard->second.kernel_busy) return 0;
  return std::max({started, heard->second.typed, heard->second.kernel});
}

std::optional<TimeMs> SessionClocks::StopAt(RunId run) const {
  auto at = stop_at_.find(run);
  if (at == stop_at_.end()) return std::nullopt;
  return at->second;
}

std::optional<std::string> SessionClocks::ClientGone(const Job& job, const Clock& h,
                                                     const Rules& rules, TimeMs now) const {
  // A notebook has no attached client: its browser comes and goes, and only idle culling
  // ends it.
  if (rules.inactive_limit_ms <= 0 || job.spec.notebook ||
      now - h.heard <= rules.inactive_limit_ms) {
    return std::nullopt;
  }
  return std::string(kReasonCancelled) + ": its client has not been heard from for " +
         FormatDuration(now - h.heard) + " (the head's inactive limit is " +
         FormatDuration(rules.inactive_limit_ms) + ")";
}

void SessionClocks::CheckIdle(const ClusterState& s, const Job& job, const Run& run,
                              const Rules& rules, const IdleSince& idle_since, TimeMs now,
                              Verdicts* out) {
  auto queue = s.queues.find(job.spec.queue);
  DurationMs timeout = queue == s.queues.end() ? 0 : queue->second.idle_timeout_ms;
  if (timeout <= 0 || job.state != JobState::kRunning || run.state != RunState::kRunning) return;
  RunId key{job.id, run.attempt};
  TimeMs since = idle_since(job, run);
  if (since == 0 || now - since < timeout) {
    stop_at_.erase(key);  // used again: forgiven, the clock starts over
    return;
  }
  auto at = stop_at_.find(key);
  if (at == stop_at_.end()) {
    out->warn.emplace_back(job.id, since);
    return;
  }
  if (now < at->second) return;
  bool gpus = std::any_of(run.placement.begin(), run.placement.end(),
                          [](const ReplicaPlacement& p) { return !p.gpus.empty(); });
  out->end.emplace_back(
      job.id,
      std::string(kReasonCancelled) + ": idle for " + FormatDuration(now - since) +
          (job.spec.notebook ? ": no kernel or terminal activity in its notebook"
                             : ": no terminal input") +
          (gpus ? " and its GPUs under " + std::to_string(rules.idle_threshold_percent) + "% use"
                : std::string()) +
          " (queue " + job.spec.queue + "'s idle_timeout is " + FormatDuration(timeout) + ")");
}

SessionClocks::Verdicts SessionClocks::Check(const ClusterState& s, const Rules& rules,
                                             const IdleSince& idle_since, TimeMs now) {
  Verdicts out;
  for (auto it = heard_.begin(); it != heard_.end();) {
    auto job = s.jobs.find(it->first);
    if (job == s.jobs.end() || IsTerminal(job->second.state)) {
      it = heard_.erase(it);
      continue;
    }
    const Job& j = job->second;
    const Run* run = j.CurrentRun();
    if (run != nullptr && run->stop_requested) {
      ++it;
      continue;
    }
    if (std::optional<std::string> gone = ClientGone(j, it->second, rules, now)) {
      out.end.emplace_back(j.id, std::move(*gone));
    } else if (run != nullptr) {
      CheckIdle(s, j, *run, rules, idle_since, now, &out);
    }
    ++it;
  }
  return out;
}

}  // namespace corral::head
