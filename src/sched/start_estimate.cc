#include "sched/start_estimate.h"

#include <algorithm>
#include <climits>
#include <queue>
#include <tuple>

namespace corral::sched {
namespace {

// Free GPUs per node, with the nodes grouped by how many they have free, so that whether a
// gang fits is a sum over GPU counts rather than a scan of the nodes.
class FreeGpus {
 public:
  FreeGpus(std::vector<int32_t> free, int32_t max_gpus, bool index_nodes)
      : free_(std::move(free)), count_(max_gpus + 1, 0), index_nodes_(index_nodes) {
    if (index_nodes_) {
      nodes_.resize(max_gpus + 1);
      pos_.resize(free_.size(), 0);
    }
    for (int32_t n = 0; n < static_cast<int32_t>(free_.size()); ++n) Enter(n);
  }
  int32_t operator[](int32_t n) const { return free_[n]; }
  void Add(int32_t n, int32_t delta) {
    Leave(n);
    free_[n] = std::clamp(free_[n] + delta, 0, max_gpus());
    Enter(n);
  }
  int32_t max_gpus() const { return static_cast<int32_t>(count_.size()) - 1; }
  int64_t count(int32_t k) const { return count_[k]; }
  const std::vector<int32_t>& nodes(int32_t k) const { return nodes_[k]; }

 private:
  void Enter(int32_t n) {
    ++count_[free_[n]];
    if (!index_nodes_) return;
    pos_[n] = static_cast<int32_t>(nodes_[free_[n]].size());
    nodes_[free_[n]].push_back(n);
  }
  void Leave(int32_t n) {
    --count_[free_[n]];
    if (!index_nodes_) return;
    std::vector<int32_t>& v = nodes_[free_[n]];
    v[pos_[n]] = v.back();
    pos_[v.back()] = pos_[n];
    v.pop_back();
  }
  std::vector<int32_t> free_;
  std::vector<int64_t> count_;
  std::vector<std::vector<int32_t>> nodes_;  // by free GPUs (unordered)
  std::vector<int32_t> pos_;                 // each node's place in its nodes_ list
  bool index_nodes_;
};

int32_t PerNode(const EstimateJob& j, int32_t free) {
  int32_t n = free / j.gpus_per_replica;
  return j.max_replicas_per_node > 0 ? std::min(n, j.max_replicas_per_node) : n;
}

bool Matches(const EstimateJob& j, const EstimateNode& n) {
  return j.gpu_model.empty() || j.gpu_model == n.gpu_model;
}

// Does the job fit on `f`? Jobs asking for a GPU model scan the nodes.
bool Fits(const EstimateJob& j, const FreeGpus& f, const std::vector<EstimateNode>& nodes) {
  int64_t room = 0;
  if (!j.gpu_model.empty()) {
    for (int32_t n = 0; n < static_cast<int32_t>(nodes.size()) && room < j.replicas; ++n) {
      if (Matches(j, nodes[n])) room += PerNode(j, f[n]);
    }
    return room >= j.replicas;
  }
  for (int32_t k = f.max_gpus(); k >= j.gpus_per_replica && room < j.replicas; --k) {
    room += f.count(k) * PerNode(j, k);
  }
  return room >= j.replicas;
}

// Replicas per node for a job that fits on `f`: on one node if one has room for all (the one
// with the least room), else on the nodes with the most free GPUs first (fewest nodes).
std::vector<std::pair<int32_t, int32_t>> Choose(const EstimateJob& j, const FreeGpus& f,
                                                const std::vector<EstimateNode>& nodes) {
  std::vector<std::pair<int32_t, int32_t>> out;
  int32_t left = j.replicas;
  if (!j.gpu_model.empty()) {
    std::vector<int32_t> order;
    for (int32_t n = 0; n < static_cast<int32_t>(nodes.size()); ++n) {
      if (Matches(j, nodes[n]) && PerNode(j, f[n]) > 0) order.push_back(n);
    }
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return f[a] > f[b]; });
    for (int32_t n : order) {
      if (left == 0) break;
      int32_t take = std::min(left, PerNode(j, f[n]));
      out.push_back({n, take});
      left -= take;
    }
    return out;
  }
  for (int32_t k = j.gpus_per_replica; k <= f.max_gpus(); ++k) {
    if (f.count(k) > 0 && PerNode(j, k) >= left) return {{f.nodes(k).back(), left}};
  }
  for (int32_t k = f.max_gpus(); k >= j.gpus_per_replica && left > 0; --k) {
    for (int32_t n : f.nodes(k)) {
      if (left == 0) break;
      int32_t take = std::min(left, PerNode(j, k));
      out.push_back({n, take});
      left -= take;
    }
  }
  return out;
}

}  // namespace

std::vector<StartEstimate> SweepStarts(const std::vector<EstimateNode>& nodes,
                                       const std::vector<EstimateRelease>& releases,
                                       const std::vector<EstimateJob>& jobs, TimeMs now) {
  using Release = std::tuple<TimeMs, int32_t, int32_t>;  // at, node, GPUs
  std::priority_queue<Release, std::vector<Release>, std::greater<>> ends;
  std::vector<int32_t> free(nodes.size(), 0);
  std::vector<int32_t> eventual(nodes.size(), 0);  // free once every known end has passed
  for (size_t n = 0; n < nodes.size(); ++n) free[n] = eventual[n] = std::max(0, nodes[n].free_gpus);
  for (const EstimateRelease& r : releases) {
    if (r.at == kUnknownTime || r.node < 0 || r.node >= static_cast<int32_t>(nodes.size()))
      continue;
    ends.push({std::max(r.at, now), r.node, r.gpus});
    eventual[r.node] += r.gpus;
  }
  int32_t max_gpus = 0;
  for (int32_t e : eventual) max_gpus = std::max(max_gpus, e);
  FreeGpus at_cursor(std::move(free), max_gpus, /*index_nodes=*/true);
  FreeGpus at_end(std::move(eventual), max_gpus, /*index_nodes=*/false);
  TimeMs cursor = now;
  auto advance = [&] {  // to the next end, releasing everything that ends then
    cursor = std::max(cursor, std::get<0>(ends.top()));
    while (!ends.empty() && std::get<0>(ends.top()) <= cursor) {
      at_cursor.Add(std::get<1>(ends.top()), std::get<2>(ends.top()));
      ends.pop();
    }
  };
  if (!ends.empty() && std::get<0>(ends.top()) <= now) advance();

  std::vector<StartEstimate> out;
  out.reserve(jobs.size());
  for (const EstimateJob& j : jobs) {
    StartEstimate& e = out.emplace_back();
    e.job = j.id;
    if (j.gpus_per_replica <= 0 || j.replicas <= 0) {
      e.start = cursor;
      continue;
    }
    if (j.gpus_per_replica > max_gpus || !Fits(j, at_end, nodes)) continue;  // never fits
    while (!Fits(j, at_cursor, nodes) && !ends.empty()) advance();
    if (!Fits(j, at_cursor, nodes)) continue;
    e.start = cursor;
    for (auto [n, replicas] : Choose(j, at_cursor, nodes)) {
      int32_t gpus = replicas * j.gpus_per_replica;
      at_cursor.Add(n, -gpus);
      if (j.duration_ms > 0) {
        ends.push({cursor + j.duration_ms, n, gpus});
      } else {
        at_end.Add(n, -gpus);
      }
      e.nodes.push_back(nodes[n].name);
    }
    std::sort(e.nodes.begin(), e.nodes.end());
    e.nodes.erase(std::unique(e.nodes.begin(), e.nodes.end()), e.nodes.end());
  }
  return out;
}

}  // namespace corral::sched
