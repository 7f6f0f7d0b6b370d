// What the head sees of the GPUs (DESIGN §11): each node's last samples, the health checks and
// Xids seen, and which runs' GPUs have stayed idle. Observations like last-heard times: nothing
// here is durable, and a new leadership (or a new agent, for its checks) counts afresh. The
// core turns what it decides (drains, stops, warnings) into changes.
#pragma once

#include <utility>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "head/cluster_state.h"

namespace corral::head {

class GpuWatch {
 public:
  // Samples: each node's, as its agent last reported.
  void Observe(const std::string& node, std::vector<GpuSample> samples);
  const std::vector<GpuSample>* SamplesOf(const std::string& node) const;
  // A removed node: its samples, checks and Xid counts.
  void Forget(const std::string& node);

  // Health checks seen, per node and GPU: the last check taken, and the clean ones in a row
  // since a health drain.
  struct Checks {
    uint64_t last = 0;
    int32_t clean = 0;
  };
  Checks& ChecksOf(const std::string& node, int32_t gpu) { return checks_[node][gpu]; }
  void ForgetChecks(const std::string& node) { checks_.erase(node); }  // a new agent counts from 1
  void CountXid(const std::string& node, int32_t xid) { ++xid_counts_[{node, xid}]; }
  // (node, Xid) -> times seen.
  const std::map<std::pair<std::string, int32_t>, int64_t>& xid_counts() const {
    return xid_counts_;
  }

  // Idle GPUs: `node`'s samples against the runs there (`on_node`); a run whose GPUs there are
  // all under `threshold_percent` is low there since the first such sample. An unmeasured GPU
  // counts as busy: never call a run idle on missing data.
  void ObserveUse(const ClusterState& s, const std::set<JobId>& on_node, const std::string& node,
                  int32_t threshold_percent, TimeMs now);
  // The runs idle for `idle_after_ms` on every node holding their GPUs; drops the clocks of runs
  // that are over.
  void FlagIdle(const ClusterState& s, DurationMs idle_after_ms, TimeMs now);
  const std::map<JobId, TimeMs>& idle() const { return idle_; }  // job -> idle since
  // Since when a run's GPUs on `node` have been low, if they are.
  std::optional<TimeMs> LowSince(RunId run, const std::string& node) const;

  // Idle runs of the queues that stop them: the ones to warn (with since when idle), the ones
  // whose warning ran out (the same). A run used again before its stop is forgiven.
  struct IdleStops {
    std::vector<std::pair<JobId, TimeMs>> warn, stop;
  };
  IdleStops DueStops(const ClusterState& s, const std::set<std::string>& queues, TimeMs now);
  void Warned(RunId run, TimeMs stop_at) { idle_stop_at_[run] = stop_at; }

 private:
  std::map<std::string, std::vector<GpuSample>> samples_;
  std::map<std::string, std::map<int32_t, Checks>> checks_;
  std::map<std::pair<std::string, int32_t>, int64_t> xid_counts_;
  std::map<RunId, std::map<std::string, TimeMs>> low_since_;  // per run and node
  std::map<JobId, TimeMs> idle_;                              // job -> idle since
  std::map<RunId, TimeMs> idle_stop_at_;                      // warned runs -> when they stop
};

}  // namespace corral::head
