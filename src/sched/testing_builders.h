// Builders for scheduler tests: MakeNode("n1").Gpus(8).Rack("r1"), MakeJob(1).Gpus(4).Queue("a").
// Test-only; header-only.
#pragma once

#include <utility>

#include <algorithm>
#include <string>

#include "sched/scheduler.h"

namespace corral::sched::testing {

class NodeBuilder {
 public:
  explicit NodeBuilder(std::string name) {
    n_.name = std::move(name);
    n_.cpu_milli = 64'000;
    n_.memory_mb = 512 * 1024;
  }
  // `count` GPUs of `model`, in NVLink groups of `group_size` (0: one group).
  NodeBuilder& Gpus(int count, const std::string& model = "A100", int group_size = 0) {
    n_.gpus.clear();
    for (int i = 0; i < count; ++i) {
      Gpu g;
      g.index = i;
      g.uuid = n_.name + "-gpu" + std::to_string(i);
      g.model = model;
      g.memory_mb = 80 * 1024;
      g.group = group_size > 0 ? i / group_size : 0;
      n_.gpus.push_back(g);
    }
    return *this;
  }
  NodeBuilder& Cpus(int cores) {
    n_.cpu_milli = cores * 1000;
    return *this;
  }
  NodeBuilder& MemoryMb(int64_t mb) {
    n_.memory_mb = mb;
    return *this;
  }
  NodeBuilder& Rack(const std::string& rack) { return Label("rack", rack); }
  NodeBuilder& Label(const std::string& k, const std::string& v) {
    n_.labels[k] = v;
    return *this;
  }
  NodeBuilder& Unhealthy(int index) {
    n_.gpus.at(index).healthy = false;
    return *this;
  }
  NodeBuilder& Unschedulable() {
    n_.schedulable = false;
    return *this;
  }
  // Its cache holds the dataset of this digest (NodeInfo::datasets, kept sorted).
  NodeBuilder& Holds(const std::string& digest) {
    n_.datasets.insert(std::lower_bound(n_.datasets.begin(), n_.datasets.end(), digest), digest);
    return *this;
  }
  const NodeInfo& Build() const { return n_; }
  operator NodeInfo() const { return n_; }  // NOLINT: builder

 private:
  NodeInfo n_;
};
inline NodeBuilder MakeNode(std::string name) { return NodeBuilder(std::move(name)); }

class JobBuilder {
 public:
  explicit JobBuilder(JobId id) {
    j_.id = id;
    j_.submitted_at = static_cast<TimeMs>(id);
    j_.per_replica.cpu_milli = 1000;
    j_.per_replica.memory_mb = 1024;
    j_.user = "u";
  }
  JobBuilder& Gpus(int per_replica) {
    j_.per_replica.gpu_milli = per_replica * kGpuMilli;
    return *this;
  }
  JobBuilder& Replicas(int n) {
    j_.replicas = n;
    return *this;
  }
  // An elastic job of min..max replicas, resized after its start.
  JobBuilder& Elastic(int min, int max) {
    j_.min_replicas = min;
    j_.replicas = max;
    j_.resizable = true;
    return *this;
  }
  // Hot spares of an elastic job (PendingJob::hot_spares).
  JobBuilder& HotSpares(int k) {
    j_.hot_spares = k;
    return *this;
  }
  JobBuilder& PerNode(int max_replicas) {
    j_.max_replicas_per_node = max_replicas;
    return *this;
  }
  JobBuilder& ShareMilli(int milli) {
    j_.per_replica.gpu_milli = milli;
    return *this;
  }
  JobBuilder& Cpus(int cores) {
    j_.per_replica.cpu_milli = cores * 1000;
    return *this;
  }
  JobBuilder& MemoryMb(int64_t mb) {
    j_.per_replica.memory_mb = mb;
    return *this;
  }
  JobBuilder& Queue(const std::string& q) {
    j_.queue = q;
    return *this;
  }
  JobBuilder& User(const std::string& u) {
    j_.user = u;
    return *this;
  }
  JobBuilder& Priority(int p) {
    j_.priority = p;
    return *this;
  }
  JobBuilder& Submit(TimeMs t) {
    j_.submitted_at = t;
    return *this;
  }
  JobBuilder& Limit(DurationMs ms) {
    j_.time_limit_ms = ms;
    return *this;
  }
  JobBuilder& Interactive(bool i = true) {
    j_.interactive = i;
    return *this;
  }
  JobBuilder& Serving(bool v = true) {
    j_.serving = v;
    return *this;
  }
  JobBuilder& Preemptible(bool p = true) {
    j_.preemptible = p;
    return *this;
  }
  JobBuilder& Model(const std::string& m) {
    j_.gpu_model = m;
    return *this;
  }
  JobBuilder& Label(const std::string& k, const std::string& v) {
    j_.node_labels[k] = v;
    return *this;
  }
  JobBuilder& Oracle(DurationMs ms) {
    j_.oracle_duration_ms = ms;
    return *this;
  }
  JobBuilder& Predicted(DurationMs ms) {
    j_.predicted_ms = ms;
    return *this;
  }
  // Predicted from `jobs` of its owner's ended jobs (PendingJob::prediction_jobs).
  JobBuilder& Predicted(DurationMs ms, int32_t jobs) {
    j_.predicted_ms = ms;
    j_.prediction_jobs = jobs;
    return *this;
  }
  JobBuilder& Attained(DurationMs gpu_ms) {
    j_.attained_ms = gpu_ms;
    return *this;
  }
  // It reads the dataset of this digest, of `bytes`, from `source` (PendingJob::datasets).
  JobBuilder& Reads(const std::string& digest, int64_t bytes, const std::string& source) {
    j_.datasets.push_back(digest);
    j_.dataset_bytes.push_back(bytes);
    j_.dataset_sources.push_back(source);
    return *this;
  }
  JobBuilder& Distribution(const RunTimeQuantiles& d) {
    j_.run_quantiles = d;
    return *this;
  }
  const PendingJob& Build() const { return j_; }
  operator PendingJob() const { return j_; }  // NOLINT: builder

 private:
  PendingJob j_;
};
inline JobBuilder MakeJob(JobId id) { return JobBuilder(id); }

// True if the pass placed job `id`.
inline bool Placed(const Decisions& d, JobId id) {
  for (const PlaceDecision& p : d.place) {
    if (p.job == id) return true;
  }
  return false;
}

// A running job on explicit GPUs: Running(MakeJob(1).Gpus(2), {{"n1", {0, 1}}}, started_at).
inline RunningJob Running(const PendingJob& job, std::vector<ReplicaPlacement> placement,
                          TimeMs started_at = 0) {
  return RunningJob{job, std::move(placement), started_at};
}

// The decision placing (resizing) job `id`, or nullptr.
inline const PlaceDecision* PlaceOf(const Decisions& d, JobId id) {
  for (const PlaceDecision& p : d.place) {
    if (p.job == id) return &p;
  }
  return nullptr;
}
inline const ResizeDecision* ResizeOf(const Decisions& d, JobId id) {
  for (const ResizeDecision& r : d.resize) {
    if (r.job == id) return &r;
  }
  return nullptr;
}

// The jobs a pass preempts, in its order.
inline std::vector<JobId> Victims(const Decisions& d) {
  std::vector<JobId> out;
  for (const PreemptDecision& p : d.preempt) out.push_back(p.job);
  return out;
}

// Why a pass left `id` waiting ("" if it did not).
inline std::string ReasonOf(const Decisions& d, JobId id) {
  for (const WaitReason& w : d.waiting) {
    if (w.job == id) return w.reason;
  }
  return "";
}

// A config where a run may be preempted as soon as it starts.
inline SchedulerConfig NoMinimumRuntime() {
  SchedulerConfig c;
  c.min_runtime_before_preempt_ms = 0;
  return c;
}

}  // namespace corral::sched::testing
