// Derived state that is a function of the cluster state alone. Each index follows the changes
// (Apply, called after the change is applied to the state) and can be rebuilt from the state
// (Rebuild, on recovery): one type with its two methods per fact, so the live path and the
// recovery path cannot drift apart. What is not an index but a decision (admission and holds,
// the scheduler's model, orders to agents) stays in HeadCore.
#pragma once

#include <utility>

#include <map>
#include <set>
#include <string>
#include <tuple>

#include "head/cluster_state.h"
#include "head/core_services.h"
#include "head/datasets.h"
#include "head/elastic_sizes.h"

namespace corral::head {

// The jobs with a live run (scheduled or running), and by node the jobs with a run there.
class ActiveRuns {
 public:
  void Apply(const ClusterState& s, const Change& c);
  void Rebuild(const ClusterState& s, TimeMs now);

  const std::set<JobId>& jobs() const { return jobs_; }
  bool IsActive(JobId id) const { return jobs_.count(id) > 0; }
  // Empty for a node with none.
  const std::set<JobId>& OnNode(const std::string& node) const;
  const std::map<std::string, std::set<JobId>>& by_node() const { return by_node_; }
  bool operator==(const ActiveRuns&) const = default;

 private:
  std::set<JobId> jobs_;
  std::map<std::string, std::set<JobId>> by_node_;  // no empty sets
};

// Pending jobs per (queue, owner), for the queues' max_pending_per_user.
class PendingCounts {
 public:
  using Key = std::pair<std::string, std::string>;  // (queue, owner)
  void Apply(const ClusterState& s, const Change& c);
  void Rebuild(const ClusterState& s, TimeMs now);

  int32_t Of(const std::string& queue, const std::string& owner) const;
  const std::map<Key, int32_t>& all() const { return counts_; }  // no zeros
  bool operator==(const PendingCounts&) const = default;

 private:
  void Add(const Job& job, int32_t delta);
  void Add(const std::string& queue, const std::string& owner, int32_t delta);
  std::map<Key, int32_t> counts_;
};

// Submissions by (owner, request id), so a retried submission gets the job it made.
class RequestIds {
 public:
  using Key = std::pair<std::string, std::string>;  // (owner, request id)
  void Apply(const ClusterState& s, const Change& c);
  void Rebuild(const ClusterState& s, TimeMs now);

  // 0: none.
  JobId Find(const std::string& owner, const std::string& request_id) const;
  const std::map<Key, JobId>& all() const { return ids_; }
  bool operator==(const RequestIds&) const = default;

 private:
  void Add(const Job& job);
  std::map<Key, JobId> ids_;
};

// The indexes the core keeps, applied and rebuilt together. Adding derived state is one type
// above with Apply and Rebuild, and its name in this list.
template <typename... Index>
class IndexSet {
 public:
  void Apply(const ClusterState& s, const Change& c) { (std::get<Index>(all_).Apply(s, c), ...); }
  void Rebuild(const ClusterState& s, TimeMs now) {
    all_ = {};
    (std::get<Index>(all_).Rebuild(s, now), ...);
  }
  template <typename T>
  const T& get() const {
    return std::get<T>(all_);
  }
  bool operator==(const IndexSet&) const = default;

 private:
  std::tuple<Index...> all_;
};

using CoreIndexes =
    IndexSet<ActiveRuns, PendingCounts, RequestIds, ElasticSizes, DatasetUsers, Services>;

}  // namespace corral::head
