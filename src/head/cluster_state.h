// The head's durable state and the one function that changes it (DESIGN §9, LevelDB's
// LogAndApply): the core decides, emits a Change, and ApplyChange applies it. Recovery loads
// the store's snapshot rows and applies the changes after them with the same function, so
// the state after a restart is the state that was acknowledged.
//
// Plain data, no I/O; owned by HeadCore on the head's state-machine thread.
#pragma once

#include <map>
#include <string>

#include "head/change.h"
#include "head/datasets.h"

namespace corral::head {

// What retired jobs' runs used, summed per queue, user and UTC day of the run's end, so that
// fair share keeps remembering it once the jobs are out of memory (DESIGN §6.2).
struct RetiredUsageKey {
  std::string queue;
  std::string user;
  int64_t day = 0;  // days since the epoch
  auto operator<=>(const RetiredUsageKey&) const = default;
};
struct RetiredUsage {
  int64_t gpu_ms = 0;  // GPUs x milliseconds
  int64_t cpu_milli_ms = 0;
  int64_t memory_mb_ms = 0;
  TimeMs last_end = 0;  // of the latest run counted
  bool operator==(const RetiredUsage&) const = default;
};
// Days of retired usage kept: past that, usage decayed with any sensible fair-share half-life
// weighs nothing.
constexpr int64_t kRetiredUsageDays = 90;

struct ClusterState {
  uint64_t revision = 0;  // of the last change applied
  uint64_t epoch = 0;     // leadership epoch (HeadStarted)
  JobId next_job_id = 1;
  std::map<JobId, Job> jobs;
  std::map<std::string, Node> nodes;
  std::map<std::string, QueueConfig> queues;
  std::map<std::string, Credential> credentials;            // by hash
  std::map<std::string, QosClass> qos;                      // by name
  std::map<std::string, NodeReservationSpec> reservations;  // by name
  DatasetCatalog datasets;
  std::map<std::string, Service> services;  // by name
  std::string step_key;                     // job-step credentials derive from it (HeadStarted)
  // Jobs retired from memory (JobsRetired): each one's final state. An array's id (its first
  // element's) holds the array's: succeeded if every element did, else failed.
  std::map<JobId, JobState> retired;
  std::map<RetiredUsageKey, RetiredUsage> retired_usage;
};

// REQUIRES: change.revision == state.revision + 1.
void ApplyChange(ClusterState& state, const Change& change);

// A canonical JSON form of the whole durable state, for comparing two states in tests and
// tools (the non-durable annotations pending_reason and last_heartbeat are left out).
Json StateToJson(const ClusterState& state);

// Snapshot rows <-> state (store rows hold jobs, nodes, queues; meta holds the rest).
struct SnapshotMeta {
  static constexpr char kEpoch[] = "head_epoch";
  static constexpr char kNextJobId[] = "next_job_id";
  static constexpr char kCredentialPrefix[] = "credential/";
  static constexpr char kStepKey[] = "step_key";
  static constexpr char kRetiredUsage[] = "retired_usage";
  static constexpr char kQos[] = "qos";                         // every QoS class, one JSON array
  static constexpr char kReservations[] = "reservations";       // every reservation, one array
  static constexpr char kDatasets[] = "datasets";               // every dataset, one array
  static constexpr char kDatasetSources[] = "dataset_sources";  // each source's measured rate
  static constexpr char kDatasetBudgets[] = "dataset_budgets";  // sources' budgets, their line
  static constexpr char kServices[] = "services";               // every service, one array
};
Json RetiredUsageToJson(const std::map<RetiredUsageKey, RetiredUsage>& usage);
Result<std::map<RetiredUsageKey, RetiredUsage>> RetiredUsageFromJson(const Json& j);

}  // namespace corral::head
