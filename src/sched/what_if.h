// A what-if view of the ClusterModel: "if these runs were gone, would the job fit?" asked many
// times in a row (victim search in preemption.cc, the release scan in reservation.cc) without
// touching the model's indexes. Freed and re-bound resources live in per-node scratch values
// of the nodes touched; only those nodes' free-GPU buckets would change, and they are written
// to the model (Apply) only once the answer is yes and a real placement is wanted.
//
// For one shape it keeps the sum over nodes of how many replicas fit on each (holds apply, no
// time limit). That sum decides Placer::Place(s, kUnknownTime, ...) exactly: its last resort
// (PlaceIn over all nodes) takes either one node that holds all remaining replicas or the
// whole capacity of one node at a time, so it fails only when the capacities sum to less than
// the replicas, and the earlier tries (one node, inside a rack) succeed only when it would.
//
// Owned by SchedState; one thread. Scratch storage is kept between uses (no allocation in the
// steady state).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "sched/cluster_model.h"

namespace corral::sched {

struct NodeDemand;

class WhatIf {
 public:
  // Starts a new question about `s` on `model` (which must not change until the next Reset,
  // except through Apply/Restore). Costs one visit of the nodes with room for a replica.
  // Nodes reserved against a job ending at `end` (ReservedAgainst) count for nothing, whatever
  // is released on them, and Apply leaves them as they are: the placement never takes them.
  void Reset(ClusterModel* model, const Shape& s, TimeMs end = kUnknownTime);

  // Frees (sign -1) or binds again (+1) a run's resources in the scratch, exactly as
  // ClusterModel::Adjust would: `slots` are the model slots of `placement` (-1: unknown node).
  void Release(const std::vector<ReplicaPlacement>& placement, const std::vector<int32_t>& slots,
               const Resources& per_replica, const std::string& owner, int sign);

  // Free GPUs of schedulable nodes, as ClusterModel::free_gpus() would say.
  int64_t free_gpus() const { return model_->free_gpus() + free_delta_; }
  // Would Placer::Place(s, kUnknownTime, ...) succeed on the model with these changes?
  bool Fits() const { return capacity_ >= shape_.replicas; }
  // Does every node of `demand` have room for its part (holds apply)?
  bool Satisfied(const std::vector<NodeDemand>& demand) const;

  // Writes the scratch into the model (touched nodes only, each re-indexed once), and puts
  // the model back as it was at Reset.
  void Apply();
  void Restore();

 private:
  struct Node {
    uint64_t epoch = 0;  // == epoch_: touched in this question
    bool matches = false;
    bool reserved = false;  // against this question's job: never written to the model
    bool indexed = false;
    int32_t gpus = 0;
    int32_t cpu = 0;
    int64_t mem = 0;
    int64_t cap = 0;  // replicas of shape_ that fit, counted in capacity_
    std::vector<uint8_t> busy;
    int32_t orig_gpus = 0;
    int32_t orig_cpu = 0;
    int64_t orig_mem = 0;
    std::vector<uint8_t> orig_busy;
    // The node's shares (now and at Touch), copied only once they matter: the node held
    // shares at Touch, or a share was released or bound on it. Until then (has_shares false)
    // the question reads the node as holding no shares, as it does, and Apply and Restore
    // leave its shares alone. Allocated the first time a question needs it, then kept: most
    // nodes never hold a share, and every node has a Node.
    struct Shares {
      GpuShares now;
      GpuShares orig;
    };
    bool has_shares = false;
    std::unique_ptr<Shares> shares;
  };
  void CopyShares(Node& w, const NodeSlot& n);
  // The shares a question reads for w: its copy, or none.
  const GpuShares& SharesOf(const Node& w) const {
    return w.has_shares ? w.shares->now : kNoShares;
  }
  static inline const GpuShares kNoShares{};
  Node& Touch(int32_t slot);

  ClusterModel* model_ = nullptr;
  Shape shape_;
  TimeMs end_ = kUnknownTime;
  uint64_t epoch_ = 0;
  std::vector<Node> nodes_;       // by slot
  std::vector<int32_t> touched_;  // slots touched in this question
  int64_t free_delta_ = 0;
  int64_t capacity_ = 0;
};

}  // namespace corral::sched
