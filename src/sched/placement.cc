#include "sched/placement.h"

#include <algorithm>

namespace corral::sched {
namespace {

// Milli-GPUs still free on the node's GPUs that hold shares.
int64_t SharedRoomMilli(const NodeSlot& n) {
  int64_t room = 0;
  for (size_t g = 0; g < n.shares.count.size(); ++g) {
    if (n.shares.count[g] > 0) room += kGpuMilli - n.shares.milli[g];
  }
  return room;
}

}  // namespace

int32_t Placer::Room(int32_t i, const Shape& s, TimeMs end, int32_t want) const {
  int32_t c = model_.Capacity(i, s, end, want);
  if (s.max_per_node > 0 && c > 0) {
    auto it = taken_.find(i);
    if (it != taken_.end()) c = std::min(c, s.max_per_node - it->second);
  }
  return std::max(0, c);
}

bool Placer::Full(int32_t i, const Shape& s) const {
  if (s.max_per_node <= 0) return false;
  auto it = taken_.find(i);
  return it != taken_.end() && it->second >= s.max_per_node;
}

int32_t Placer::BestFit(const Shape& s, TimeMs end, int32_t rack, int32_t replicas) {
  if (s.max_per_node > 0 && replicas > s.max_per_node) return -1;
  int64_t need = int64_t{replicas} * s.gpus;
  if (need > model_.max_gpus()) return -1;
  if (s.datasets != nullptr) return NearestData(s, end, rack, replicas, need);
  // A job without GPUs takes CPU and memory that shares on the node's GPUs may still need:
  // among nodes without free GPUs, the one whose shared GPUs have the least room left.
  if (need == 0 && !s.share && !model_.shared_nodes().empty()) {
    int32_t best = -1;
    int64_t best_room = 0;
    for (int32_t i : Bucket(rack, 0)) {
      ++*work_;
      if (Room(i, s, end, replicas) < replicas) continue;
      int64_t room = SharedRoomMilli(model_.slot(i));
      if (best < 0 || room < best_room) {
        best = i;
        best_room = room;
        if (room == 0) break;
      }
    }
    if (best >= 0) return best;
    need = 1;
  }
  for (int32_t k = static_cast<int32_t>(need); k <= model_.max_gpus(); ++k) {
    for (int32_t i : Bucket(rack, k)) {
      ++*work_;
      if (Room(i, s, end, replicas) >= replicas) return i;
    }
  }
  return -1;
}

// Among the nodes that fit, the one whose fetch of what it lacks of the job's datasets would
// take the least time at their sources' measured rates (ClusterModel::FetchMs), then the one
// holding the most of them, best fit among equals: the first found in the order of BestFit's
// buckets. Without measured rates every fetch counts 0 ms and the count alone decides.
int32_t Placer::NearestData(const Shape& s, TimeMs end, int32_t rack, int32_t replicas,
                            int64_t need) {
  int32_t best = -1;
  size_t best_held = 0;
  DurationMs best_fetch = 0;
  for (int32_t k = static_cast<int32_t>(need); k <= model_.max_gpus(); ++k) {
    for (int32_t i : Bucket(rack, k)) {
      ++*work_;
      if (Room(i, s, end, replicas) < replicas) continue;
      const std::vector<std::string>& held = model_.slot(i).info.datasets;
      size_t n = 0;
      for (const std::string& d : *s.datasets) {
        n += std::binary_search(held.begin(), held.end(), d) ? 1 : 0;
      }
      const DurationMs fetch = n == s.datasets->size() ? 0 : model_.FetchMs(i, s);
      if (best < 0 || fetch < best_fetch || (fetch == best_fetch && n > best_held)) {
        best = i;
        best_held = n;
        best_fetch = fetch;
        if (n == s.datasets->size()) return best;
      }
    }
  }
  return best;
}

int32_t Placer::Largest(const Shape& s, TimeMs end, int32_t rack, int32_t replicas, int32_t* cap) {
  int32_t lowest = std::max(0, s.gpus);
  for (int32_t k = model_.max_gpus(); k >= lowest; --k) {
    for (int32_t i : Bucket(rack, k)) {
      ++*work_;
      int32_t c = Room(i, s, end, replicas);
      if (c > 0) {
        *cap = c;
        return i;
      }
    }
  }
  return -1;
}

void Placer::Take(int32_t slot, const Shape& s, int32_t replicas,
                  std::vector<ReplicaPlacement>* out) {
  const std::string& name = model_.slot(slot).info.name;
  for (int32_t r = 0; r < replicas; ++r) {
    ReplicaPlacement p{name, model_.PickGpus(slot, s.gpus)};
    model_.AdjustReplica(slot, p, ResourcesOf(s), OwnerOf(s), +1);
    out->push_back(std::move(p));
  }
  if (s.max_per_node > 0) taken_[slot] += replicas;
}

void Placer::Undo(const Shape& s, std::vector<ReplicaPlacement>* out) {
  for (const ReplicaPlacement& p : *out) {
    model_.AdjustReplica(model_.Find(p.node), p, ResourcesOf(s), OwnerOf(s), -1);
  }
  out->clear();
  taken_.clear();
}

bool Placer::PlaceIn(const Shape& s, TimeMs end, int32_t rack, std::vector<ReplicaPlacement>* out) {
  int32_t remaining = s.replicas - static_cast<int32_t>(out->size());
  while (remaining > 0) {
    // With a limit per node, the best fit for one node's part at a time.
    int32_t part = s.max_per_node > 0 ? std::min(remaining, s.max_per_node) : remaining;
    int32_t slot = BestFit(s, end, rack, part);
    if (slot >= 0) {
      Take(slot, s, part, out);
      remaining -= part;
      continue;
    }
    int32_t cap = 0;
    slot = Largest(s, end, rack, remaining, &cap);
    if (slot < 0) return false;
    Take(slot, s, cap, out);
    remaining -= cap;
  }
  return true;
}

bool Placer::RoomBesideGpus(int32_t i, const Shape& s, TimeMs end) const {
  const NodeSlot& n = model_.slot(i);
  if (!n.live || !n.info.schedulable || !Matches(n, s)) return false;
  int64_t c = n.free_cpu, m = n.free_mem;
  if (end > n.hold_start) {
    c -= n.hold_cpu;
    m -= n.hold_mem;
  }
  return c >= s.cpu && m >= s.mem;
}

bool Placer::PickShare(const Shape& s, TimeMs end, int32_t* slot, int32_t* gpu) {
  // First a GPU that holds shares already: the one this share fills the most (least compute,
  // then memory, left), so that empty GPUs stay whole for whole-GPU jobs.
  int64_t best_milli = INT64_MAX, best_mem = INT64_MAX;
  *slot = -1;
  for (int32_t i : model_.shared_nodes()) {
    ++*work_;
    if (Full(i, s) || !RoomBesideGpus(i, s, end)) continue;
    const NodeSlot& n = model_.slot(i);
    for (size_t g = 0; g < n.info.gpus.size(); ++g) {
      if (n.shares.count[g] == 0 || ShareSlots(n, g, s) < 1) continue;
      int64_t left_milli = kGpuMilli - n.shares.milli[g] - s.share_milli;
      int64_t left_mem =
          ShareableMemoryMb(n.info.gpus[g].memory_mb) - n.shares.mem[g] - ShareMemOn(n, g, s);
      if (left_milli < best_milli || (left_milli == best_milli && left_mem < best_mem)) {
        best_milli = left_milli;
        best_mem = left_mem;
        *slot = i;
        *gpu = n.info.gpus[g].index;
      }
    }
  }
  if (*slot >= 0) return true;
  // Else an empty GPU on the node with the fewest free GPUs (best fit, as whole GPUs go),
  // from its fullest NVLink group; among such nodes (the first few that fit), the one with
  // the most CPU left for each of its free GPUs, so that the GPU's later shares find CPU.
  constexpr int32_t kCandidates = 16;
  for (int32_t k = 1; k <= model_.max_gpus(); ++k) {
    double best_cpu = -1;
    int32_t seen = 0;
    for (int32_t i : model_.bucket(k)) {
      ++*work_;
      if (Full(i, s) || !RoomBesideGpus(i, s, end)) continue;
      const NodeSlot& n = model_.slot(i);
      if (end > n.hold_start && k - n.hold_gpus < 1) continue;
      std::vector<int32_t> pick = model_.PickGpus(i, 1);
      if (pick.empty()) continue;
      size_t g = 0;
      while (g < n.info.gpus.size() && n.info.gpus[g].index != pick[0]) ++g;
      if (g == n.info.gpus.size() || ShareSlots(n, g, s) < 1) continue;
      double cpu = double(n.free_cpu - s.cpu) / k;
      if (cpu > best_cpu) {
        best_cpu = cpu;
        *slot = i;
        *gpu = pick[0];
      }
      if (++seen == kCandidates) break;
    }
    if (*slot >= 0) return true;
  }
  return false;
}

bool Placer::PlaceShares(const Shape& s, TimeMs end, std::vector<ReplicaPlacement>* out) {
  Resources r = ResourcesOf(s);
  for (int32_t k = 0; k < s.replicas; ++k) {
    int32_t slot = -1, gpu = -1;
    if (!PickShare(s, end, &slot, &gpu)) {
      Undo(s, out);
      return false;
    }
    const NodeSlot& n = model_.slot(slot);
    int64_t mem = 0;
    for (size_t g = 0; g < n.info.gpus.size(); ++g) {
      if (n.info.gpus[g].index == gpu) mem = ShareMemOn(n, g, s);
    }
    ReplicaPlacement p{n.info.name, {gpu}, {s.share_milli}, mem};
    model_.AdjustReplica(slot, p, r, OwnerOf(s), +1);
    out->push_back(std::move(p));
    if (s.max_per_node > 0) ++taken_[slot];
  }
  return true;
}

bool Placer::Place(const Shape& s, TimeMs end, bool keep, std::vector<ReplicaPlacement>* out) {
  out->clear();
  taken_.clear();
  if (model_.max_gpus() < 0) return false;
  if (s.share) {
    bool ok = PlaceShares(s, end, out);
    if (ok && !keep) {
      std::vector<ReplicaPlacement> copy = *out;
      Undo(s, &copy);
    }
    return ok;
  }
  // Cheap bounds first: a full cluster fails every request without looking at a node.
  if (s.TotalGpus() > model_.free_gpus()) return false;
  if (s.gpus > 0) {
    int32_t top = model_.max_gpus();
    while (top >= s.gpus && model_.bucket(top).empty()) --top;
    if (top < s.gpus) return false;
  }
  bool ok = false;
  int32_t one = BestFit(s, end, -1, s.replicas);
  if (one >= 0) {
    Take(one, s, s.replicas, out);
    ok = true;
  }
  if (!ok && s.replicas > 1 && model_.rack_count() > 0 && s.gpus > 0) {
    // Racks that could hold the gang by free GPU count, the tightest first.
    std::vector<std::pair<int64_t, int32_t>> racks;
    for (int32_t r = 0; r < model_.rack_count(); ++r) {
      ++*work_;
      if (model_.rack_free_gpus(r) >= s.TotalGpus()) racks.push_back({model_.rack_free_gpus(r), r});
    }
    std::sort(racks.begin(), racks.end());
    constexpr size_t kMaxRacksTried = 4;
    for (size_t k = 0; k < racks.size() && k < kMaxRacksTried && !ok; ++k) {
      ok = PlaceIn(s, end, racks[k].second, out);
      if (!ok) Undo(s, out);
    }
  }
  if (!ok) {
    ok = PlaceIn(s, end, -1, out);
    if (!ok) Undo(s, out);
  }
  if (ok && !keep) {
    std::vector<ReplicaPlacement> copy = *out;
    Undo(s, &copy);
  }
  return ok;
}

}  // namespace corral::sched
