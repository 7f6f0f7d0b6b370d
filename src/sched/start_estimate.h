// Start-time estimates for pending jobs: one forward sweep of the pending jobs, in the
// scheduler's order, over a timeline of free GPUs per node.
//
// The sweep keeps a cursor (the time it has reached) and the free GPUs of every node at that
// time. A job starts at the cursor if enough nodes have room for its replicas; otherwise the
// cursor moves to the next release (a running or estimated job's end) until it fits. Starts
// are therefore in the scheduler's order (FIFO along that order): the estimate of a job that
// the scheduler would backfill is an upper bound. A job whose duration is unknown holds its
// GPUs forever; a job that cannot fit even once every known end has passed gets no estimate
// and does not move the cursor, so the jobs behind it are still estimated.
//
// Preemption (policies that preempt): a job that does not fit at the cursor may take the GPUs
// of runs it outranks (EstimateRun: of its rank class, with a greater rank) that are
// preemptible by then and have not ended or been taken; if they make it fit, it starts at the
// cursor on them. The cursor also stops where a run becomes preemptible. The victim's requeue
// is ignored (its remaining work is not estimated again), so the estimates behind such a start
// lean early. A run ranks higher as its service grows (EstimateRun::later_ranks); the jobs the
// sweep starts are not victims of the jobs behind them, which leans late.
//
// Cost: O((jobs + releases) x (max GPUs per node + log releases)) for jobs without a GPU
// model; a job that asks for a model scans the nodes. Pure: no clock, no I/O.
#pragma once

#include <utility>

#include <cstdint>
#include <string>
#include <vector>

#include "core/job.h"
#include "core/time.h"
#include "sched/scheduler.h"

namespace corral::sched {

struct EstimateNode {
  std::string name;
  std::string gpu_model;  // of all its GPUs; empty: mixed or none
  int32_t free_gpus = 0;  // free now (healthy, not held)
};

// GPUs a running job gives back on a node at `at` (kUnknownTime: never).
struct EstimateRelease {
  TimeMs at = kUnknownTime;
  int32_t node = 0;  // index in the node list
  int32_t gpus = 0;
  int32_t run = -1;  // index in the runs given to SweepStarts; -1: not a run's (never a victim)
  EstimateConfidence confidence = EstimateConfidence::kHigh;  // what `at` rests on
};

// How a running job ranks against the pending jobs that may preempt it.
struct EstimateRun {
  int32_t rank_class = -1;    // only jobs of this class may take it; -1: none
  int64_t rank = 0;           // a job of its class with a smaller rank outranks it
  TimeMs preemptible_at = 0;  // from then on (started + the minimum run time before preemption)
  // > 0: spared by a job predicted to run at least this long (it would free its GPUs sooner by
  // ending than by being displaced); needs the job's prediction too.
  DurationMs predicted_left_ms = 0;
  // (from, rank): it ranks `rank` (greater) from then on, its service having grown.
  std::vector<std::pair<TimeMs, int64_t>> later_ranks;
};

struct EstimateJob {
  JobId id = 0;
  int32_t replicas = 1;
  int32_t gpus_per_replica = 0;       // whole GPUs; 0: no GPU (starts at the cursor)
  int32_t max_replicas_per_node = 0;  // 0: no limit
  std::string gpu_model;              // empty: any
  DurationMs duration_ms = 0;         // 0: unknown (holds its GPUs forever)
  int32_t rank_class = -1;            // the runs it may preempt (EstimateRun); -1: none
  int64_t rank = 0;
  DurationMs predicted_left_ms = 0;                                    // 0: no prediction
  EstimateConfidence duration_confidence = EstimateConfidence::kHigh;  // what duration_ms rests on
};

// Estimates for `jobs`, given in scheduler order, from `now`. One result per job, same order.
// Each start's confidence is that of the instant it starts at: now and a run becoming
// preemptible are known (kHigh); a release is as sure as what its time rests on, and the end
// of a job the sweep started as the weaker of its start's and its duration's. A start that
// takes victims is kMedium at best: the preemption is the sweep's model of the policy's.
// `runs`: the running jobs that releases name (EstimateRelease::run), for preemption.
// `not_now`: the jobs are those a pass left waiting at `now` (nothing changed since it): none
// starts at `now`, whatever the sweep finds free then, since what kept it waiting is something
// the sweep does not model (CPUs, memory, labels, a victim in its grace, a preemption budget):
// at the earliest at the next change the sweep knows of (a run's end, a run becoming
// preemptible); with none to come, no estimate.
std::vector<StartEstimate> SweepStarts(const std::vector<EstimateNode>& nodes,
                                       const std::vector<EstimateRelease>& releases,
                                       const std::vector<EstimateJob>& jobs, TimeMs now,
                                       const std::vector<EstimateRun>& runs = {},
                                       bool not_now = false);

struct SchedState;
// The scheduler's live state as a sweep: its schedulable nodes' free GPUs, its runs ending at
// their expected ends (with options.use_predictions, at their predicted ends where earlier:
// the scheduler's own predicted remaining time, PredictedRemainingMs), its pending jobs in the
// order of a pass (PassOrder), each lasting its predicted remaining time or its time limit.
// A run that has outlived its prediction ends at its time limit where it has one. Node labels
// and CPU/memory are not modelled; a GPU share counts as one GPU. Where nothing changed since
// the last whole pass, no pending job starts at `now` (SweepStarts' not_now). Preemption as
// the policy does it where it preempts: kSrtf and kLas by key; kCorral by LAS level inside a
// queue and priority (las_within_queue, with the hysteresis and the predictions' sparing rule),
// not by priority, quota reclaim or across queues, and without the preemption budgets.
std::vector<StartEstimate> EstimateFromState(SchedState& st, TimeMs now,
                                             const EstimateOptions& options);

// How long a job still runs, and what that rests on: its predicted remaining time where known
// and shorter than what its time limit leaves, that limit once it has outlived its prediction.
struct EstimatedLeft {
  DurationMs ms = kUnknownTime;  // kUnknownTime: no limit, no prediction (never ends)
  EstimateConfidence confidence = EstimateConfidence::kHigh;
};
struct RunEntry;
// Of a run at `now`, and of a pending job once it starts (at least 1 ms).
EstimatedLeft RunLeft(const SchedState& st, const RunEntry& r, TimeMs now, bool use_predictions);
EstimatedLeft PendingLeft(const SchedState& st, const PendingJob& j, bool use_predictions);

// Start-time estimates from the production pass run forward (EstimateMethod::kForward).
//
// `fork` is a Scheduler::Fork of the one whose state is `st`. From `now` it is driven as its
// driver would drive it, with the arrivals expected from the recent ones (arrival_history.h:
// those of options.arrival_window_ms before now again, evenly spaced; none with 0), each a
// new job the pass ranks and places as any: passes at an instant until one decides nothing
// (at most options.max_passes_per_instant); a placed job runs for its PendingLeft and a run
// for its RunLeft, then ends (RemoveRunning); a victim ends options.victim_grace_ms after its
// Preempt decision and is requeued with the service it attained and the rest of its run still
// to do; between ends, a pass where a run becomes preemptible, an admin reservation starts or
// ends, an expected job arrives, or options.idle_step_ms has passed (arrivals alone do not
// keep the run going once nothing is left to end). A pending job's estimate is its first start in
// the fork, on the nodes it was placed on. So placement, the order, backfill and its
// reservations, preemption with its hysteresis, sparing rule and budgets, quotas, CPUs, memory
// and labels are the pass's own; what is modelled is only when runs end.
//
// Confidence of a start: that of its instant (now, a run becoming preemptible, a reservation
// boundary: kHigh; an end: what the ended runs' times rest on, a job started in the fork
// ending no surer than its start; an idle step or an expected arrival: kMedium), kMedium at
// best once an expected arrival has started in the fork, and kMedium at best where a victim
// ended at the instant (the grace and the requeue are modelled).
//
// Bound: options.max_passes passes in all, and options.max_work (kForwardMaxWork, scheduler.h)
// work units of those passes. Jobs not started by then get the sweep's estimate
// (EstimateFromState), no earlier than the instant reached (that instant's lead from now doubled
// where the sweep's start was before it: forward_estimate.cc), at kLow; jobs that cannot start once
// nothing is left to end get none. Stops early once options.stop_when_started (or every pending
// job) has started. Cost: a copy of the state plus up to max_passes passes.
// Above this many pending jobs the head estimates by the sweep alone (HeadCore::EstimateStarts):
// the fork and its passes cost seconds of CPU at 100,000 (docs/benchmarks.md), too much for a
// refresh every few seconds on the core's one thread.
inline constexpr int64_t kForwardMaxPending = 10'000;
std::vector<StartEstimate> ForwardStarts(SchedState& st, Scheduler& fork, TimeMs now,
                                         const EstimateOptions& options);

}  // namespace corral::sched
