#include "sim/fill_eval.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <unordered_map>

#include "sched/cluster_model.h"
#include "sched/placement.h"

namespace corral::sim {
namespace {

// A cluster that places tasks one at a time and never frees them.
class FillCluster {
 public:
  virtual ~FillCluster() = default;
  virtual bool Place(const AlibabaTask& t) = 0;
};

// Corral's own placement: the scheduler's model and Placer, as a pass uses them.
class CorralCluster : public FillCluster {
 public:
  CorralCluster(const std::vector<AlibabaNode>& nodes, bool whole) : whole_(whole) {
    for (const AlibabaNode& a : nodes) {
      sched::NodeInfo n;
      n.name = a.name;
      n.cpu_milli = a.cpu_milli;
      n.memory_mb = a.memory_mib;
      for (int32_t g = 0; g < a.gpus; ++g) {
        n.gpus.push_back(
            {g, a.name + "-" + std::to_string(g), a.model, AlibabaGpuMemoryMib(a.model), 0, true});
      }
      model_.Upsert(n);
    }
  }
  bool Place(const AlibabaTask& t) override {
    sched::PendingJob j;
    j.per_replica.cpu_milli = t.cpu_milli;
    j.per_replica.memory_mb = t.memory_mib;
    j.per_replica.gpu_milli = t.IsShare() && !whole_ ? t.gpu_milli : t.num_gpu * kGpuMilli;
    sched::Shape s = sched::ShapeOf(j);
    int64_t work = 0;
    std::vector<ReplicaPlacement> out;
    sched::Placer placer(model_, &work);
    return placer.Place(s, sched::kUnknownTime, /*keep=*/true, &out);
  }

 private:
  bool whole_;
  sched::ClusterModel model_;
};

// The state the baselines score: free CPU, memory and milli-GPUs of each GPU.
struct FreeNode {
  int32_t cpu = 0, cpu_total = 0;
  int64_t mem = 0;
  std::vector<int32_t> gpu;  // free milli-GPUs of each GPU
  int32_t model = 0;
};

bool FitsNode(const FreeNode& n, const AlibabaTask& t) {
  if (n.cpu < t.cpu_milli || n.mem < t.memory_mib) return false;
  if (t.IsShare()) {
    for (int32_t f : n.gpu) {
      if (f >= t.gpu_milli) return true;
    }
    return false;
  }
  int32_t whole = 0;
  for (int32_t f : n.gpu) whole += f == kGpuMilli;
  return whole >= t.num_gpu;
}

// The GPU choices inside a node that differ: for a share, one GPU per distinct free amount
// that holds it; for whole GPUs, the first free ones.
std::vector<std::vector<int32_t>> Choices(const FreeNode& n, const AlibabaTask& t) {
  std::vector<std::vector<int32_t>> out;
  if (t.IsShare()) {
    std::vector<int32_t> seen;
    for (size_t g = 0; g < n.gpu.size(); ++g) {
      if (n.gpu[g] < t.gpu_milli || std::count(seen.begin(), seen.end(), n.gpu[g])) continue;
      seen.push_back(n.gpu[g]);
      out.push_back({static_cast<int32_t>(g)});
    }
    return out;
  }
  std::vector<int32_t> pick;
  for (size_t g = 0; g < n.gpu.size() && static_cast<int32_t>(pick.size()) < t.num_gpu; ++g) {
    if (n.gpu[g] == kGpuMilli) pick.push_back(static_cast<int32_t>(g));
  }
  out.push_back(pick);
  return out;
}

void Take(FreeNode* n, const AlibabaTask& t, const std::vector<int32_t>& gpus) {
  n->cpu -= t.cpu_milli;
  n->mem -= t.memory_mib;
  for (int32_t g : gpus) n->gpu[g] -= t.IsShare() ? t.gpu_milli : kGpuMilli;
}

class ScoredCluster : public FillCluster {
 public:
  ScoredCluster(const std::vector<AlibabaNode>& nodes, const std::vector<AlibabaTask>& tasks,
                bool fgd)
      : fgd_(fgd) {
    std::map<std::string, int32_t> models;
    for (const AlibabaNode& a : nodes) {
      FreeNode n;
      n.cpu = n.cpu_total = a.cpu_milli;
      n.mem = a.memory_mib;
      n.gpu.assign(a.gpus, kGpuMilli);
      n.model = models.emplace(a.model, static_cast<int32_t>(models.size())).first->second;
      nodes_.push_back(std::move(n));
    }
    // The target workload: the trace's task types and how often each comes.
    std::map<std::tuple<int32_t, int64_t, int32_t, int32_t>, int64_t> counts;
    for (const AlibabaTask& t : tasks)
      ++counts[{t.cpu_milli, t.memory_mib, t.num_gpu, t.gpu_milli}];
    for (const auto& [k, c] : counts) {
      AlibabaTask t;
      std::tie(t.cpu_milli, t.memory_mib, t.num_gpu, t.gpu_milli) = k;
      types_.push_back({t, static_cast<double>(c) / static_cast<double>(tasks.size())});
    }
  }

  bool Place(const AlibabaTask& t) override {
    int32_t best = -1;
    std::vector<int32_t> best_gpus;
    double best_score = 0;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const FreeNode& n = nodes_[i];
      if (!FitsNode(n, t)) continue;
      double before = fgd_ ? Frag(n) : 0;
      for (const std::vector<int32_t>& gpus : Choices(n, t)) {
        FreeNode after = n;
        Take(&after, t, gpus);
        double score = fgd_ ? Frag(after) - before : BestFitScore(after, gpus);
        if (best < 0 || score < best_score - 1e-9) {
          best = static_cast<int32_t>(i);
          best_gpus = gpus;
          best_score = score;
        }
      }
    }
    if (best < 0) return false;
    Take(&nodes_[best], t, best_gpus);
    return true;
  }

 private:
  struct Type {
    AlibabaTask task;
    double p;
  };

  // What is left after placing, CPU and GPU each as a fraction of the node; among equal
  // nodes the GPU with the least left (a share's best fit).
  static double BestFitScore(const FreeNode& n, const std::vector<int32_t>& gpus) {
    int64_t left = 0;
    for (int32_t f : n.gpu) left += f;
    double gpu_total = std::max<size_t>(1, n.gpu.size()) * double{kGpuMilli};
    double score = double(n.cpu) / std::max(1, n.cpu_total) + double(left) / gpu_total;
    if (gpus.size() == 1) score += 1e-6 * n.gpu[gpus[0]];
    return score;
  }

  // FGD's node fragmentation: for each task type, the free GPU it cannot use (all of it if
  // the task does not fit the node; else the GPUs with less free than it needs of one),
  // weighted by how often the type comes.
  double Frag(const FreeNode& n) {
    std::string key(reinterpret_cast<const char*>(&n.cpu), sizeof n.cpu);
    key.append(reinterpret_cast<const char*>(&n.mem), sizeof n.mem);
    key.append(reinterpret_cast<const char*>(&n.model), sizeof n.model);
    std::vector<int32_t> sorted = n.gpu;
    std::sort(sorted.begin(), sorted.end());
    key.append(reinterpret_cast<const char*>(sorted.data()), sorted.size() * sizeof(int32_t));
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    int64_t free_all = 0;
    for (int32_t f : n.gpu) free_all += f;
    double frag = 0;
    for (const Type& type : types_) {
      const AlibabaTask& t = type.task;
      int64_t f = 0;
      if (!FitsNode(n, t)) {
        f = free_all;
      } else {
        int32_t need = t.IsShare() ? t.gpu_milli : (t.num_gpu > 0 ? kGpuMilli : 0);
        for (int32_t g : n.gpu) f += g < need ? g : 0;
      }
      frag += type.p * static_cast<double>(f);
    }
    memo_.emplace(std::move(key), frag);
    return frag;
  }

  bool fgd_;
  std::vector<FreeNode> nodes_;
  std::vector<Type> types_;
  std::unordered_map<std::string, double> memo_;
};

std::unique_ptr<FillCluster> MakeCluster(FillPolicy p, const std::vector<AlibabaNode>& nodes,
                                         const std::vector<AlibabaTask>& tasks) {
  switch (p) {
    case FillPolicy::kCorral:
      return std::make_unique<CorralCluster>(nodes, false);
    case FillPolicy::kWholeGpus:
      return std::make_unique<CorralCluster>(nodes, true);
    case FillPolicy::kFgd:
      return std::make_unique<ScoredCluster>(nodes, tasks, true);
    case FillPolicy::kBestFit:
      return std::make_unique<ScoredCluster>(nodes, tasks, false);
  }
  return nullptr;
}

}  // namespace

const char* FillPolicyName(FillPolicy p) {
  switch (p) {
    case FillPolicy::kCorral:
      return "corral";
    case FillPolicy::kFgd:
      return "fgd";
    case FillPolicy::kBestFit:
      return "bestfit";
    case FillPolicy::kWholeGpus:
      return "whole";
  }
  return "corral";
}

bool ParseFillPolicy(const std::string& text, FillPolicy* out) {
  for (FillPolicy p :
       {FillPolicy::kCorral, FillPolicy::kFgd, FillPolicy::kBestFit, FillPolicy::kWholeGpus}) {
    if (text == FillPolicyName(p)) {
      *out = p;
      return true;
    }
  }
  return false;
}

double FillSummary::Mean(double FillRun::*field) const {
  double sum = 0;
  for (const FillRun& r : runs) sum += r.*field;
  return runs.empty() ? 0 : sum / static_cast<double>(runs.size());
}

double FillSummary::Stddev(double FillRun::*field) const {
  if (runs.size() < 2) return 0;
  double m = Mean(field), ss = 0;
  for (const FillRun& r : runs) ss += (r.*field - m) * (r.*field - m);
  return std::sqrt(ss / static_cast<double>(runs.size() - 1));
}

FillSummary RunFill(const std::vector<AlibabaNode>& nodes, const std::vector<AlibabaTask>& tasks,
                    FillPolicy policy, int32_t runs, uint64_t seed) {
  FillSummary s;
  s.policy = policy;
  for (const AlibabaNode& n : nodes) s.capacity_milli += int64_t{n.gpus} * kGpuMilli;
  for (int32_t k = 0; k < runs && !tasks.empty(); ++k) {
    std::mt19937_64 rng(seed + static_cast<uint64_t>(k));
    std::unique_ptr<FillCluster> cluster = MakeCluster(policy, nodes, tasks);
    FillRun r;
    int64_t asked = 0, given = 0;
    bool failed_once = false;
    while (asked < s.capacity_milli) {
      const AlibabaTask& t = tasks[rng() % tasks.size()];
      asked += t.GpuMilli();
      if (cluster->Place(t)) {
        ++r.placed;
        given += t.GpuMilli();  // what the task asked for: a share rounded up wastes the rest
      } else {
        ++r.failed;
        if (!failed_once && t.GpuMilli() > 0) {
          failed_once = true;
          r.first_failure = 1.0 - double(given) / double(s.capacity_milli);
        }
      }
    }
    r.unallocated = 1.0 - double(given) / double(s.capacity_milli);
    if (!failed_once) r.first_failure = r.unallocated;
    s.runs.push_back(r);
  }
  return s;
}

}  // namespace corral::sim
