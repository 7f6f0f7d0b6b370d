// The head's datasets (docs/datasets.md), one component for the durable catalog and one index
// of who uses each dataset:
//  - DatasetCatalog: the registered datasets by name and version, the sources' measured rates
//    and budgets, and the line of stage-ins the budgets pace. Durable: part of ClusterState,
//    changed only by its changes (Apply, from ApplyChange, live and on replay; the line also
//    loses the runs that start or end), kept in a snapshot as meta rows (ToJson / FromJson and
//    the others: its rebuild on recovery).
//  - DatasetUsers: the jobs not yet over that declare each dataset, so that a dataset in use
//    cannot be removed. Derived from the state alone: an index (core_indexes.h).
#pragma once

#include <utility>

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

  // --- the sources' budgets (SourceLimitSet) and the line of stage-ins they pace ---
  struct SourceLimit {
    int64_t rate = 0;     // bytes per second for every node's fetches together; 0: none
    int32_t fetches = 0;  // nodes fetching at once; 0: kDefaultFetches when a rate is set
    // How many nodes may fetch from the source at once; 0: no limit.
    int32_t Slots() const { return fetches > 0 ? fetches : (rate > 0 ? kDefaultFetches : 0); }
    bool operator==(const SourceLimit&) const = default;
  };
  static constexpr int32_t kDefaultFetches = 4;
  // A placed run whose nodes lack data of budgeted sources, from its placement until it starts
  // or ends, in placement order (the scheduler's).
  struct StageIn {
    JobId job = 0;
    int32_t attempt = 0;
    std::map<std::string, int32_t> fetches;  // source -> its nodes that fetch from it
    bool admitted = false;
    bool operator==(const StageIn&) const = default;
  };
  void Apply(const SourceLimitSet& c);
  void Apply(const StageInQueued& c);
  void Apply(const StageInAdmitted& c);
  // Drops the stage-ins whose run is no longer placed and waiting to start (it started, ended,
  // or the job is gone). Called by ApplyChange after every change while the line is not empty.
  void PruneStageIns(const std::map<JobId, Job>& jobs);
  const std::map<std::string, SourceLimit>& limits() const { return limits_; }
  const std::vector<StageIn>& stage_ins() const { return stage_ins_; }
  // Counts every change to the limits or the line, so the shell knows to write them again.
  uint64_t budget_version() const { return budget_version_; }
  // The waiting stage-ins that may start fetching now, in line order. A run is admitted only
  // when every budgeted source it lacks has room for all its nodes at once (it never holds a
  // slot while it waits for another), and none passes one waiting before it on a common source.
  std::vector<const StageIn*> Admissible() const;
  // Bytes per second one node of an admitted stage-in may read from `source`: the source's rate
  // shared by its slots (or by the run's own nodes, when it alone has more); 0: no cap.
  int64_t NodeRate(const StageIn& in, const std::string& source) const;
  // Why a waiting stage-in waits: the first of its sources without room, and its place in that
  // source's line of waiting runs (1: next).
  std::pair<std::string, int32_t> PlaceInLine(const StageIn& in) const;
  // Nodes fetching now from `source` (admitted stage-ins).
  int32_t Fetching(const std::string& source) const;

  Json ToJson() const;  // the snapshot row: an array of datasets
  static Result<DatasetCatalog> FromJson(const Json& j);
  // The sources' rates: a snapshot row of their own (an object by source).
  Json SourcesToJson() const;
  Status SourcesFromJson(const Json& j);
  // The budgets and the line: a snapshot row of their own ({"limits": {...}, "stage_ins": [...]}).
  Json BudgetsToJson() const;
  Status BudgetsFromJson(const Json& j);
  // Equal content; budget_version() is a count of this copy's changes, not content.
  bool operator==(const DatasetCatalog& o) const {
    return datasets_ == o.datasets_ && sources_ == o.sources_ && limits_ == o.limits_ &&
           stage_ins_ == o.stage_ins_;
  }

 private:
  std::map<std::string, Dataset> datasets_;
  std::map<std::string, SourceRate> sources_;
  std::map<std::string, SourceLimit> limits_;
  std::vector<StageIn> stage_ins_;
  uint64_t budget_version_ = 0;
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
