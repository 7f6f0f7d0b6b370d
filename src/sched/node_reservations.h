// Admin reservations and maintenance windows in a pass (scheduler.h, NodeReservation): the
// holds that keep other jobs off reserved nodes, and the gates of a reservation's own jobs.
#pragma once

#include <string>

#include "core/time.h"
#include "sched/scheduler.h"

namespace corral::sched {

struct SchedState;

// The node label that keeps a reservation's jobs on its nodes (set on the scheduler's own copy
// of each reserved node, and added to each of its jobs' node_labels).
std::string ReservationLabel(const std::string& reservation);

// Holds what is free on each node of each reservation not over by st.now, from its start (now
// if it has begun): only jobs whose time limit ends by then may use it. Marks the nodes
// reserved from then (NodeSlot::reserved_from), so that what victims or ending runs free
// there is not counted either (preemption.cc, reservation.cc).
void HoldReservedNodes(SchedState& st);

// Why job `j` (of a reservation) may not try its reservation's nodes now, ending at `end`
// (kUnknownTime: no limit); "" when it may.
std::string ReservationGate(const SchedState& st, const PendingJob& j, TimeMs end);

// The reservation that keeps a blocked job ending at `end` off free room it could otherwise
// use, or null: the first (by start) that holds free GPUs and that its run would overlap.
const NodeReservation* BlockingReservation(const SchedState& st, const PendingJob& j, TimeMs end);

// "reservation maint1 (maintenance) of node-a,node-b from 2026-11-28T18:00:00Z to
// 2026-11-28T20:00:00Z".
std::string DescribeReservation(const NodeReservation& r);

}  // namespace corral::sched
