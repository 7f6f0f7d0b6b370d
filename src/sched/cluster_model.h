// The scheduler's model of the cluster's nodes: what is free on each node, indexed by free
// GPU count (for best-fit placement) globally and per rack. Pure data; owned by the Scheduler.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/job.h"
#include "sched/scheduler.h"

namespace corral::sched {

// What one replica needs (whole GPUs, or a share of one GPU), and the constraints every node
// of the job must meet.
struct Shape {
  int32_t replicas = 1;
  int32_t max_per_node = 0;  // replicas one node may hold; 0: no limit
  int32_t gpus = 0;          // whole GPUs; 0 for a share
  // A share of one GPU per replica: milli-GPUs and device memory (0: its fraction of the
  // GPU's shareable memory), packed with other shares of the same isolation.
  bool share = false;
  int32_t share_milli = 0;
  int64_t share_mem = 0;
  GpuIsolation isolation = GpuIsolation::kMemory;
  // The job's owner: an MPS server serves one Unix user, so MPS shares of a GPU are one owner's.
  const std::string* owner = nullptr;
  int32_t cpu = 0;
  int64_t mem = 0;
  const std::string* gpu_model = nullptr;                           // empty: any
  const std::map<std::string, std::string>* node_labels = nullptr;  // all must match
  const std::vector<std::string>* datasets = nullptr;               // preferred where held
  // Per datasets[i]: bytes and source (PendingJob::dataset_bytes, dataset_sources).
  const std::vector<int64_t>* dataset_bytes = nullptr;
  const std::vector<std::string>* dataset_sources = nullptr;
  // Only nodes holding every dataset match (placement that waits for its data's nodes).
  bool data_only = false;

  int64_t TotalGpus() const { return int64_t{replicas} * gpus; }
};
inline const std::string& OwnerOf(const Shape& s) {
  static const std::string kNone;
  return s.owner != nullptr ? *s.owner : kNone;
}
Shape ShapeOf(const PendingJob& job);
Resources ResourcesOf(const Shape& s);  // one replica's resources

// The shares on each GPU of a node (by position in NodeInfo::gpus): how many, their
// milli-GPUs and memory, and their isolation. A GPU with shares is busy for whole-GPU jobs.
// Empty (no vector sized) on a node where no share has been placed: reads as no shares, and
// costs a node of whole-GPU jobs no allocation; ApplyShares sizes it.
struct GpuShares {
  std::vector<int32_t> count;
  std::vector<int32_t> milli;
  std::vector<int64_t> mem;
  std::vector<uint8_t> isolation;
  std::vector<std::string> mps_owner;  // the one owner of a GPU's MPS shares

  void Resize(size_t gpus) {
    count.assign(gpus, 0);
    milli.assign(gpus, 0);
    mem.assign(gpus, 0);
    isolation.assign(gpus, 0);
    mps_owner.assign(gpus, std::string());
  }
  int32_t SharedGpus() const;
};

struct NodeSlot {
  NodeInfo info;
  bool live = false;
  std::vector<uint8_t> busy;  // by position in info.gpus: held whole, or holding shares
  GpuShares shares;
  int32_t shared_gpus = 0;  // GPUs holding shares
  int32_t healthy_gpus = 0;
  int32_t free_gpus = 0;  // healthy and not busy
  int32_t free_cpu = 0;
  int64_t free_mem = 0;
  int32_t rack = -1;         // id of its "rack" label; -1: none
  int32_t indexed_at = -1;   // free-GPU bucket it is indexed in; -1: not indexed
  std::string common_model;  // the model of all its GPUs; empty if mixed or none
  // Pass-local holds for reservations: a job ending after hold_start may not use them.
  int32_t hold_gpus = 0;
  int32_t hold_cpu = 0;
  int64_t hold_mem = 0;
  TimeMs hold_start = kUnknownTime;
  // Pass-local: from when an admin reservation not over holds the node (now, if it has begun;
  // the earliest, if several). A job ending after it may not run here, even on GPUs that a
  // victim or an ending run would free (ReservedAgainst).
  TimeMs reserved_from = kUnknownTime;
};

// Is node n reserved against a job ending at `end` (kUnknownTime: no limit)?
inline bool ReservedAgainst(const NodeSlot& n, TimeMs end) { return end > n.reserved_from; }

// A job's end as seen by holds: kUnknownTime when it has no time limit.
bool Matches(const NodeSlot& n, const Shape& s);
// How many more shares of `s` GPU g (by position) of n takes: never past 1000 milli or the
// GPU's shareable memory (less the driver's reserve), never beside whole-GPU use or shares
// of another isolation, never beside MPS shares of another owner. 0 for a whole-GPU shape.
int32_t ShareSlots(const NodeSlot& n, size_t g, const Shape& s);
// The same with `busy` and `shares` in place of the node's own (a what-if's scratch).
int32_t ShareSlotsWith(const NodeSlot& n, const std::vector<uint8_t>& busy, const GpuShares& shares,
                       size_t g, const Shape& s);
// Binds (+1) or frees (-1) a replica's shares of GPUs on `busy` and `shares` of node n, for a
// job of `owner`; returns the change in free GPUs.
int32_t ApplyShares(const NodeSlot& n, const ReplicaPlacement& p, GpuIsolation isolation,
                    const std::string& owner, int sign, std::vector<uint8_t>* busy,
                    GpuShares* shares);
// The memory a share of `s` holds on GPU g of n.
int64_t ShareMemOn(const NodeSlot& n, size_t g, const Shape& s);
// Shares of `s` an empty GPU of n takes (the smallest of its healthy GPUs).
int32_t SharesPerFreeGpu(const NodeSlot& n, const Shape& s);

class ClusterModel {
 public:
  // Returns the slot. Keeps what is bound on GPUs that stay (by index).
  int32_t Upsert(const NodeInfo& info);
  void Remove(const std::string& name);
  int32_t Find(const std::string& name) const;  // -1: unknown

  NodeSlot& slot(int32_t i) { return slots_[i]; }
  const NodeSlot& slot(int32_t i) const { return slots_[i]; }
  int32_t slot_count() const { return static_cast<int32_t>(slots_.size()); }

  // Binds (sign +1) or frees (-1) GPUs (by index) and cpu/memory on one node.
  void Adjust(int32_t slot, const std::vector<int32_t>& gpu_indices, int32_t cpu, int64_t mem,
              int sign);
  // Binds (+1) or frees (-1) one replica's placement: whole GPUs, or its shares of GPUs.
  void AdjustReplica(int32_t slot, const ReplicaPlacement& p, const Resources& r,
                     const std::string& owner, int sign);
  // Binds or frees a whole placement of a job with this per-replica shape.
  void AdjustPlacement(const std::vector<ReplicaPlacement>& placement, const Resources& r,
                       const std::string& owner, int sign);
  // Schedulable nodes with at least one GPU holding shares (where new shares pack first).
  const std::set<int32_t>& shared_nodes() const { return shared_nodes_; }

  // How many replicas of `s` (up to `want`) fit on node i now, for a job ending at `end`.
  int32_t Capacity(int32_t i, const Shape& s, TimeMs end, int32_t want) const;
  // The same for node n with the given free resources (holds apply), n assumed to match.
  static int32_t CapacityWith(const NodeSlot& n, const Shape& s, TimeMs end, int32_t want,
                              int64_t free_gpus, int64_t free_cpu, int64_t free_mem);
  // The same with the GPUs' use given by `busy` and `shares` (a what-if's scratch).
  static int32_t CapacityWith(const NodeSlot& n, const Shape& s, TimeMs end, int32_t want,
                              int64_t free_gpus, int64_t free_cpu, int64_t free_mem,
                              const std::vector<uint8_t>& busy, const GpuShares& shares);
  // Sets what is bound on node i (busy GPUs by position, and the free counts that go with
  // them), re-indexing it once. What-if searches (what_if.h) write their result with it.
  // `shares` null: the node's shares are left as they are (the what-if changed none).
  void SetUsage(int32_t i, const std::vector<uint8_t>& busy, const GpuShares* shares,
                int32_t free_gpus, int32_t free_cpu, int64_t free_mem);
  // Changes whenever a node name gets or loses a slot: slot numbers cached by name are stale.
  uint64_t layout_version() const { return layout_version_; }
  // Picks `gpus` free GPUs on node i: within one NVLink/NUMA group when one has room (the
  // group with the fewest free that fits), else from the fullest-free groups first.
  std::vector<int32_t> PickGpus(int32_t i, int32_t gpus) const;

  void AddHold(int32_t i, int32_t gpus, int32_t cpu, int64_t mem, TimeMs start);
  // Node i is reserved from `from` in this pass (NodeSlot::reserved_from); ClearHolds clears it.
  void MarkReserved(int32_t i, TimeMs from);
  void ClearHolds();

  // Free-GPU buckets of schedulable nodes: bucket(k) holds the slots with k free GPUs.
  int32_t max_gpus() const { return static_cast<int32_t>(buckets_.size()) - 1; }
  const std::set<int32_t>& bucket(int32_t k) const { return buckets_[k]; }
  int32_t rack_count() const { return static_cast<int32_t>(rack_names_.size()); }
  const std::set<int32_t>& rack_bucket(int32_t rack, int32_t k) const {
    return rack_buckets_[rack][k];
  }
  int64_t rack_free_gpus(int32_t rack) const { return rack_free_[rack]; }

  int64_t total_gpus() const { return total_gpus_; }
  int64_t total_cpu() const { return total_cpu_; }
  int64_t total_mem() const { return total_mem_; }
  int64_t free_gpus() const { return free_gpus_; }
  int64_t held_gpus() const { return held_gpus_; }

  // Dataset sources' measured stage-in rates (Scheduler::SetSourceRate).
  void SetSourceRate(const std::string& source, int64_t bytes_per_s);
  // The time node i would take to fetch what it lacks of s's datasets at their sources'
  // rates: 0 when it holds them all, or when no lacking one's source has been measured.
  DurationMs FetchMs(int32_t i, const Shape& s) const;
  // Whether node i holds every dataset of s.
  bool HoldsAll(int32_t i, const Shape& s) const;
  // The slots with holds in this pass (few: those of the pass's reservations and preemptions).
  const std::vector<int32_t>& held_slots() const { return held_; }

 private:
  void Unindex(int32_t i);
  void Index(int32_t i);
  void EnsureBuckets(int32_t k);

  std::vector<NodeSlot> slots_;
  std::map<std::string, int32_t> by_name_;
  std::vector<int32_t> free_slots_;
  std::vector<std::set<int32_t>> buckets_;
  std::set<int32_t> shared_nodes_;
  std::map<std::string, int32_t> rack_ids_;
  std::vector<std::string> rack_names_;
  std::vector<std::vector<std::set<int32_t>>> rack_buckets_;
  std::vector<int64_t> rack_free_;
  std::vector<int32_t> held_;  // slots with holds
  int64_t total_gpus_ = 0;     // healthy GPUs of schedulable nodes
  int64_t total_cpu_ = 0;
  int64_t total_mem_ = 0;
  int64_t free_gpus_ = 0;  // on schedulable nodes
  int64_t held_gpus_ = 0;  // by holds of this pass
  uint64_t layout_version_ = 1;
  std::map<std::string, int64_t> source_rates_;  // bytes per second, by source
};

}  // namespace corral::sched
