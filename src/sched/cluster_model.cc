#include "sched/cluster_model.h"

#include <algorithm>

namespace corral::sched {

Resources ResourcesOf(const Shape& s) {
  Resources r;
  r.gpu_milli = s.share ? s.share_milli : s.gpus * kGpuMilli;
  r.cpu_milli = s.cpu;
  r.memory_mb = s.mem;
  r.gpu_memory_mb = s.share_mem;
  r.gpu_isolation = s.isolation;
  return r;
}

Shape ShapeOf(const PendingJob& job) {
  Shape s;
  s.replicas = std::max(1, job.replicas);
  s.max_per_node = std::max(0, job.max_replicas_per_node);
  if (job.per_replica.IsShare()) {
    s.share = true;
    s.share_milli = std::max(0, job.per_replica.gpu_milli);
    s.share_mem = std::max<int64_t>(0, job.per_replica.gpu_memory_mb);
    s.isolation = job.per_replica.gpu_isolation;
  } else {
    s.gpus = std::max(0, job.per_replica.gpu_milli + kGpuMilli - 1) / kGpuMilli;  // round up
  }
  s.cpu = std::max(0, job.per_replica.cpu_milli);
  s.mem = std::max<int64_t>(0, job.per_replica.memory_mb);
  s.owner = &job.user;
  s.gpu_model = &job.gpu_model;
  s.node_labels = &job.node_labels;
  if (!job.datasets.empty()) s.datasets = &job.datasets;
  if (!job.datasets.empty() && job.dataset_bytes.size() == job.datasets.size() &&
      job.dataset_sources.size() == job.datasets.size()) {
    s.dataset_bytes = &job.dataset_bytes;
    s.dataset_sources = &job.dataset_sources;
  }
  return s;
}

bool Matches(const NodeSlot& n, const Shape& s) {
  if (!n.live) return false;
  if (s.data_only && s.datasets != nullptr) {
    for (const std::string& d : *s.datasets) {
      if (!std::binary_search(n.info.datasets.begin(), n.info.datasets.end(), d)) return false;
    }
  }
  if (s.gpu_model && !s.gpu_model->empty() && n.common_model != *s.gpu_model) return false;
  if (s.node_labels) {
    for (const auto& [k, v] : *s.node_labels) {
      auto it = n.info.labels.find(k);
      if (it == n.info.labels.end() || it->second != v) return false;
    }
  }
  return true;
}

int64_t ShareMemOn(const NodeSlot& n, size_t g, const Shape& s) {
  return ShareMemoryMb(s.share_milli, s.share_mem, n.info.gpus[g].memory_mb);
}

int32_t GpuShares::SharedGpus() const {
  int32_t k = 0;
  for (int32_t c : count) k += c > 0;
  return k;
}

int32_t ShareSlotsWith(const NodeSlot& n, const std::vector<uint8_t>& busy, const GpuShares& shares,
                       size_t g, const Shape& s) {
  if (!s.share || !n.info.gpus[g].healthy) return 0;
  bool shared = !shares.count.empty() && shares.count[g] > 0;
  if (busy[g] && !shared) return 0;  // held whole
  if (shared && shares.isolation[g] != static_cast<uint8_t>(s.isolation)) return 0;
  if (shared && s.isolation == GpuIsolation::kMps && s.owner != nullptr &&
      shares.mps_owner[g] != *s.owner) {
    return 0;
  }
  // A GPU without shares has none of its milli-GPUs or memory taken (ApplyShares zeroes both).
  const int64_t milli = shared ? shares.milli[g] : 0;
  const int64_t taken_mem = shared ? shares.mem[g] : 0;
  int64_t k = kGpuMilli;  // a memory-only share (0 milli): its memory bounds it
  if (s.share_milli > 0) k = (kGpuMilli - milli) / s.share_milli;
  int64_t mem = ShareMemOn(n, g, s);
  int64_t room = ShareableMemoryMb(n.info.gpus[g].memory_mb) - taken_mem;
  if (mem > 0) k = std::min(k, room / mem);
  return static_cast<int32_t>(std::max<int64_t>(0, k));
}

int32_t ShareSlots(const NodeSlot& n, size_t g, const Shape& s) {
  return ShareSlotsWith(n, n.busy, n.shares, g, s);
}

int32_t ApplyShares(const NodeSlot& n, const ReplicaPlacement& p, GpuIsolation isolation,
                    const std::string& owner, int sign, std::vector<uint8_t>* busy,
                    GpuShares* shares) {
  int32_t free_delta = 0;
  if (shares->count.empty()) shares->Resize(n.info.gpus.size());
  for (const GpuShare& s : Shares(p)) {
    for (size_t g = 0; g < n.info.gpus.size(); ++g) {
      if (n.info.gpus[g].index != s.index) continue;
      bool was_busy = (*busy)[g];
      int32_t& count = shares->count[g];
      count = std::max(0, count + sign);
      shares->milli[g] = count == 0 ? 0 : std::max(0, shares->milli[g] + sign * s.milli);
      shares->mem[g] = count == 0 ? 0 : std::max<int64_t>(0, shares->mem[g] + sign * s.memory_mb);
      shares->isolation[g] = static_cast<uint8_t>(isolation);
      if (count == 0) {
        shares->mps_owner[g].clear();
      } else if (isolation == GpuIsolation::kMps && sign > 0) {
        shares->mps_owner[g] = owner;
      }
      (*busy)[g] = count > 0;
      if (n.info.gpus[g].healthy) free_delta += int32_t{was_busy} - int32_t{count > 0};
    }
  }
  return free_delta;
}

int32_t SharesPerFreeGpu(const NodeSlot& n, const Shape& s) {
  int32_t best = -1;
  for (size_t g = 0; g < n.info.gpus.size(); ++g) {
    if (!n.info.gpus[g].healthy) continue;
    int64_t k = s.share_milli > 0 ? kGpuMilli / s.share_milli : kGpuMilli;
    int64_t mem = ShareMemOn(n, g, s);
    if (mem > 0) k = std::min(k, ShareableMemoryMb(n.info.gpus[g].memory_mb) / mem);
    if (best < 0 || k < best) best = static_cast<int32_t>(k);
  }
  return std::max(0, best);
}

int32_t ClusterModel::Find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

void ClusterModel::EnsureBuckets(int32_t k) {
  // Every rack has as many buckets as the cluster (a new rack starts with buckets_.size()), so
  // the common case, k already counted, needs no walk over the racks.
  if (k < static_cast<int32_t>(buckets_.size())) return;
  buckets_.resize(k + 1);
  for (auto& rb : rack_buckets_) rb.resize(k + 1);
}

void ClusterModel::Unindex(int32_t i) {
  NodeSlot& n = slots_[i];
  if (n.indexed_at < 0) return;
  buckets_[n.indexed_at].erase(i);
  if (n.rack >= 0) {
    rack_buckets_[n.rack][n.indexed_at].erase(i);
    rack_free_[n.rack] -= n.free_gpus;
  }
  free_gpus_ -= n.free_gpus;
  if (n.shared_gpus > 0) shared_nodes_.erase(i);
  total_gpus_ -= n.healthy_gpus;
  total_cpu_ -= n.info.cpu_milli;
  total_mem_ -= n.info.memory_mb;
  n.indexed_at = -1;
}

void ClusterModel::Index(int32_t i) {
  NodeSlot& n = slots_[i];
  if (!n.live || !n.info.schedulable) return;
  int32_t k = std::max(0, n.free_gpus);
  EnsureBuckets(k);
  n.indexed_at = k;
  buckets_[k].insert(i);
  if (n.rack >= 0) {
    rack_buckets_[n.rack][k].insert(i);
    rack_free_[n.rack] += n.free_gpus;
  }
  free_gpus_ += n.free_gpus;
  if (n.shared_gpus > 0) shared_nodes_.insert(i);
  total_gpus_ += n.healthy_gpus;
  total_cpu_ += n.info.cpu_milli;
  total_mem_ += n.info.memory_mb;
}

int32_t ClusterModel::Upsert(const NodeInfo& info) {
  int32_t i = Find(info.name);
  std::vector<uint8_t> busy(info.gpus.size(), 0);
  GpuShares shares;  // empty while no GPU of the node holds a share
  int32_t used_cpu = 0;
  int64_t used_mem = 0;
  if (i < 0) {
    if (!free_slots_.empty()) {
      i = free_slots_.back();
      free_slots_.pop_back();
    } else {
      i = static_cast<int32_t>(slots_.size());
      slots_.emplace_back();
    }
    by_name_[info.name] = i;
    ++layout_version_;
  } else {
    NodeSlot& old = slots_[i];
    Unindex(i);
    for (size_t a = 0; a < info.gpus.size(); ++a) {
      for (size_t b = 0; b < old.info.gpus.size(); ++b) {
        if (old.info.gpus[b].index != info.gpus[a].index) continue;
        busy[a] = old.busy[b];
        if (old.shares.count.empty()) continue;
        if (shares.count.empty()) shares.Resize(info.gpus.size());
        shares.count[a] = old.shares.count[b];
        shares.milli[a] = old.shares.milli[b];
        shares.mem[a] = old.shares.mem[b];
        shares.isolation[a] = old.shares.isolation[b];
        shares.mps_owner[a] = old.shares.mps_owner[b];
      }
    }
    used_cpu = old.info.cpu_milli - old.free_cpu;
    used_mem = old.info.memory_mb - old.free_mem;
  }
  NodeSlot& n = slots_[i];
  TimeMs hold_start = n.hold_start;
  int32_t hg = n.hold_gpus, hc = n.hold_cpu;
  int64_t hm = n.hold_mem;
  n = NodeSlot{};
  n.info = info;
  n.live = true;
  n.busy = std::move(busy);
  n.shares = std::move(shares);
  n.shared_gpus = n.shares.SharedGpus();
  n.free_cpu = info.cpu_milli - used_cpu;
  n.free_mem = info.memory_mb - used_mem;
  n.hold_start = hold_start;
  n.hold_gpus = hg;
  n.hold_cpu = hc;
  n.hold_mem = hm;
  for (size_t g = 0; g < info.gpus.size(); ++g) {
    n.healthy_gpus += info.gpus[g].healthy;
    n.free_gpus += info.gpus[g].healthy && !n.busy[g];
  }
  if (!info.gpus.empty()) {
    n.common_model = info.gpus[0].model;
    for (const Gpu& g : info.gpus) {
      if (g.model != n.common_model) n.common_model.clear();
    }
  }
  auto rack_it = info.labels.find("rack");
  if (rack_it != info.labels.end()) {
    auto [it, added] = rack_ids_.emplace(rack_it->second, static_cast<int32_t>(rack_names_.size()));
    if (added) {
      rack_names_.push_back(rack_it->second);
      rack_buckets_.emplace_back(buckets_.size());
      rack_free_.push_back(0);
    }
    n.rack = it->second;
  }
  Index(i);
  return i;
}

void ClusterModel::Remove(const std::string& name) {
  int32_t i = Find(name);
  if (i < 0) return;
  Unindex(i);
  slots_[i] = NodeSlot{};
  by_name_.erase(name);
  free_slots_.push_back(i);
  ++layout_version_;
}

void ClusterModel::Adjust(int32_t i, const std::vector<int32_t>& gpu_indices, int32_t cpu,
                          int64_t mem, int sign) {
  NodeSlot& n = slots_[i];
  if (!n.live) return;
  bool indexed = n.indexed_at >= 0;
  if (indexed) Unindex(i);
  for (int32_t idx : gpu_indices) {
    for (size_t g = 0; g < n.info.gpus.size(); ++g) {
      if (n.info.gpus[g].index != idx) continue;
      uint8_t want = sign > 0 ? 1 : 0;
      if (n.busy[g] != want) {
        n.busy[g] = want;
        if (n.info.gpus[g].healthy) n.free_gpus += sign > 0 ? -1 : 1;
      }
    }
  }
  n.free_cpu -= sign * cpu;
  n.free_mem -= sign * mem;
  if (indexed) Index(i);
}

void ClusterModel::AdjustReplica(int32_t i, const ReplicaPlacement& p, const Resources& r,
                                 const std::string& owner, int sign) {
  if (p.gpu_milli.empty()) {
    Adjust(i, p.gpus, r.cpu_milli, r.memory_mb, sign);
    return;
  }
  NodeSlot& n = slots_[i];
  if (!n.live) return;
  bool indexed = n.indexed_at >= 0;
  if (indexed) Unindex(i);
  n.free_gpus += ApplyShares(n, p, r.gpu_isolation, owner, sign, &n.busy, &n.shares);
  n.shared_gpus = n.shares.SharedGpus();
  n.free_cpu -= sign * r.cpu_milli;
  n.free_mem -= sign * r.memory_mb;
  if (indexed) Index(i);
}

void ClusterModel::AdjustPlacement(const std::vector<ReplicaPlacement>& placement,
                                   const Resources& r, const std::string& owner, int sign) {
  for (const ReplicaPlacement& p : placement) {
    int32_t i = Find(p.node);
    if (i >= 0) AdjustReplica(i, p, r, owner, sign);
  }
}

int32_t ClusterModel::Capacity(int32_t i, const Shape& s, TimeMs end, int32_t want) const {
  const NodeSlot& n = slots_[i];
  if (!n.live || !n.info.schedulable || !Matches(n, s)) return 0;
  return CapacityWith(n, s, end, want, n.free_gpus, n.free_cpu, n.free_mem);
}

int32_t ClusterModel::CapacityWith(const NodeSlot& n, const Shape& s, TimeMs end, int32_t want,
                                   int64_t g, int64_t c, int64_t m) {
  return CapacityWith(n, s, end, want, g, c, m, n.busy, n.shares);
}

int32_t ClusterModel::CapacityWith(const NodeSlot& n, const Shape& s, TimeMs end, int32_t want,
                                   int64_t g, int64_t c, int64_t m,
                                   const std::vector<uint8_t>& busy, const GpuShares& shares) {
  if (end > n.hold_start) {
    g -= n.hold_gpus;
    c -= n.hold_cpu;
    m -= n.hold_mem;
  }
  int64_t k = want;
  if (s.max_per_node > 0) k = std::min<int64_t>(k, s.max_per_node);
  if (s.gpus > 0) k = std::min<int64_t>(k, g / s.gpus);
  if (s.share) {
    // Room on GPUs that hold shares already, and on empty ones (not held for a reservation).
    int64_t slots = std::max<int64_t>(0, g) * SharesPerFreeGpu(n, s);
    for (size_t x = 0; x < shares.count.size(); ++x) {
      if (shares.count[x] > 0) slots += ShareSlotsWith(n, busy, shares, x, s);
    }
    k = std::min(k, slots);
  }
  if (s.cpu > 0) k = std::min<int64_t>(k, c / s.cpu);
  if (s.mem > 0) k = std::min<int64_t>(k, m / s.mem);
  if (g < 0 || c < 0 || m < 0) return 0;
  return static_cast<int32_t>(std::max<int64_t>(0, k));
}

void ClusterModel::SetUsage(int32_t i, const std::vector<uint8_t>& busy, const GpuShares* shares,
                            int32_t free_gpus, int32_t free_cpu, int64_t free_mem) {
  NodeSlot& n = slots_[i];
  bool indexed = n.indexed_at >= 0;
  if (indexed) Unindex(i);
  n.busy = busy;
  n.free_gpus = free_gpus;
  if (shares != nullptr) {
    n.shares = *shares;
    n.shared_gpus = n.shares.SharedGpus();
  }
  n.free_cpu = free_cpu;
  n.free_mem = free_mem;
  if (indexed) Index(i);
}

std::vector<int32_t> ClusterModel::PickGpus(int32_t i, int32_t gpus) const {
  const NodeSlot& n = slots_[i];
  std::vector<int32_t> out;
  if (gpus <= 0) return out;
  // Free GPUs per group, groups in ascending id (few per node).
  std::vector<std::pair<int32_t, int32_t>> groups;  // (group, free)
  for (size_t g = 0; g < n.info.gpus.size(); ++g) {
    if (n.busy[g] || !n.info.gpus[g].healthy) continue;
    int32_t id = n.info.gpus[g].group;
    auto it = std::find_if(groups.begin(), groups.end(), [&](auto& p) { return p.first == id; });
    if (it == groups.end()) {
      groups.push_back({id, 1});
    } else {
      ++it->second;
    }
  }
  std::sort(groups.begin(), groups.end());
  // Best fit: the group with the fewest free GPUs that still holds the replica.
  int32_t best = -1;
  for (size_t k = 0; k < groups.size(); ++k) {
    if (groups[k].second >= gpus && (best < 0 || groups[k].second < groups[best].second)) {
      best = static_cast<int32_t>(k);
    }
  }
  std::vector<int32_t> order;  // groups to draw from
  if (best >= 0) {
    order.push_back(groups[best].first);
  } else {
    std::stable_sort(groups.begin(), groups.end(),
                     [](auto& a, auto& b) { return a.second > b.second; });
    for (auto& [id, free] : groups) order.push_back(id);
  }
  for (int32_t group : order) {
    for (size_t g = 0; g < n.info.gpus.size() && static_cast<int32_t>(out.size()) < gpus; ++g) {
      if (n.busy[g] || !n.info.gpus[g].healthy || n.info.gpus[g].group != group) continue;
      out.push_back(n.info.gpus[g].index);
    }
  }
  return out;
}

namespace {

// No hold and no reservation mark on the node yet: it is not in `held_`, which ClearHolds walks.
bool HoldsNothing(const NodeSlot& n) {
  return n.hold_gpus == 0 && n.hold_cpu == 0 && n.hold_mem == 0 && n.hold_start == kUnknownTime &&
         n.reserved_from == kUnknownTime;
}

}  // namespace

void ClusterModel::AddHold(int32_t i, int32_t gpus, int32_t cpu, int64_t mem, TimeMs start) {
  NodeSlot& n = slots_[i];
  if (HoldsNothing(n)) held_.push_back(i);
  n.hold_gpus += gpus;
  held_gpus_ += gpus;
  n.hold_cpu += cpu;
  n.hold_mem += mem;
  n.hold_start = std::min(n.hold_start, start);
}

void ClusterModel::MarkReserved(int32_t i, TimeMs from) {
  NodeSlot& n = slots_[i];
  if (HoldsNothing(n)) held_.push_back(i);
  n.reserved_from = std::min(n.reserved_from, from);
}

void ClusterModel::ClearHolds() {
  for (int32_t i : held_) {
    if (i >= slot_count()) continue;
    NodeSlot& n = slots_[i];
    n.hold_gpus = n.hold_cpu = 0;
    n.hold_mem = 0;
    n.hold_start = kUnknownTime;
    n.reserved_from = kUnknownTime;
  }
  held_.clear();
  held_gpus_ = 0;
}

void ClusterModel::SetSourceRate(const std::string& source, int64_t bytes_per_s) {
  if (bytes_per_s > 0) {
    source_rates_[source] = bytes_per_s;
  } else {
    source_rates_.erase(source);
  }
}

bool ClusterModel::HoldsAll(int32_t i, const Shape& s) const {
  if (s.datasets == nullptr) return true;
  const std::vector<std::string>& held = slots_[i].info.datasets;
  for (const std::string& d : *s.datasets) {
    if (!std::binary_search(held.begin(), held.end(), d)) return false;
  }
  return true;
}

DurationMs ClusterModel::FetchMs(int32_t i, const Shape& s) const {
  if (s.datasets == nullptr || s.dataset_bytes == nullptr || source_rates_.empty()) return 0;
  const std::vector<std::string>& held = slots_[i].info.datasets;
  // Fetches from one source share its rate: their bytes add up, per source.
  std::map<std::string, int64_t> lacking;
  for (size_t k = 0; k < s.datasets->size(); ++k) {
    if (std::binary_search(held.begin(), held.end(), (*s.datasets)[k])) continue;
    lacking[(*s.dataset_sources)[k]] += (*s.dataset_bytes)[k];
  }
  DurationMs ms = 0;
  for (const auto& [source, bytes] : lacking) {
    auto rate = source_rates_.find(source);
    if (rate == source_rates_.end()) continue;
    ms = std::max<DurationMs>(ms, static_cast<DurationMs>(static_cast<double>(bytes) * 1000.0 /
                                                          static_cast<double>(rate->second)));
  }
  return ms;
}

}  // namespace corral::sched
