// Datasets in the simulator (docs/simulation.md, "Datasets"): what the emulated agents do with
// the datasets their runs declare, on virtual time. Each node has a cache as the agent keeps
// one (whole datasets, pinned by the runs using them, evicted least recently used first over a
// high watermark); a dataset a node lacks is fetched from one shared source whose bandwidth
// all fetches under way in the cluster share equally (processor sharing). A replica's process
// waits until every dataset it reads is in its node's cache: its stage-in. Owned and used by
// the simulator's loop (one thread); no wall clock.
#pragma once

#include <utility>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/dataset.h"
#include "core/time.h"

namespace corral::sim {

// A dataset simulated jobs read (dataset_assign.h makes them for a trace).
struct SimDataset {
  std::string name;    // as registered with the head
  std::string digest;  // "sha256:<64 hex>", one per dataset
  int64_t bytes = 0;
};

// SimConfig::data. With no datasets the simulation is the one without data, decision for
// decision.
struct DataConfig {
  std::vector<SimDataset> datasets;  // registered before the first submission
  int64_t node_cache_bytes = 0;      // each node's cache limit; 0: none (nothing is evicted)
  int64_t source_bytes_per_s = 0;    // the source's bandwidth, cluster-wide; > 0 when on
  // false: the scheduler is not told which datasets a job reads (cache-blind placement); the
  // agents still stage them.
  bool placement_aware = true;
  bool on() const { return !datasets.empty(); }
};

// What the nodes did with their data over a simulation.
struct DataStats {
  int64_t stage_ins = 0;        // datasets staged for replicas, found or fetched
  int64_t hits = 0;             // of which found in the node's cache (or being fetched there)
  int64_t fetches = 0;          // copies from the source completed
  int64_t fetched_bytes = 0;    // their bytes
  int64_t evictions = 0;        // unpinned datasets removed over the high watermark
  int64_t staged_replicas = 0;  // replicas that waited for a fetch before starting
  int64_t staging_ms = 0;       // their waits, summed
};

// One node's cache of whole datasets (agent/data/dataset_cache.h's rules): once over 95% of
// its limit, unpinned datasets go, least recently used first, until it is under 70%; a pinned
// one is never evicted (the cache may then exceed its limit).
class SimNodeCache {
 public:
  explicit SimNodeCache(int64_t limit_bytes) : limit_(limit_bytes) {}

  bool Holds(const std::string& digest) const { return entries_.count(digest) > 0; }
  // REQUIRES: Holds(digest).
  void Pin(const std::string& digest, TimeMs now);
  void Unpin(const std::string& digest, TimeMs now);
  // A complete copy arrives, pinned `pins` times (the runs that waited for it); then the
  // eviction. Returns how many datasets it evicted.
  int64_t Publish(const std::string& digest, int64_t bytes, int32_t pins, TimeMs now);
  std::vector<std::string> Digests() const;  // sorted
  int64_t bytes() const { return bytes_; }

 private:
  struct Entry {
    int64_t bytes = 0;
    int32_t pins = 0;
    TimeMs last_use = 0;
  };
  int64_t Evict();

  int64_t limit_;
  int64_t bytes_ = 0;
  std::map<std::string, Entry> entries_;
};

// The shared storage every node fetches from: `bytes_per_s` split equally among the fetches
// under way (processor sharing), whichever nodes they are for.
class SharedSource {
 public:
  explicit SharedSource(int64_t bytes_per_s);

  void Start(uint64_t fetch, int64_t bytes, TimeMs now);
  void Cancel(uint64_t fetch, TimeMs now);
  // The fetches complete at `now` (ascending), gone from the source.
  std::vector<uint64_t> Finish(TimeMs now);
  // When the next fetch completes if none starts or stops meanwhile; -1: none under way.
  TimeMs NextEnd() const;

 private:
  void Advance(TimeMs now);

  double bytes_per_ms_;
  TimeMs at_ = 0;                    // the time `left_` is as of
  std::map<uint64_t, double> left_;  // bytes left to read, by fetch
};

// The nodes' caches, the source and the replicas waiting for their data.
class DataWorld {
 public:
  DataWorld(const DataConfig& config, size_t nodes);

  // Node `node` starts a replica's `process`, which reads `datasets`: those its cache holds
  // are pinned; for the others a fetch starts, or the one already under way for this node is
  // waited for (one fetch per node and dataset). True when all are in place now.
  bool Stage(size_t node, uint64_t process, const std::vector<DatasetRef>& datasets, TimeMs now);
  // What the source completed by `now` is published in the caches (and evicts); returns the
  // processes whose data is now all in place, ascending by (node, process).
  std::vector<std::pair<size_t, uint64_t>> FetchesDone(TimeMs now, std::set<size_t>* nodes_changed);
  TimeMs NextFetchEnd() const { return source_.NextEnd(); }
  // The process no longer waits for its data (its run was stopped); its fetches go on.
  void StopWaiting(size_t node, uint64_t process);
  // The process is over: it waits for nothing and its pins are released.
  void Release(size_t node, uint64_t process, TimeMs now);
  // The node failed: its processes are gone and its fetches stop (nothing partial is kept);
  // its cache, on its local disk, stays.
  void NodeFailed(size_t node, TimeMs now);

  std::vector<std::string> Held(size_t node) const { return caches_.at(node).Digests(); }
  // The first dataset the process still waits for, "" if none.
  std::string Awaited(size_t node, uint64_t process) const;
  const DataStats& stats() const { return stats_; }

 private:
  using Key = std::pair<size_t, uint64_t>;  // (node, process)
  struct Fetch {
    size_t node = 0;
    std::string digest;
    int64_t bytes = 0;
  };
  struct Waiter {
    std::map<std::string, std::string> missing;  // digest -> name
    TimeMs since = 0;
  };
  void Publish(const Fetch& f, TimeMs now, std::vector<Key>* ready);

  std::vector<SimNodeCache> caches_;
  SharedSource source_;
  std::map<uint64_t, Fetch> fetches_;
  std::map<std::pair<size_t, std::string>, uint64_t> fetching_;  // (node, digest) -> fetch
  std::map<Key, Waiter> waiting_;
  std::map<Key, std::vector<std::string>> pins_;
  uint64_t next_fetch_ = 1;
  DataStats stats_;
};

}  // namespace corral::sim
