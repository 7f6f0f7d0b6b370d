#include "sched/what_if.h"

#include <algorithm>

#include "sched/state.h"

namespace corral::sched {

void WhatIf::Reset(ClusterModel* model, const Shape& s, TimeMs end) {
  model_ = model;
  shape_ = s;
  end_ = end;
  ++epoch_;
  touched_.clear();
  free_delta_ = 0;
  capacity_ = 0;
  if (static_cast<int32_t>(nodes_.size()) < model->slot_count()) nodes_.resize(model->slot_count());
  // Nodes with fewer free GPUs than a replica needs hold none (Placer skips them the same way).
  for (int32_t k = std::max(0, s.gpus); k <= model->max_gpus(); ++k) {
    for (int32_t i : model->bucket(k)) {
      if (ReservedAgainst(model->slot(i), end)) continue;
      capacity_ += model->Capacity(i, s, kUnknownTime, s.replicas);
    }
  }
}

WhatIf::Node& WhatIf::Touch(int32_t slot) {
  Node& w = nodes_[slot];
  if (w.epoch == epoch_) return w;
  const NodeSlot& n = model_->slot(slot);
  w.epoch = epoch_;
  w.reserved = ReservedAgainst(n, end_);
  w.matches = n.live && n.info.schedulable && !w.reserved && Matches(n, shape_);
  w.indexed = n.indexed_at >= 0;
  w.gpus = w.orig_gpus = n.free_gpus;
  w.cpu = w.orig_cpu = n.free_cpu;
  w.mem = w.orig_mem = n.free_mem;
  w.busy = n.busy;
  w.orig_busy = n.busy;
  w.has_shares = false;
  if (n.shared_gpus > 0) CopyShares(w, n);
  // Reset counted exactly this (a node below the bucket floor holds no replica).
  w.cap = w.matches ? ClusterModel::CapacityWith(n, shape_, kUnknownTime, shape_.replicas, w.gpus,
                                                 w.cpu, w.mem, w.busy, SharesOf(w))
                    : 0;
  touched_.push_back(slot);
  return w;
}

void WhatIf::CopyShares(Node& w, const NodeSlot& n) {
  if (!w.shares) w.shares = std::make_unique<Node::Shares>();
  w.has_shares = true;
  w.shares->now = n.shares;
  w.shares->orig = n.shares;
}

void WhatIf::Release(const std::vector<ReplicaPlacement>& placement,
                     const std::vector<int32_t>& slots, const Resources& per_replica,
                     const std::string& owner, int sign) {
  for (size_t k = 0; k < placement.size() && k < slots.size(); ++k) {
    int32_t slot = slots[k];
    if (slot < 0) continue;
    const NodeSlot& n = model_->slot(slot);
    if (!n.live) continue;  // as ClusterModel::Adjust
    Node& w = Touch(slot);
    int32_t before = w.gpus;
    uint8_t want = sign > 0 ? 1 : 0;
    if (!placement[k].gpu_milli.empty()) {
      if (!w.has_shares) CopyShares(w, n);
      w.gpus += ApplyShares(n, placement[k], per_replica.gpu_isolation, owner, sign, &w.busy,
                            &w.shares->now);
    } else {
      for (int32_t idx : placement[k].gpus) {
        for (size_t g = 0; g < n.info.gpus.size(); ++g) {
          if (n.info.gpus[g].index != idx || w.busy[g] == want) continue;
          w.busy[g] = want;
          if (n.info.gpus[g].healthy) w.gpus += sign > 0 ? -1 : 1;
        }
      }
    }
    w.cpu -= sign * per_replica.cpu_milli;
    w.mem -= sign * per_replica.memory_mb;
    if (w.indexed) free_delta_ += w.gpus - before;
    if (w.matches) {
      capacity_ -= w.cap;
      w.cap = ClusterModel::CapacityWith(n, shape_, kUnknownTime, shape_.replicas, w.gpus, w.cpu,
                                         w.mem, w.busy, SharesOf(w));
      capacity_ += w.cap;
    }
  }
}

bool WhatIf::Satisfied(const std::vector<NodeDemand>& demand) const {
  for (const NodeDemand& d : demand) {
    const NodeSlot& n = model_->slot(d.slot);
    const Node& w = nodes_[d.slot];
    bool touched = w.epoch == epoch_;
    int64_t g = touched ? w.gpus : n.free_gpus;
    int64_t c = touched ? w.cpu : n.free_cpu;
    int64_t m = touched ? w.mem : n.free_mem;
    if (g - n.hold_gpus < d.gpus || c - n.hold_cpu < d.cpu || m - n.hold_mem < d.mem) {
      return false;
    }
  }
  return true;
}

void WhatIf::Apply() {
  for (int32_t i : touched_) {
    const Node& w = nodes_[i];
    if (w.reserved) continue;
    model_->SetUsage(i, w.busy, w.has_shares ? &w.shares->now : nullptr, w.gpus, w.cpu, w.mem);
  }
}

void WhatIf::Restore() {
  for (int32_t i : touched_) {
    const Node& w = nodes_[i];
    if (w.reserved) continue;
    model_->SetUsage(i, w.orig_busy, w.has_shares ? &w.shares->orig : nullptr, w.orig_gpus,
                     w.orig_cpu, w.orig_mem);
  }
}

}  // namespace corral::sched
