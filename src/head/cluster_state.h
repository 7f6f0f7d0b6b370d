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

namespace corral::head {

struct ClusterState {
  uint64_t revision = 0;  // of the last change applied
  uint64_t epoch = 0;     // leadership epoch (HeadStarted)
  JobId next_job_id = 1;
  std::map<JobId, Job> jobs;
  std::map<std::string, Node> nodes;
  std::map<std::string, QueueConfig> queues;
  std::map<std::string, Credential> credentials;  // by hash
  std::string step_key;  // job-step credentials derive from it (HeadStarted)
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
};

}  // namespace corral::head
