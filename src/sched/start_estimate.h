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

}  // namespace corral::sched
