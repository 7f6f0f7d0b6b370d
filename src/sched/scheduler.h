// The scheduling library (DESIGN §6): pure, deterministic, no I/O, no threads, no wall clock.
//
// The Scheduler keeps its own model of the cluster, fed by events from its driver (the head
// or the simulator), so that a pass does work proportional to what changed, not to the size
// of the cluster. Time is a parameter of every call. The same sequence of calls gives the
// same decisions.
//
// Contract with the driver:
//  - Place decisions are "assumed": the scheduler binds the resources in its model at once
//    (the run's started_at is the `now` of that pass). The driver makes them durable and acts
//    on them; if it cannot, it calls RemoveRunning.
//  - Preempt decisions leave the victim's resources bound until the driver reports the run
//    over with RemoveRunning, then re-adds the job with AddPending (a new run). A victim is
//    named at most once while it is being preempted. The job it makes room for waits (with
//    the room held for it) until the victims are removed; it is then placed by a later pass.
//  - A finished or cancelled job: RemovePending or RemoveRunning.
//  - Attained service (SRTF, LAS): PendingJob::attained_ms is the GPU-ms the job received
//    before its current run. For a running job the scheduler adds gpus * (now - started_at)
//    itself, so the driver only re-adds a preempted job with the new total (or calls
//    UpdateAttained).
//
// Order (SchedulerConfig::policy):
//  - kCorral: priority (higher first), then queue fair share (queues under their quota first,
//    then dominant-resource share of current allocation plus decayed usage against the
//    queue's quota, divided by its weight; with borrowing_queues_by_level, queues over their
//    quota by their best job's LAS level and predicted remaining bucket before share), then
//    (las_within_queue) the LAS level of attained service, lower first, then user fair share
//    inside the queue, then submit time, then id.
//    Reclaims borrowed quota and lets higher priority preempt lower; with las_within_queue a
//    job may also preempt a preemptible run of its own queue and priority that sits in a
//    strictly higher LAS level (Tiresias' 2D-LAS inside a queue: it needs no durations, only
//    the attained service the driver passes in attained_ms).
//  - kFifo: submit time, then id; strict head of line: nothing starts behind a blocked job;
//    never preempts.
//  - kSjf: oracle_duration_ms ascending; non-preemptive; backfills like kCorral.
//  - kSrtf: remaining = oracle_duration_ms - attained_ms / gpus ascending; preemptive: a
//    running preemptible job with a strictly longer remaining time may be preempted.
//  - kLas: Tiresias-style discretized least attained service: level = number of
//    las_thresholds_gpu_ms at or below the attained GPU-ms, lower level first, FIFO inside a
//    level; preemptive: a running preemptible job in a strictly higher level may be preempted.
//  The baselines ignore priority, quotas and fair share; queue limits hold for every policy.
//
// Admin reservations (NodeReservation, Slurm's `scontrol create reservation`): no job runs
// on a reserved node during the reservation unless it was submitted into it. A job may start
// on such a node before the reservation only if its time limit ends by the reservation's
// start (a job without a limit waits: its run could overlap); backfill fills the node until
// then. A job of a reservation starts only during it, on its nodes, and only if its limit
// ends by the reservation's end. A maintenance window takes no job at all. Runs already on
// the node are not stopped. Jobs kept off reserved nodes wait with PendingCode::
// kReservationWait, naming the reservation.
//
// Blocked jobs and backfill: the first `reservation_depth` jobs (in order) that cannot start
// get a reservation: the earliest time and nodes at which they fit, computed from running
// jobs' expected ends (started_at + time_limit_ms; unknown when the limit is 0). A lower job
// starts only if it does not delay a reservation: it ends before the reservation starts, or
// it leaves the reserved resources free. With an unknown start the reserved resources are
// never lent, so a large job is not starved by a stream of small ones. With backfill = false
// nothing starts behind the first blocked job.
//
// Owned by one thread (the head's state machine strand, or the simulator loop).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/job.h"
#include "core/node.h"
#include "core/resources.h"
#include "core/time.h"
#include "sched/run_time_quantiles.h"

namespace corral::sched {

// A time that is not known (a reservation behind jobs without a time limit).
constexpr TimeMs kUnknownTime = INT64_MAX;

struct NodeInfo {
  std::string name;
  std::map<std::string, std::string> labels;  // "rack", "gpu_model", ...
  bool schedulable = true;                    // false: draining, unreachable, down
  int32_t cpu_milli = 0;
  int64_t memory_mb = 0;
  std::vector<Gpu> gpus;  // healthy ones are allocatable
  // Digests of the datasets its cache holds, sorted: among nodes that fit, a job prefers those
  // holding more of its datasets (a score, never a constraint).
  std::vector<std::string> datasets;
};

// Order policy: `kCorral` is the production policy (priority, queue fair share, user fair
// share, submit time). The others are the simulator's baselines (DESIGN §12); they use
// fields the production driver leaves at zero (oracle duration, attained service).
enum class OrderPolicy { kCorral, kFifo, kSjf, kSrtf, kLas };
const char* OrderPolicyName(OrderPolicy p);
bool ParseOrderPolicy(const std::string& text, OrderPolicy* out);

// The numbers a pass reads come first and the strings last: a pass walks past many jobs and
// reads few fields of each, and the first two cache lines hold all it needs of most of them.
struct PendingJob {
  JobId id = 0;
  int32_t priority = 0;
  int32_t replicas = 1;
  TimeMs submitted_at = 0;
  int32_t max_replicas_per_node = 0;  // JobSpec::max_replicas_per_node; 0: no limit
  // An elastic job (JobSpec::min_replicas, docs/elastic.md): it starts with as many replicas
  // between min_replicas and `replicas` as fit; 0: a rigid gang.
  int32_t min_replicas = 0;
  // Elastic and resized after its start: grown into idle GPUs, shrunk to min_replicas before
  // it is preempted. False for a batch job (Slurm's --nodes=MIN-MAX sizes it at start only).
  bool resizable = false;
  // A resizable job's hot spares (JobSpec::hot_spares): up to this many replica-sized slots
  // held for its run on nodes without its replicas while no job waits; a replica lost with
  // its node is replaced on one at the start of the next pass, before the pass order.
  int32_t hot_spares = 0;
  bool preemptible = false;
  // An interactive session (JobSpec::interactive): counted against its queue's
  // max_interactive_gpus_per_user.
  bool interactive = false;
  // A service's replica (JobSpec::service, docs/services.md): serving comes before training,
  // so it may preempt preemptible runs that are not replicas (training) of its priority as if
  // they were of a lower one (it outranks them), under the same rules and budgets. A replica
  // run is never a LAS victim: its attained service says nothing about its remaining work.
  bool serving = false;
  // It may preempt lower-priority runs by priority (its owner's QoS's right; docs/qos.md).
  // Quota reclaim and attained-service (LAS) preemption do not depend on it.
  bool may_preempt = true;
  Resources per_replica;
  DurationMs time_limit_ms = 0;  // 0: unknown; backfill treats it as infinite
  // A running job's last checkpoint in its current run (0: none reported): work before it is
  // not lost by a preemption, so victims that just checkpointed are preferred.
  TimeMs last_checkpoint_at = 0;
  // Predicted run time of the whole job in wall ms (RuntimeEstimator::Predict: its owner's and
  // its name's history, its time limit; never its true duration); 0: no prediction.
  DurationMs predicted_ms = 0;
  // Simulator-only inputs of the baseline policies.
  DurationMs oracle_duration_ms = 0;
  DurationMs attained_ms = 0;  // GPU-time received before the current run, in GPU-ms
  // The distribution behind the prediction (RuntimeEstimator::Quantiles: the owner's recent
  // run times, bounded by the time limit); empty: predicted_ms alone. With it, kCorral's
  // predicted remaining time conditions on the run time the job has had (prediction_rule).
  SharedQuantiles run_quantiles;
  std::string queue = "default";
  std::string user;
  std::string name;  // the job's name (JobSpec::name); with `user`, keys its run-time history
  std::string gpu_model;
  std::map<std::string, std::string> node_labels;
  // The admin reservation it runs in (NodeReservation::name): only on its nodes, during it.
  std::string reservation;
  std::vector<std::string> datasets;  // digests of the datasets it reads (NodeInfo::datasets)
  // Per datasets[i]: its bytes and its source (DatasetSourceKey). A node lacking it would fetch
  // them at the source's measured rate (Scheduler::SetSourceRate) before the job starts.
  std::vector<int64_t> dataset_bytes;
  std::vector<std::string> dataset_sources;
  // Ended jobs of its owner behind predicted_ms and run_quantiles (RuntimeEstimator::
  // OwnerJobs); 0: the prediction, if any, is other users' (its queue's) or its time limit.
  // How much a start-time estimate resting on the prediction may be trusted.
  int32_t prediction_jobs = 0;
};

struct RunningJob {
  PendingJob job;
  std::vector<ReplicaPlacement> placement;
  TimeMs started_at = 0;  // of this run; the minimum runtime and lost work count from here
  // An elastic run's last `leaving` replicas of placement are leaving it (a shrink decided by
  // an earlier head): bound until ResizeRunning, never taken or grown meanwhile.
  int32_t leaving = 0;
};

// How much preemption a pass may add, over sliding windows (kCorral; see preempt_budget.h).
// A decision is allowed while the window's total is below the limit, so one decision may
// overshoot it (a gang needing many victims is delayed, never starved). 0: the default named
// beside each field; < 0: unlimited.
struct PreemptionBudget {
  // Runs preempted in the last minute. Default: 1 per 2,000 running runs (of the cluster, or
  // of the queue), at least 2 (cluster) or 1 (queue).
  int64_t runs_per_minute = 0;
  // GPU-seconds of work lost (since each victim's last checkpoint, or its start) in the last
  // hour. Default: the GPUs' hour (of the cluster; of max(quota, allocation) for a queue).
  int64_t lost_gpu_seconds_per_hour = 0;
};

// kCorral's use of run-time predictions from its owners' history (runtime_estimate.h,
// run_time_quantiles.h): how a job's predicted remaining time orders it and spares its runs.
struct PredictionConfig {
  // kCorral: inside a LAS level (and priority, queue), order by predicted remaining run time,
  // shortest first: predicted_ms - done while done < predicted_ms, else done (a job that
  // outlived its prediction is guessed to run as long again), where done is the attained
  // GPU-ms per GPU; 0 (first) without a prediction, so that without predictions the order is
  // plain LAS. And spare a LAS victim predicted to end before the job that would displace it
  // (see preemption.cc, LasVictim): displacing it would lose its work and free its GPUs no
  // sooner. A level holds jobs of very different lengths; the history of ended jobs
  // (RuntimeEstimator) tells them apart where attained service cannot.
  bool on = true;
  // kCorral, use_predictions, for jobs with a run-time distribution (PendingJob::
  // run_quantiles): the remaining time they are ordered by and spared with, from the run
  // times of the owner's jobs that outlived what the job has run (run_time_quantiles.h).
  // Gittins and the median measured on the philly-users trace (docs/simulation.md,
  // "Predictions from users' history").
  PredictionRule rule = PredictionRule::kQuantile;
  double quantile = 0.5;  // kQuantile's
  // For a job that has run `done` ms: the remaining time is done^w x rule's^(1 - w) (a
  // weighted geometric mean); 0: the rule's alone.
  double done_weight = 0;
  // A job that has not run yet is predicted by predicted_ms (the running mean of its owner's
  // log run times: the best guess of a next job, recent jobs weighing most); the distribution
  // answers once it has run (what is left of a job that outlived some of them).
  bool fresh_by_mean = false;
  // A job with a distribution is ordered by its predicted remaining time in its LAS level's
  // place (what it may preempt is still decided by its level).
  bool for_level = false;
  // kCorral with use_predictions: further level boundaries, ascending and above the last of
  // las_thresholds_gpu_ms, for a job predicted from its owner's history (one with a run-time
  // distribution, PendingJob::run_quantiles). The top level otherwise holds a 10 GPU-hour job
  // with a 1,000 GPU-hour one, and the predicted remaining time orders them but cannot
  // preempt: a level boundary lets the first displace the second's run. Only for those jobs:
  // on Philly, whose jobs have only their queue's history, the same boundary lengthens the
  // average JCT (docs/simulation.md, "Predictions from users' history"). A job with the
  // boundary and a run without it compare levels as each counts them.
  std::vector<DurationMs> history_las_thresholds_gpu_ms = {100 * kHour};
};

// kCorral's own settings: LAS inside and across queues, the age bound, the hysteresis and
// budgets of its preemption, and its predictions. The other policies have none of their own.
struct CorralConfig {
  // kCorral: inside a queue, order by LAS level (attained GPU-ms against
  // las_thresholds_gpu_ms) before user fair share and submit time, and let a blocked job
  // preempt a preemptible run of the same queue and priority in a strictly higher level
  // (after min_runtime_before_preempt_ms; victims losing the least work, gangs whole).
  // Durations are not known, so the service a job has attained stands in for what is left
  // (Tiresias): without it a queue's short jobs wait behind its long ones, FIFO.
  // Non-preemptible runs are never victims, so without preemptible jobs a queue stays FIFO
  // apart from requeued jobs, which wait behind jobs of lower levels. REQUIRES of the driver:
  // re-add a requeued job with its attained_ms (else it returns at level 0 and it and the
  // job that displaced it may take turns every level's worth of service).
  bool las_within_queue = true;
  // kCorral, with las_within_queue: a blocked job may also displace a preemptible run of
  // another queue that is over its quota, of the same priority, in a strictly higher LAS
  // level, under the same hysteresis, sparing rule and budgets as inside a queue, and only
  // while that queue stays over its quota. A queue's quota stays its guarantee (runs within it
  // are displaced only by priority or, across queues, never); what it borrows beyond goes to
  // the jobs that have attained least, whichever queue they are of, as las would give it.
  // Without it a queue whose burst is over its quota has its short jobs wait behind other
  // queues' long runs on borrowed GPUs, which only quota reclaim could take. Off: LAS never
  // crosses queues (only quota reclaim does).
  bool las_across_queues = true;
  // kCorral, with las_within_queue: queues under their quota still come first, by fair share;
  // queues over it (borrowing) come after them in the order of their best pending job's LAS
  // level, then (use_predictions) of a power-of-two bucket of its predicted remaining run
  // time (whole minutes: 0, 1, 2-3, 4-7, ...), and only then by fair share. What a queue
  // borrows goes first to the job that has attained least, whichever queue it is of: the
  // order agrees with las_across_queues' preemption, so a job that could displace another
  // queue's borrowed run is not left behind it in the order. Off: queues over quota by fair
  // share alone.
  bool borrowing_queues_by_level = true;
  // kCorral: the age bound of queues that set none (QueueConfig::max_wait_ms). A pending job
  // that has waited this long in all (now - submitted_at - attained_ms / its GPUs: time since
  // submit not spent running) is aged: it goes ahead of every job of its priority that is not,
  // whatever their queues' shares, levels and predictions, aged jobs oldest submit first. The
  // first one that cannot start gets the pass's reservation (reservation_depth), which
  // backfill does not delay; it may preempt only what it could before. Once it runs, the run
  // is not a victim of LAS preemption (inside or across queues; quota reclaim and priority
  // still apply), so it is not sent back to the end of the line by the short jobs it waited
  // behind. It bounds the tail of waits that LAS and fair share otherwise leave unbounded: a
  // long job of a borrowing queue behind a steady stream of short ones.
  // <= 0: no bound (queues may still set one).
  DurationMs max_wait_ms = 0;
  // With an age bound: an aged job may also displace a preemptible run that is not aged, of
  // its own queue or of a queue over its quota, of its priority, whatever their LAS levels
  // (as LAS would a higher level; the minimum runtime and the budgets hold). Without it an
  // aged job that cannot start holds its reservation until runs end, and on a cluster of
  // runs without time limits the GPUs it holds idle meanwhile.
  bool aged_may_displace = true;
  // kCorral, LAS preemption inside a queue: a run in a higher level is displaced only if it has
  // attained at least this factor times the threshold between the two levels, and the job
  // less than that threshold divided by it (see preemption.cc, "Hysteresis").
  double las_preempt_hysteresis = 2.0;
  // kCorral: budgets of priority and LAS preemption, cluster-wide and per victim queue. Quota
  // reclaim is not limited (it converges: it takes only what a queue holds over its quota and
  // gives only up to the other's quota) but counts against them.
  PreemptionBudget cluster_budget;
  PreemptionBudget queue_budget;
  PredictionConfig predict;
};

// What every policy shares (the order and victims, backfill, a pass's bounds), and each
// policy's own settings beside it.
struct SchedulerConfig {
  OrderPolicy policy = OrderPolicy::kCorral;
  DurationMs fair_share_half_life_ms = 7 * 24 * kHour;  // <= 0: only current allocation
  DurationMs min_runtime_before_preempt_ms = 5 * kMinute;
  bool backfill = true;
  bool preemption = true;
  int32_t max_placements_per_pass = 1 << 30;
  // How many blocked jobs (in order) get a reservation that lower jobs must not delay, so that
  // a wide job is not overtaken forever by the narrow ones behind it.
  // 0: none (work-conserving greedy skipping; large jobs may starve).
  int32_t reservation_depth = 1;
  // The budget of one pass, in work units (one unit: one node examined by placement, one
  // pending job visited, one running job considered as a victim or released in a
  // reservation scan). When spent, the pass stops; the rest waits for the next pass.
  int64_t max_work_per_pass = 20'000'000;
  // kLas level boundaries, in attained GPU-ms, ascending (also kCorral's with
  // las_within_queue).
  std::vector<DurationMs> las_thresholds_gpu_ms = {1 * kHour, 10 * kHour};
  CorralConfig corral;  // kCorral only
};

// One run's allocation over a period, for AddPastUsage.
struct PastUsage {
  std::string queue = "default";
  std::string user;
  int64_t gpu_milli = 0;  // milli-GPUs, all replicas (a share counts its fraction)
  int64_t cpu_milli = 0;  // all replicas
  int64_t memory_mb = 0;  // all replicas
  TimeMs from = 0;
  TimeMs to = 0;
};

struct PlaceDecision {
  JobId job = 0;
  std::vector<ReplicaPlacement> placement;  // one per replica
};

// An elastic run's new size (docs/elastic.md). Grow: `added` are bound at once, like a Place.
// Shrink: `removed` leave (the checkpoint signal and grace go to them alone) and stay bound
// until the driver says the run holds what is left (ResizeRunning); `for_job` then starts.
struct ResizeDecision {
  JobId job = 0;
  std::vector<ReplicaPlacement> added;
  std::vector<ReplicaPlacement> removed;
  JobId for_job = 0;   // shrink: the job it makes room for
  std::string reason;  // shown in the job's events
};

struct PreemptDecision {
  JobId job = 0;       // victim
  JobId for_job = 0;   // the job it makes room for
  std::string reason;  // shown by `corral show`
  // The rule that allowed it.
  PreemptKind kind = PreemptKind::kPolicy;
};

// Why a pending job did not start in this pass.
struct WaitReason {
  JobId job = 0;
  PendingCode code = PendingCode::kNone;
  std::string reason;
};

// An advance reservation or maintenance window, set by an admin (Scheduler::SetReservation).
struct NodeReservation {
  std::string name;
  std::vector<std::string> nodes;
  TimeMs start = 0;
  TimeMs end = 0;            // > start
  bool maintenance = false;  // no job at all, its own neither
  // Who may run in it (PendingJob::reservation): empty lists allow any user or queue.
  std::vector<std::string> users;
  std::vector<std::string> queues;
};

// Where and when a blocked job is expected to start; lower jobs do not delay it.
struct Reservation {
  JobId job = 0;
  TimeMs start = kUnknownTime;     // kUnknownTime: behind runs without a time limit
  std::vector<std::string> nodes;  // sorted
  // How many of this pass's Place decisions were made before it: those runs were counted as
  // ending by their expected end like any other; later ones do not delay it.
  int32_t after_place = 0;
};

// When and where a pending job is expected to start (Scheduler::EstimateStarts).
// How far a start-time estimate may be trusted (EstimateConfidence, core/job.h), from what the
// time it names rests on: the end of a run or of a job estimated ahead of it (its time limit:
// kHigh; a prediction: kMedium or kLow by the ended jobs behind it), and what placed that one.
// Ended jobs of an owner behind a prediction to call it more than a guess: what the run-time
// estimator needs for a distribution of the owner's (EstimatorConfig::min_jobs' default).
inline constexpr int32_t kConfidentPredictionJobs = 4;
inline EstimateConfidence Weakest(EstimateConfidence a, EstimateConfidence b) {
  return a > b ? a : b;
}

struct StartEstimate {
  JobId job = 0;
  TimeMs start = kUnknownTime;     // kUnknownTime: no estimate
  std::vector<std::string> nodes;  // sorted, distinct; empty without an estimate
  EstimateConfidence confidence = EstimateConfidence::kHigh;
};

// How start-time estimates are made (start_estimate.h).
enum class EstimateMethod {
  // The scheduler's own pass run forward on a copy of its state (ForwardStarts).
  kForward,
  // One forward sweep of the pending jobs in the pass order (SweepStarts).
  kSweep,
};

// ForwardStarts' default bound on the work of its passes (EstimateOptions::max_work): the
// scheduler's unit, max_work_per_pass (a node examined, a pending job visited, a run considered
// as a victim). Passes after ends visit few jobs and nodes, so it seldom binds before
// max_passes (on Philly at 512 GPUs it cut a few of 4,113 estimates short); it caps a pass that
// walks a huge queue.
inline constexpr int64_t kForwardMaxWork = 1'000'000;

struct EstimateOptions {
  // Runs and pending jobs last their predicted remaining time where it is known and shorter
  // than their time limit; off: time limits only (unknown without one).
  bool use_predictions = true;
  // Only the first max_jobs pending jobs (in order) are estimated; the rest get none (kSweep;
  // kForward estimates every pending job it sees start, and gives the rest the sweep's
  // estimate, which honours it).
  int64_t max_jobs = INT64_MAX;
  EstimateMethod method = EstimateMethod::kForward;
  // kForward: the most passes it runs. Past them the jobs not yet started get the sweep's
  // estimate, no earlier than the instant the forward run reached, at low confidence.
  int64_t max_passes = 256;
  // kForward: the most work its passes do in all (kForwardMaxWork), a bound on its CPU that
  // holds whatever the passes find to do; past it as past max_passes.
  int64_t max_work = kForwardMaxWork;
  // kForward: the most passes at one instant (a pass places, a victim ends, the next places
  // the job it made room for, ...).
  int32_t max_passes_per_instant = 4;
  // kForward: with nothing ending sooner, a pass this long after the last one (a run may have
  // become preemptible or crossed a LAS level meanwhile). <= 0: only at ends.
  DurationMs idle_step_ms = 30 * kMinute;
  // kForward: how long a victim runs after it is told to stop (its grace) before its GPUs
  // are free; the job it makes room for starts at the earliest then.
  DurationMs victim_grace_ms = 0;
  // kForward: the jobs expected to arrive meanwhile (arrival_history.h): the arrivals of this
  // long before now arrive again, evenly spaced, in every window after it. 0: none arrive.
  // At most kArrivalKeepMs.
  DurationMs arrival_window_ms = 2 * kHour;
  // kForward: expected arrivals are rounded up to a multiple of this after now (those in one
  // step share a pass).
  DurationMs arrival_step_ms = kMinute;
  // kForward: stop as soon as all these pending jobs have started in the forward run (their
  // estimates are then what a longer run would give). Empty: every pending job.
  std::vector<JobId> stop_when_started;
};

struct Decisions {
  std::vector<PlaceDecision> place;
  std::vector<PreemptDecision> preempt;
  std::vector<ResizeDecision> resize;     // elastic runs grown or shrunk
  std::vector<WaitReason> waiting;        // only for jobs whose reason changed since the last pass
  std::vector<Reservation> reservations;  // this pass's reservations, in order
};

enum class Fit { kPlaced, kWait, kInfeasible };

class Scheduler {
 public:
  explicit Scheduler(SchedulerConfig config = {});
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  void UpsertNode(const NodeInfo& node);
  // A dataset source's measured stage-in rate (bytes per second; 0: not measured): placement
  // weighs a node lacking a job's data by the time its fetch would take at this rate.
  void SetSourceRate(const std::string& source, int64_t bytes_per_s);
  void RemoveNode(const std::string& name);
  void SetQueue(const QueueConfig& queue);
  // Adds or replaces an admin reservation (by name), or removes one.
  void SetReservation(const NodeReservation& reservation);
  void RemoveReservation(const std::string& name);

  void AddPending(const PendingJob& job);  // replaces a pending job with the same id
  void RemovePending(JobId id);
  void AddRunning(const RunningJob& run);  // binds resources (recovery, or the simulator)
  void RemoveRunning(JobId id);            // frees them
  // An elastic run now holds exactly `placement` (its replicas that have not left): after the
  // replicas a shrink removed have exited (their resources are freed then), or a lost node's.
  // Keeps the run's start and attained service.
  void ResizeRunning(JobId id, std::vector<ReplicaPlacement> placement, int32_t leaving = 0);

  // Sets the GPU-ms a job attained before its current run (SRTF, LAS). Pending or running.
  void UpdateAttained(JobId id, DurationMs attained_gpu_ms);
  // A running job reported a checkpoint at `at` (`corral checkpoint-done`): a preemption now
  // loses only the work since then.
  void ReportCheckpoint(JobId id, TimeMs at);

  // Counts runs this scheduler never saw into their queues' and users' fair-share usage,
  // decayed to `now` as if it had integrated them: a recovering head passes every run of its
  // jobs (`to` = now for one still going), so fair share survives a restart or a failover.
  // Call once, before the first Schedule; later passes decay from `now`.
  void AddPastUsage(const std::vector<PastUsage>& usages, TimeMs now);

  // Could this request ever fit, on an empty cluster of the current nodes, within its queue's
  // limit? If not, says why (admission, DESIGN §6.1).
  Fit Admit(const PendingJob& job, std::string* why) const;

  [[nodiscard]] Decisions Schedule(TimeMs now);

  // Start-time estimates for every pending job, in the order of a pass (start_estimate.h):
  // a forward sweep of the current state; changes nothing the next pass sees.
  std::vector<StartEstimate> EstimateStarts(TimeMs now, const EstimateOptions& options = {});

  // A scheduler with this one's whole state (nodes, queues and their fair-share usage, runs,
  // pending jobs, victims in flight, budgets): what it decides from here is what this one
  // would, given the same calls. For running the pass forward without touching this one.
  std::unique_ptr<Scheduler> Fork() const;

  struct Stats {
    int64_t pending = 0;
    int64_t running = 0;
    int64_t free_gpus = 0;
    int64_t total_gpus = 0;
    // Of the last pass.
    int64_t last_pass_work = 0;
    int64_t last_pass_attempts = 0;       // placement attempts
    int64_t last_pass_skipped = 0;        // jobs skipped by equivalence class
    int64_t last_pass_budget_denied = 0;  // preemptions the budgets held back (blocked jobs)
    bool last_pass_budget_exhausted = false;
  };
  Stats GetStats() const;

  // The hot spares held for a run now (PendingJob::hot_spares), one per node; empty if none.
  std::vector<ReplicaPlacement> HotSpares(JobId id) const;

  // Allocated GPUs of a queue (its own runs, and its sub-queues' runs), for tests and metrics.
  int64_t QueueAllocatedGpus(const std::string& queue) const;
  // True while a Preempt decision for this running job has not been followed by RemoveRunning.
  bool IsBeingPreempted(JobId id) const;
  // What the scheduler's model holds, as text that two schedulers given the same jobs and
  // nodes print alike: its pending jobs, its running jobs with their placements, and each
  // node's schedulability and free GPUs, CPU and memory. For tests that compare a live
  // scheduler with one rebuilt from the same state.
  std::string ModelSummary() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace corral::sched
