// The head's datasets (docs/datasets.md), one component for the durable catalog and one index
// of who uses each dataset:
//  - DatasetCatalog: the registered datasets by name and version. Durable: part of
//    ClusterState, changed only by DatasetAdded and DatasetRemoved (Apply, from ApplyChange,
//    live and on replay), kept in a snapshot as one meta row (ToJson / FromJson: its rebuild
//    on recovery).
//  - DatasetUsers: the jobs not yet over that declare each dataset, so that a dataset in use
//    cannot be removed. Derived from the state alone: an index (core_indexes.h).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/dataset.h"
#include "core/source_rate.h"
#include "head/change.h"

namespace corral::head {

struct ClusterState;

class DatasetCatalog {
 public:
  // Called by ApplyChange only: the catalog changes with the rest of the state.
  void Apply(const DatasetAdded& c);
  void Apply(const DatasetRemoved& c);
  void Apply(const SourceRateMeasured& c, TimeMs at);
  // "NAME@VERSION": that version; "NAME": the name's latest. nullptr: none.
  const Dataset* Find(const std::string& name) const;
  const std::map<std::string, Dataset>& all() const { return datasets_; }

  // Each source's last measured stage-in (SourceRateMeasured), by DatasetSourceKey.
  struct SourceRate {
    int64_t bytes = 0;
    DurationMs ms = 0;
    TimeMs at = 0;  // when it was measured (0: before measurements kept their time)
    int64_t BytesPerSecond() const { return ms > 0 ? bytes * 1000 / ms : 0; }
    bool operator==(const SourceRate&) const = default;
  };
  const std::map<std::string, SourceRate>& sources() const { return sources_; }
  // The same as shown (corral datasets, GET /v1/datasets, /metrics), by source.
  std::vector<DatasetSourceRate> SourceRates() const;

  Json ToJson() const;  // the snapshot row: an array of datasets
  static Result<DatasetCatalog> FromJson(const Json& j);
  // The sources' rates: a snapshot row of their own (an object by source).
  Json SourcesToJson() const;
  Status SourcesFromJson(const Json& j);
  bool operator==(const DatasetCatalog&) const = default;

 private:
  std::map<std::string, Dataset> datasets_;
  std::map<std::string, SourceRate> sources_;
};

class DatasetUsers {
 public:
  void Apply(const ClusterState& s, const Change& c);
  void Rebuild(const ClusterState& s, TimeMs now);

  // The jobs not over (pending, scheduled or running) that use `name`; empty: none.
  const std::set<JobId>& Of(const std::string& name) const;
  const std::map<std::string, std::set<JobId>>& all() const { return users_; }
  bool operator==(const DatasetUsers&) const = default;

 private:
  void Update(const ClusterState& s, JobId id);
  std::map<std::string, std::set<JobId>> users_;  // no empty sets
};

}  // namespace corral::head
