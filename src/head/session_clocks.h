// The clocks of live interactive sessions (docs/interactive.md): when each one's client was
// last heard from and last typed, when its notebook's kernels were last active, and the runs
// warned that they end for idleness. Observations, like an agent's last-heard time: not
// durable, and a new leadership starts every session's clocks afresh (Rebuild).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "head/cluster_state.h"

namespace corral::head {

class SessionClocks {
 public:
  // Every session not over gets a full inactive limit to reach a new leadership.
  void Rebuild(const ClusterState& s, TimeMs now);
  void Start(JobId job, TimeMs now);
  // Its client was heard from (and typed, with `typed`); nothing for a job that is no session.
  void Heard(JobId job, bool typed, TimeMs now);
  // A notebook's agent says its kernels or terminals were last active `idle_ms` ago: taken as
  // a time on the head's clock, so that the two clocks need not agree. A kernel running a cell
  // (0) is in use until a report says otherwise.
  void KernelActivity(JobId job, int64_t idle_ms, TimeMs now);
  // Since when its user has left it alone (no typing, no kernel activity), at the earliest
  // `started`; 0 while a kernel runs a cell.
  TimeMs UserIdleSince(JobId job, TimeMs started) const;

  // The decisions of one check, for the core to emit: sessions to end (with why), sessions
  // to warn (with since when they have been idle).
  struct Verdicts {
    std::vector<std::pair<JobId, std::string>> end;
    std::vector<std::pair<JobId, TimeMs>> warn;
  };
  struct Rules {
    DurationMs inactive_limit_ms = 0;  // 0: clients are never timed out
    int32_t idle_threshold_percent = 0;
  };
  // Since when a running session has been idle, users and GPUs together (0: in use).
  using IdleSince = std::function<TimeMs(const Job&, const Run&)>;
  // Drops the sessions that are over; forgives the ones used again.
  Verdicts Check(const ClusterState& s, const Rules& rules, const IdleSince& idle_since,
                 TimeMs now);
  // When a warned run ends, if it was warned and not used since.
  std::optional<TimeMs> StopAt(RunId run) const;
  void Warned(RunId run, TimeMs stop_at) { stop_at_[run] = stop_at; }

 private:
  struct Clock {
    TimeMs heard = 0;
    TimeMs typed = 0;
    TimeMs kernel = 0;         // a notebook's last kernel or terminal activity
    bool kernel_busy = false;  // its agent said last that a kernel runs a cell
  };
  // Why a session's client is timed out, or nullopt.
  std::optional<std::string> ClientGone(const Job& job, const Clock& h, const Rules& rules,
                                        TimeMs now) const;
  void CheckIdle(const ClusterState& s, const Job& job, const Run& run, const Rules& rules,
                 const IdleSince& idle_since, TimeMs now, Verdicts* out);

  std::map<JobId, Clock> heard_;
  std::map<RunId, TimeMs> stop_at_;  // idle-warned sessions -> when they end
};

}  // namespace corral::head
