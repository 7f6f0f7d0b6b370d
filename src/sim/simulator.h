// The discrete-event simulator (DESIGN §12): replays a trace through the head's own core
// (head::HeadCore, and through it sched::Scheduler) with one emulated agent per node
// (sim/emulated_node.h) on virtual time. The trace's jobs are submitted at their times; the
// core places, preempts, enforces time limits, declares silent nodes lost and requeues, exactly
// as in a head; the loop only moves time and plays the processes. No wall clock is read inside
// the loop; the same trace and config give the same result.
//
// Datasets (SimConfig::data, data_world.h): a job that reads a dataset is submitted declaring
// it; each replica's process waits until its node's cache holds it (a fetch from the shared
// source where it does not), and the run's work begins once every replica has its data. The
// nodes report what their caches hold, so the head's placement sees it as it sees a real
// agent's.
//
// Run model (what a process does with its time). A job needs `duration` of service on all its
// GPUs at once. A run's processes start when the agents get its orders (the instant it is
// placed). A stop order (preemption, time limit) makes each process checkpoint and exit at the
// end of `preempt_grace`; the work it keeps is all of it when checkpoint_interval is 0
// (checkpoint on stop), else up to the last multiple of checkpoint_interval. Every run after
// the first spends `restart_overhead` before it makes progress again.
//
// What the head decides, and the simulator does not re-implement:
//  - Predictions (corral policy): the core's RuntimeEstimator learns from every job that ends;
//    `predict` may leave inputs out, and `oracle` gives the true duration instead (an upper
//    bound, through CoreConfig::adjust_scheduler_input; the baselines get the true duration and
//    progress the same way).
//  - Time limits: the core stops a run once it has run its job's limit; the job fails
//    (`timeout` in the report).
//  - Node failures: each node fails after an exponentially distributed up time (mean
//    node_mtbf, seeded): its processes die and its agent falls silent. The core marks it
//    unreachable, then down (its runs lost and requeued, not the job's failure) when it has
//    missed its syncs for the core's down_after (a minute). The node comes back after
//    node_repair and registers again. A failure keeps only the last periodic checkpoint.
// The head is reached through a HeadPort (sim/head_port.h): the core alone, or a whole head
// shell in the parity test. Not thread-safe; one Simulate call owns its head.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/agent_protocol.h"
#include "core/job.h"
#include "core/node.h"
#include "core/node_reservation.h"
#include "core/status.h"
#include "core/time.h"
#include "sched/runtime_estimate.h"
#include "sched/scheduler.h"
#include "sim/data_world.h"
#include "sim/elastic_model.h"
#include "sim/head_port.h"
#include "sim/oracle_bounds.h"
#include "sim/trace.h"

namespace corral::sim {

struct ClusterSpec {
  int32_t nodes = 0;
  int32_t gpus_per_node = 8;
  int32_t racks = 1;
  int64_t gpu_memory_mb = 32 * 1024;  // each GPU's device memory (shares are packed within it)
  // The nodes as their agents register, where a cluster is not that uniform (`corral whatif`
  // replays a head's own nodes); non-empty: these, and the fields above are not used.
  std::vector<RegisterRequest> registered;
};

// What the corral policy's predictions may use (SimConfig::predict).
struct PredictionInputs {
  bool history = true;  // a RuntimeEstimator over ended jobs, with `estimator`'s keys
  sched::EstimatorConfig estimator;
  bool time_limit = true;  // the trace's time limits bound the prediction
  bool oracle = false;     // the trace's true duration (overrides the others; not a real input)
  // An upper bound from the whole trace (oracle_bounds.h; overrides the others but oracle).
  OracleBound bound = OracleBound::kNone;
  double noise_sigma = 0;                             // OracleBound::kNoisy
  int bound_window = static_cast<int>(kBoundWindow);  // OracleBound::kWindow
};

struct SimConfig {
  ClusterSpec cluster;
  sched::OrderPolicy policy = sched::OrderPolicy::kFifo;
  DurationMs restart_overhead_ms = 0;
  DurationMs checkpoint_interval_ms = 0;  // 0: checkpoint on preempt, nothing lost
  DurationMs preempt_grace_ms = 0;
  DurationMs tick_ms = kMinute;  // periodic passes for preemptive policies; 0: none
  // SchedulerConfig::min_runtime_before_preempt_ms; < 0: the scheduler's default.
  DurationMs min_runtime_before_preempt_ms = -1;
  // SchedulerConfig::fair_share_half_life_ms; 0: the scheduler's default.
  DurationMs fair_share_half_life_ms = 0;
  // SchedulerConfig::las_thresholds_gpu_ms; empty: the scheduler's default.
  std::vector<DurationMs> las_thresholds_gpu_ms;
  // Queues for the corral policy: name -> guaranteed GPUs. Empty: one queue per trace queue
  // with a quota proportional to its share of the trace's GPU-time (QuotasByDemand).
  std::map<std::string, int32_t> quotas;
  // Queues as a head has them configured (quota, limit, weight, ...), set under any policy;
  // non-empty: these instead of `quotas`.
  std::vector<QueueConfig> queues;
  // Admin reservations and maintenance windows, created before the first submission; their
  // times count from it (as the trace's), their nodes are the simulated ones' names.
  std::vector<NodeReservationSpec> reservations;
  // Corral policy: what its run-time predictions may use (corral.predict.on: whether it uses
  // them at all).
  PredictionInputs predict;
  // The corral policy's own settings, as the head's scheduler has them (its defaults unless a
  // flag sets one): the simulator's flags write them, no copy field by field.
  sched::CorralConfig corral;
  // Node failures: mean up time of a node (0: nodes never fail), and how long it stays down.
  DurationMs node_mtbf_ms = 0;
  DurationMs node_repair_ms = kHour;
  uint64_t failure_seed = 1;
  // Submit every share of a GPU (TraceJob::gpu_milli, gpu_memory_mb) as one whole GPU: the
  // baseline of a scheduler without sharing.
  bool round_shares_up = false;
  // Start-time estimates: every estimate_every-th trace job (by index; 0: none) is estimated
  // as a user would see it after submitting, from the head's refresh at the end of the
  // instant it was submitted (after that instant's passes), for the report's accuracy
  // (estimate_accuracy.h). Estimating never changes a decision.
  int32_t estimate_every = 0;
  // How the head estimates them (HeadCore's CoreConfig::start_estimates).
  sched::EstimateOptions start_estimates;
  // Elastic jobs (elastic_model.h): off, every job is the rigid gang the trace gives it.
  ElasticModel elastic;
  // Datasets (data_world.h): each job reads its TraceJob::dataset, staged on its nodes before
  // its work begins. Off (no datasets): no job declares one.
  DataConfig data;
  // Measure wall time spent inside Scheduler::Schedule (reads the wall clock around that one
  // call; never feeds back into the simulation).
  bool profile = false;
};

bool IsPreemptivePolicy(sched::OrderPolicy p);

// One contiguous run of a job on its GPUs.
struct RunRecord {
  size_t job = 0;  // index into the trace's jobs
  TimeMs start = 0;
  TimeMs end = 0;
  int32_t gpus = 0;
  int64_t gpu_milli = 0;  // milli-GPUs held: gpus x 1000, or the share of one GPU
  std::vector<ReplicaPlacement> placement;
  bool preempted = false;
  bool lost = false;     // ended by a node failure
  bool timeout = false;  // ended at the job's time limit
};

struct JobOutcome {
  TimeMs first_start = -1;
  TimeMs end = -1;  // -1: never finished (rejected)
  int32_t preemptions = 0;
  int32_t lost_runs = 0;  // runs ended by node failures
  bool timeout = false;   // killed at its time limit
  bool rejected = false;
  std::string why_rejected;
  // SimConfig::estimate_every picked it: estimated_start is the head's estimate after its
  // submission (trace time), -1 where it started at once or the head had none.
  bool estimate_sampled = false;
  TimeMs estimated_start = -1;
  EstimateConfidence estimate_confidence = EstimateConfidence::kHigh;  // of estimated_start
};

struct SimResult {
  std::vector<JobOutcome> jobs;           // parallel to the input jobs
  std::vector<RunRecord> runs;            // ordered by (start, job)
  std::map<std::string, int32_t> quotas;  // as set (corral policy)
  int64_t total_gpus = 0;
  int64_t schedule_calls = 0;
  int64_t node_failures = 0;
  // Jobs predicted from their (user, job name) history (corral policy): at some queueing
  // (submit or requeue), and when first queued.
  int64_t predicted_by_name = 0;
  int64_t predicted_by_name_at_submit = 0;
  // GPU-ms of work thrown away: held by preempted or lost runs beyond the progress they kept
  // (restart overhead and grace included).
  int64_t lost_gpu_ms = 0;
  double schedule_seconds = 0;  // wall time inside Scheduler::Schedule (profiling only)
  // With SimConfig::data: what the nodes did with their data, and the GPU-ms runs held while
  // their replicas waited for it (not counted in lost_gpu_ms).
  DataStats data;
  int64_t staging_gpu_ms = 0;
};

// Milli-GPUs a trace job holds while it runs: its share of one GPU, or num_gpus x 1000 (with
// round_up, a share counts as the whole GPU).
int64_t HeldMilliGpus(const TraceJob& j, bool round_up = false);

// Replaces the jobs' submit times by a Poisson process (exponential gaps, seeded) whose rate
// offers `load` x the cluster's GPU capacity (`capacity_milli`) on average: rate = load x
// capacity / mean(held milli-GPUs x duration). The jobs keep their order. For traces whose own
// times do not load the cluster. REQUIRES: load > 0, capacity_milli > 0.
void PoissonArrivals(std::vector<TraceJob>* jobs, double load, int64_t capacity_milli,
                     uint64_t seed);

// Splits each queue a quota of `total_gpus` proportional to its GPU-time demand (largest
// remainder, ties by name); every queue with demand gets at least 0.
std::map<std::string, int32_t> QuotasByDemand(const std::vector<TraceJob>& jobs,
                                              int64_t total_gpus);

// REQUIRES: jobs sorted by submit_ms. `head`: the head the simulation runs on; unset: the
// head's core alone (MakeCorePort), as `corral simulate` runs.
Result<SimResult> Simulate(const std::vector<TraceJob>& jobs, const SimConfig& config,
                           HeadPortFactory head = {});

}  // namespace corral::sim
