#include "sched/placement.h"

#include <algorithm>

namespace corral::sched {

int32_t Placer::BestFit(const Shape& s, TimeMs end, int32_t rack, int32_t replicas) {
  int64_t need = int64_t{replicas} * s.gpus;
  if (need > model_.max_gpus()) return -1;
  for (int32_t k = static_cast<int32_t>(need); k <= model_.max_gpus(); ++k) {
    for (int32_t i : Bucket(rack, k)) {
      ++*work_;
      if (model_.Capacity(i, s, end, replicas) >= replicas) return i;
    }
  }
  return -1;
}

int32_t Placer::Largest(const Shape& s, TimeMs end, int32_t rack, int32_t replicas, int32_t* cap) {
  int32_t lowest = std::max(0, s.gpus);
  for (int32_t k = model_.max_gpus(); k >= lowest; --k) {
    for (int32_t i : Bucket(rack, k)) {
      ++*work_;
      int32_t c = model_.Capacity(i, s, end, replicas);
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
    model_.Adjust(slot, p.gpus, s.cpu, s.mem, +1);
    out->push_back(std::move(p));
  }
}

void Placer::Undo(const Shape& s, std::vector<ReplicaPlacement>* out) {
  for (const ReplicaPlacement& p : *out) {
    model_.Adjust(model_.Find(p.node), p.gpus, s.cpu, s.mem, -1);
  }
  out->clear();
}

bool Placer::PlaceIn(const Shape& s, TimeMs end, int32_t rack, std::vector<ReplicaPlacement>* out) {
  int32_t remaining = s.replicas - static_cast<int32_t>(out->size());
  while (remaining > 0) {
    int32_t slot = BestFit(s, end, rack, remaining);
    if (slot >= 0) {
      Take(slot, s, remaining, out);
      return true;
    }
    int32_t cap = 0;
    slot = Largest(s, end, rack, remaining, &cap);
    if (slot < 0) return false;
    Take(slot, s, cap, out);
    remaining -= cap;
  }
  return true;
}

bool Placer::Place(const Shape& s, TimeMs end, bool keep, std::vector<ReplicaPlacement>* out) {
  out->clear();
  if (model_.max_gpus() < 0) return false;
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
