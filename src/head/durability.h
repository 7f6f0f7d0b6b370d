// Between the core and the store: turns the core's changes into store edits (the change log,
// plus snapshot rows of what changed every `snapshot_every` changes), and turns what the
// store loaded back into a snapshot state and the changes to apply on top of it.
//
// Pure (no I/O); used by the Head shell on its state-machine thread and by tests that play
// the shell's part with a fake store.
#pragma once

#include <vector>

#include "head/cluster_state.h"
#include "head/head_core.h"
#include "store/store.h"

namespace corral::head {

struct DurabilityConfig {
  uint64_t snapshot_every = 1000;  // changes between two snapshots
  uint64_t keep_changes = 100000;  // changes kept below the snapshot, for watchers
};

class EditLog {
 public:
  explicit EditLog(DurabilityConfig config, uint64_t snapshot_revision = 0)
      : config_(config), snapshot_revision_(snapshot_revision) {}

  // Appends the changes to `batch` as change-log records (EncodeChangeRecords), then what
  // AppendRetirements adds.
  void Append(const std::vector<Change>& changes, const ClusterState& state,
              std::vector<store::StateEdit>* batch) const;
  // A JobsRetired marks its rows retired and writes the retired usage, from `state` (which has
  // applied it). Needs the state: the state machine's thread.
  void AppendRetirements(const std::vector<Change>& changes, const ClusterState& state,
                         std::vector<store::StateEdit>* batch) const;
  // When a snapshot is due (or `force`), appends rows for everything the core changed since
  // the last snapshot, the snapshot revision, and a truncation of the old log.
  // REQUIRES: every change up to core.revision() is in this batch or an earlier one.
  void MaybeSnapshot(HeadCore& core, bool force, std::vector<store::StateEdit>* batch);
  // A snapshot rewrites the row of every job changed since the last one (~40 µs a row): it
  // is written alone, when the head has nothing else to commit, not with changes someone
  // waits for (a burst's placements, agents' exit reports), unless kSnapshotOverdue intervals
  // have passed without one (a head never idle).
  static constexpr uint64_t kSnapshotOverdue = 10;
  bool SnapshotMayRideWith(uint64_t revision, size_t batch_changes) const {
    return batch_changes == 0 ||
           revision - snapshot_revision_ >= kSnapshotOverdue * config_.snapshot_every;
  }
  uint64_t snapshot_revision() const { return snapshot_revision_; }

 private:
  DurabilityConfig config_;
  uint64_t snapshot_revision_;
};

// The changes as change-log records, one per change. Reads nothing but them: any thread.
void EncodeChangeRecords(const std::vector<Change>& changes, std::vector<store::StateEdit>* batch);

struct LoadedState {
  ClusterState snapshot;
  std::vector<Change> tail;
};
Result<LoadedState> DecodeStoredState(store::StoredState stored);

}  // namespace corral::head
