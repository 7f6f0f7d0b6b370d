// Staging a run's datasets before its processes start (docs/datasets.md): each new run that
// declares datasets gets a thread of its own that brings them into the node's cache
// (dataset_cache.h: one fetch per dataset version however many runs race for it) and pins
// them; the supervisor starts the run once all are in place, or reports it failed, naming
// the dataset and its source, if one cannot be. The pins go when the run is over.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/data/dataset_cache.h"
#include "core/agent_protocol.h"
#include "core/metrics.h"
#include "core/status.h"

namespace corral::agent {

struct StagingKey {
  std::string run_id;
  int32_t replica = 0;
  auto operator<=>(const StagingKey&) const = default;
};

class DatasetStager {
 public:
  // as_owner: check, as each run's owner, that they may read the source (an agent that runs
  // jobs as their owners); else every job is the agent's own user's. `clock`: the cache's
  // (DatasetCache).
  DatasetStager(DatasetCacheConfig config, bool as_owner, std::string node, const NodeClock& clock);
  ~DatasetStager();
  DatasetStager(const DatasetStager&) = delete;
  DatasetStager& operator=(const DatasetStager&) = delete;

  // Begins staging the order's datasets (once per key).
  void Start(const RunOrder& order);
  bool Started(const StagingKey& key) const;
  // Once staging is over: the order with each dataset's place in its tasks' environment (and,
  // in a container, mounted read-only at its mount point), or why it could not be staged.
  // nullopt while it goes on.
  std::optional<Result<RunOrder>> Take(const StagingKey& key);
  // "staging imagenet on node2: 41%" while it goes on, "" otherwise.
  std::string Note(const StagingKey& key) const;
  // Pins again the datasets of a run found running at the agent's start (cached: no fetch).
  void Repin(const RunOrder& order);
  // The run is over: its datasets may be evicted again.
  void Release(const StagingKey& key);
  // Fetches ahead what the head asks of this node for jobs reserved here (PrefetchOrder), each
  // job's datasets in turn on a thread of its own, as its owner, through the same queue per
  // source as a run's staging. Once per job while it is asked; a job no longer asked stops
  // after the dataset it is fetching, and is forgotten. Only into free space: a job whose
  // lacking datasets would take the cache over its high watermark is not fetched (its report
  // says so) until the head asks again and they fit. Nothing fetched ahead stays pinned.
  void Prefetch(const std::vector<PrefetchOrder>& orders);
  // The fetches ahead under way (their progress), failed, or left out for want of space.
  std::vector<PrefetchReport> Prefetching() const;
  // Evicts over the high watermark; the digests the cache holds.
  std::vector<std::string> Held();
  // The cache's metrics for the agent's /metrics: its size and limit now, stage-ins by result
  // (the hit ratio is cached over cached + fetched), bytes read from each source, fetch
  // times, evictions. Any thread.
  std::string RenderMetrics() const;

 private:
  struct Job;
  void Stage(std::shared_ptr<Job> job);
  void Count(const DatasetRef& r, const Result<StagedDataset>& staged, bool ahead);
  // Why `datasets` cannot be fetched ahead now ("" when they fit in the cache's free space).
  std::string NoRoomFor(const std::vector<DatasetRef>& datasets) const;
  std::shared_ptr<Job> NewPrefetch(const PrefetchOrder& order);  // REQUIRES: mu_ held

  DatasetCache cache_;
  const bool as_owner_;
  const std::string node_;
  mutable MetricsRegistry metrics_;  // thread-safe itself
  mutable std::mutex mu_;
  std::map<StagingKey, std::shared_ptr<Job>> jobs_;  // GUARDED_BY(mu_)
  std::map<JobId, std::shared_ptr<Job>> ahead_;      // GUARDED_BY(mu_): fetches ahead, by job
  const DatasetCacheConfig config_;
};

// Where a staged dataset is for the tasks: its mount point in a container, else its copy.
// Adds the variables (CORRAL_DATASET_<NAME>) and container mounts to `order`.
void PlaceDatasets(const std::vector<std::string>& paths, RunOrder* order);

}  // namespace corral::agent
