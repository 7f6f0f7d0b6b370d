// Elastic runs in a pass (docs/elastic.md): how many replicas an elastic job starts with, which
// replicas above their minimum a blocked job takes back, and growth into idle GPUs. Called by
// RunPass (pass.cc); pure like the rest of the scheduler.
//
// Rules:
//  - Start: an elastic job whose whole size does not fit starts with the most replicas
//    between its minimum and its maximum that fit now (and that its queue's limit allows).
//  - Grow: when a pass leaves no job waiting for GPUs, resizable elastic runs below their
//    maximum get free GPUs one replica at a time, bound at once, each to the run that comes
//    first now: the highest priority, then (kCorral) a replica within its queue's quota before
//    one within an ancestor's and both before one borrowed beyond every quota level, then the
//    queue of the lowest fair share (which rises with each replica), then the oldest run. A
//    job that spreads (max_replicas_per_node) grows onto nodes where it has room under its
//    limit. What a run borrows beyond its queue's quota is taken back first (Shrink).
//  - Shrink: a blocked job takes replicas above their minimum of elastic runs, the lowest
//    priority first, then the newest run, its last replicas first, before any whole run is
//    preempted: only the replicas that leave get the checkpoint signal and grace, and the run
//    keeps going. A job that may preempt takes them from runs whose priority is not above
//    its own (as a replica above the minimum is preemptible capacity); besides, under
//    kCorral, a job whose queue reclaims its quota (it stays within it, as a quota reclaim
//    does) takes what another queue's run borrows beyond that queue's quota (its quota level,
//    QueueBook::QuotaMeet), whatever the priorities and without the right to preempt. No
//    replica below the minimum is ever taken this way; below it the run is preempted whole,
//    as a rigid gang.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sched/placement.h"
#include "sched/state.h"

namespace corral::sched {

// The largest start of elastic job e below its maximum (REQUIRES: the maximum did not fit):
// binds it and returns true, or returns false with nothing bound.
bool PlaceElasticStart(SchedState& st, Placer& placer, const PendingEntry& e, TimeMs end,
                       std::vector<ReplicaPlacement>* out);

// Replicas one elastic run gives up: positions in its placement, highest first.
struct ShrinkCut {
  JobId run = 0;
  std::vector<int32_t> positions;
};

// Which replicas above their minimum e may take so that it fits now; false: none suffice.
bool FindShrink(SchedState& st, const PendingEntry& e, TimeMs end, std::vector<ShrinkCut>* out);

// Records the cuts: resize decisions for the runs, and e waits for the leaving replicas as it
// waits for victims (SchedState::victims_of).
void ApplyShrink(SchedState& st, const PendingEntry& e, const std::vector<ShrinkCut>& cuts,
                 Decisions* d);

// Grows elastic runs into free GPUs (call only when no job waits for GPUs).
void GrowElastic(SchedState& st, Decisions* d);

// Hot spares (PendingJob::hot_spares): replica-sized slots held for a run at its maximum on
// nodes without its replicas, one per node, while no job waits for GPUs.
//  - At a pass's start, before anything else: a run below its maximum (it lost a replica with
//    its node) takes its spares on usable nodes as replicas, a grow decision like any other;
//    then every spare left is given up, so that a job of the pass order takes a spare before
//    it shrinks or preempts anything: spares never cost another job a start.
//  - After growth (only when no job waits): runs at their maximum hold spares again, one at a
//    time in the growth order, within their queue's limit.
// Spares count against the queue's quota and fair share while held (the GPUs are held for
// it), never in a run's placement, so GPU time counts only replicas.
void ReplaceFromHotSpares(SchedState& st, Decisions* d);
void RefillHotSpares(SchedState& st);
// Gives up a run's spares (a run removed).
void ReleaseHotSpares(SchedState& st, RunEntry& r);
// Drops the spares on a node leaving the model, whose slot no longer holds them.
void DropHotSparesOn(SchedState& st, const std::string& node);

}  // namespace corral::sched
