#include "sched/job_input.h"

#include <algorithm>
#include <cstdint>

#include "core/dataset_key.h"
#include "sched/order_policy.h"

namespace corral::sched {

PendingJob ToPendingJob(const Job& job, const RuntimeEstimator* estimator) {
  PendingJob p;
  p.id = job.id;
  p.queue = job.spec.queue;
  p.user = job.owner;
  p.priority = job.spec.priority;
  p.submitted_at = job.submitted_at;
  p.replicas = job.spec.replicas;
  p.max_replicas_per_node = job.spec.max_replicas_per_node;
  if (job.spec.IsElastic()) {
    p.min_replicas = job.spec.min_replicas;
    p.resizable = !job.spec.batch;
    p.hot_spares = p.resizable ? job.spec.hot_spares : 0;
  }
  p.per_replica = job.spec.per_replica;
  p.gpu_model = job.spec.gpu_model;
  p.node_labels = job.spec.node_labels;
  p.time_limit_ms = job.spec.time_limit_ms;
  p.preemptible = job.spec.preemptible;
  p.reservation = job.spec.reservation;
  for (const DatasetRef& d : job.spec.datasets) {
    p.datasets.push_back(d.digest);
    p.dataset_bytes.push_back(d.bytes);
    p.dataset_sources.push_back(DatasetSourceKey(d.source));
  }
  p.interactive = job.spec.interactive;
  p.serving = !job.spec.service.empty();
  p.name = job.spec.name;
  p.predicted_ms = estimator ? estimator->Predict(job.owner, job.spec.name, job.spec.queue,
                                                  TotalGpus(p), job.spec.time_limit_ms)
                             : job.spec.time_limit_ms;
  if (const Run* r = job.CurrentRun(); r && !IsRunOver(r->state)) {
    p.last_checkpoint_at = r->last_checkpoint_at;
  }
  // GPU-time the job's finished runs held: the scheduler orders a queue by attained service
  // (and adds the current run itself), so a requeued job keeps the level it reached.
  // An elastic run counts the replicas it held over time (Run::ReplicaMs).
  const DurationMs gpus = job.spec.per_replica.WholeGpus();
  for (const Run& r : job.runs) {
    // started_at 0 means "never reported running" to the head; the simulator's clock starts
    // at 0, where a run placed at t = 0 also starts at 0 (scheduled_at == 0 never happens in
    // the head, whose times are Unix times).
    bool ran = r.started_at > 0 || r.scheduled_at == 0;
    if (IsRunOver(r.state) && ran && r.ended_at > r.started_at) {
      p.attained_ms += gpus * (r.joined_at.empty() ? job.spec.replicas * (r.ended_at - r.started_at)
                                                   : r.ReplicaMs(r.ended_at));
    }
  }
  if (estimator) {
    p.prediction_jobs = static_cast<int32_t>(
        std::min<int64_t>(INT32_MAX, estimator->OwnerJobs(job.owner, job.spec.name)));
    const int64_t total_gpus = TotalGpus(p);
    p.run_quantiles =
        estimator->Quantiles(job.owner, job.spec.name, total_gpus, job.spec.time_limit_ms,
                             p.attained_ms / std::max<int64_t>(1, total_gpus));
  }
  return p;
}

namespace {

// One replica's (or, for a run that never resized, all replicas') usage over [from, to).
PastUsage JobInputUsage(const Job& job, const std::vector<ReplicaPlacement>& replicas, TimeMs from,
                        TimeMs to) {
  PastUsage u;
  u.queue = job.spec.queue.empty() ? "default" : job.spec.queue;
  u.user = job.owner;
  const int64_t n = static_cast<int64_t>(replicas.size());
  for (const ReplicaPlacement& p : replicas) {
    for (const GpuShare& g : Shares(p)) u.gpu_milli += g.milli;
  }
  u.cpu_milli = n * job.spec.per_replica.cpu_milli;
  u.memory_mb = n * job.spec.per_replica.memory_mb;
  u.from = from;
  u.to = to;
  return u;
}

}  // namespace

std::vector<PastUsage> PastUsageOf(const Job& job, TimeMs now) {
  std::vector<PastUsage> out;
  for (const Run& run : job.runs) {
    if (run.started_at <= 0) continue;  // never ran (as RunGpuSecondsIn counts)
    const TimeMs end = IsRunOver(run.state) ? run.ended_at : now;
    if (run.joined_at.empty()) {
      if (end > run.started_at)
        out.push_back(JobInputUsage(job, run.placement, run.started_at, end));
      continue;
    }
    // An elastic run that resized: each replica for the time it held its resources.
    for (size_t r = 0; r < run.placement.size(); ++r) {
      const auto [from, to] = run.ReplicaHeld(static_cast<int32_t>(r), end);
      if (to > from) out.push_back(JobInputUsage(job, {run.placement[r]}, from, to));
    }
  }
  return out;
}

}  // namespace corral::sched
