// What the head knows of each node beyond the durable state: the version of the orders it was
// given and which jobs' orders changed at each (desired_log.h), when its agent was last heard
// from, and what its last sync reported (ports in use, the image cache, the datasets cached).
// Observations and bookkeeping, not durable: a new leadership starts every node's orders at
// epoch << 32 and gives every agent a full timeout to reconnect; a new head learns the reports
// at the agents' next syncs.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "head/cluster_state.h"
#include "head/desired_log.h"

namespace corral::head {

class NodeWatch {
 public:
  // Recovery: every node of the state gets a fresh orders log of this epoch and is heard now.
  void Rebuild(const ClusterState& s, TimeMs now);
  // HeadStarted: every known node's orders start afresh in the new epoch.
  void NewEpoch(const ClusterState& s);
  // A node registered (again): it keeps its orders log, or gets one of this epoch.
  void Registered(const std::string& node, uint64_t epoch, TimeMs at);

  // A removed node: everything known of it.
  void Forget(const std::string& node);

  // Orders.
  void Changed(const std::string& node, JobId job) { logs_[node].Changed(job); }
  void ChangedAll(const std::string& node) { logs_[node].ChangedAll(); }
  uint64_t Version(const std::string& node, uint64_t epoch) const;
  const DesiredLog* LogOf(const std::string& node) const;

  // Liveness: a sync received now.
  void Heard(const std::string& node, TimeMs now) { last_heard_[node] = now; }
  // When it was last heard from; a node never heard from starts its timeout now.
  TimeMs LastHeard(const std::string& node, TimeMs now);
  std::optional<TimeMs> LastHeardIfAny(const std::string& node) const;

  // Reports of its last sync.
  void ObservePorts(const std::string& node, const std::vector<int32_t>& ports);
  const std::set<int32_t>& BusyPorts(const std::string& node) const;  // empty if none
  void ObserveImageCache(const std::string& node, const ImageCacheReport& cache);
  const ImageCacheReport* ImageCacheOf(const std::string& node) const;
  // True when the node's cached datasets (their digests) changed.
  bool ObserveDatasets(const std::string& node, const std::vector<std::string>& digests);
  // node -> digests of its cached datasets; no node with none.
  const std::map<std::string, std::set<std::string>>& dataset_holders() const {
    return dataset_holders_;
  }

 private:
  std::map<std::string, DesiredLog> logs_;  // per node: its version and recent changes
  std::map<std::string, TimeMs> last_heard_;
  std::map<std::string, std::set<int32_t>> busy_ports_;  // ports a socket holds
  std::map<std::string, ImageCacheReport> image_caches_;
  std::map<std::string, std::set<std::string>> dataset_holders_;
};

}  // namespace corral::head
