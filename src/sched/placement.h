// Placement (DESIGN §6.4, §6.5): where a job's replicas go, all or nothing.
//
// A single node that holds the whole job, best fit (the fewest free GPUs that suffice), so
// whole nodes stay free for big jobs. Otherwise a gang goes to the fewest nodes: repeatedly
// the best-fit node for all remaining replicas, else the node with the most room. A gang
// that needs several nodes is tried inside one rack first (the racks with the least free
// GPUs that could hold it), then across racks. Inside a node, each replica's GPUs come from
// one NVLink/NUMA group when one has room.
//
// A gang with a limit of replicas per node (Shape::max_per_node, Slurm's --nodes) takes at
// most that many on each node, best fit for each node's part.
//
// A share of one GPU (Shape::share) goes to the GPU already holding shares that it fills the
// most, else to an empty GPU of the node with the fewest free GPUs: shares pack together and
// whole GPUs stay whole. A GPU never holds more than 1000 milli-GPUs, more memory than it
// has less the driver's reserve, whole-GPU use beside shares, or two isolation modes.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "sched/cluster_model.h"

namespace corral::sched {

class Placer {
 public:
  // `work` counts nodes examined (the pass budget).
  Placer(ClusterModel& model, int64_t* work) : model_(model), work_(work) {}

  // Finds a placement for a job of shape `s` ending at `end` (kUnknownTime: no limit). With
  // `keep` the resources stay bound in the model on success; otherwise the model is left as
  // it was. Never binds anything on failure.
  bool Place(const Shape& s, TimeMs end, bool keep, std::vector<ReplicaPlacement>* out);

 private:
  // Places the remaining replicas using the buckets of one rack (rack >= 0) or of all nodes.
  bool PlaceIn(const Shape& s, TimeMs end, int32_t rack, std::vector<ReplicaPlacement>* out);
  // Shares of one GPU (Shape::share), replica by replica.
  bool PlaceShares(const Shape& s, TimeMs end, std::vector<ReplicaPlacement>* out);
  bool PickShare(const Shape& s, TimeMs end, int32_t* slot, int32_t* gpu);
  // Replicas of s node i takes now, within the job's limit per node less what this
  // placement already put there.
  int32_t Room(int32_t i, const Shape& s, TimeMs end, int32_t want) const;
  // Node i holds as many replicas of this placement as s allows on one node.
  bool Full(int32_t i, const Shape& s) const;
  // Node i matches s and has its CPU and memory (holds apply).
  bool RoomBesideGpus(int32_t i, const Shape& s, TimeMs end) const;
  int32_t BestFit(const Shape& s, TimeMs end, int32_t rack, int32_t replicas);
  int32_t NearestData(const Shape& s, TimeMs end, int32_t rack, int32_t replicas, int64_t need);
  int32_t Largest(const Shape& s, TimeMs end, int32_t rack, int32_t replicas, int32_t* cap);
  void Take(int32_t slot, const Shape& s, int32_t replicas, std::vector<ReplicaPlacement>* out);
  void Undo(const Shape& s, std::vector<ReplicaPlacement>* out);
  const std::set<int32_t>& Bucket(int32_t rack, int32_t k) const {
    return rack >= 0 ? model_.rack_bucket(rack, k) : model_.bucket(k);
  }

  ClusterModel& model_;
  int64_t* work_;
  // Replicas of the placement under way on each node, by slot (only with a limit per node).
  std::map<int32_t, int32_t> taken_;
};

}  // namespace corral::sched
