// The sizes of elastic jobs' runs (docs/elastic.md): for each elastic job with a live run, its
// range and how many replicas it holds now. A component of the head's core like the indexes of
// core_indexes.h: it follows the changes (Apply, after the change is applied to the state:
// RunPlaced, JobResized, RunEnded, retirements) and is rebuilt from the state on recovery
// (Rebuild), so a restarted head knows every elastic run's size as the old one did. What the
// scheduler decides from it stays in the scheduler; this is what the head shows and counts.
#pragma once

#include <utility>

#include <cstdint>
#include <map>

#include "head/cluster_state.h"

namespace corral::head {

struct ElasticSize {
  int32_t attempt = 0;
  int32_t min = 0;      // JobSpec::min_replicas
  int32_t max = 0;      // JobSpec::replicas
  int32_t current = 0;  // replicas held now (placement less those that left)
  int32_t resizes = 0;  // grows and shrinks of this run
  bool operator==(const ElasticSize&) const = default;
};

class ElasticSizes {
 public:
  void Apply(const ClusterState& s, const Change& c);
  void Rebuild(const ClusterState& s, TimeMs now);

  // nullptr: not elastic, or no live run.
  const ElasticSize* Of(JobId id) const;
  const std::map<JobId, ElasticSize>& all() const { return sizes_; }
  // Resizes applied since this head started (grown, shrunk), for metrics; not part of ==.
  int64_t grown() const { return grown_; }
  int64_t shrunk() const { return shrunk_; }
  bool operator==(const ElasticSizes& o) const { return sizes_ == o.sizes_; }

 private:
  void Set(const Job& job);
  std::map<JobId, ElasticSize> sizes_;
  int64_t grown_ = 0;
  int64_t shrunk_ = 0;
};

}  // namespace corral::head
