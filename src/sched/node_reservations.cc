// Admin reservations in a pass (node_reservations.h).
#include "sched/node_reservations.h"

#include <algorithm>

#include "sched/state.h"

namespace corral::sched {

std::string ReservationLabel(const std::string& reservation) {
  return "corral.reservation/" + reservation;
}

void HoldReservedNodes(SchedState& st) {
  for (const auto& [name, r] : st.node_reservations) {
    if (r.end <= st.now) continue;
    TimeMs from = std::max(st.now, r.start);
    for (const std::string& node : r.nodes) {
      int32_t slot = st.model.Find(node);
      if (slot < 0) continue;
      const NodeSlot& n = st.model.slot(slot);
      if (!n.live || !n.info.schedulable) continue;
      // What an earlier reservation of this pass holds here stays held (AddHold adds).
      int32_t g = std::max(0, n.free_gpus - n.hold_gpus);
      int32_t c = std::max(0, n.free_cpu - n.hold_cpu);
      int64_t m = std::max<int64_t>(0, n.free_mem - n.hold_mem);
      st.model.AddHold(slot, g, c, m, from);
      st.model.MarkReserved(slot, from);
    }
  }
}

namespace {
bool Allows(const std::vector<std::string>& list, const std::string& who) {
  return list.empty() || std::find(list.begin(), list.end(), who) != list.end();
}
}  // namespace

std::string ReservationGate(const SchedState& st, const PendingJob& j, TimeMs end) {
  auto it = st.node_reservations.find(j.reservation);
  if (it == st.node_reservations.end()) {
    return "waiting for reservation " + j.reservation + ", which does not exist";
  }
  const NodeReservation& r = it->second;
  if (r.maintenance) return "reservation " + r.name + " is a maintenance window: it runs no job";
  if (!Allows(r.users, j.user) || !Allows(r.queues, j.queue)) {
    return "user " + j.user + " in queue " + j.queue + " is not allowed in reservation " + r.name;
  }
  if (st.now < r.start) {
    return "waiting for reservation " + r.name + ", which starts at " + FormatUtc(r.start);
  }
  if (st.now >= r.end) {
    return "reservation " + r.name + " ended at " + FormatUtc(r.end);
  }
  if (end != kUnknownTime && end > r.end) {
    return "its time limit runs past the end of reservation " + r.name + " at " + FormatUtc(r.end);
  }
  return "";
}

const NodeReservation* BlockingReservation(const SchedState& st, const PendingJob& j, TimeMs end) {
  if (st.node_reservations.empty() || TotalGpus(j) > st.model.free_gpus()) return nullptr;
  const NodeReservation* best = nullptr;
  for (const auto& [name, r] : st.node_reservations) {
    if (r.end <= st.now) continue;
    if (end != kUnknownTime && end <= std::max(st.now, r.start)) continue;  // ends before it
    bool holds = false;
    for (const std::string& node : r.nodes) {
      int32_t slot = st.model.Find(node);
      holds = holds || (slot >= 0 && st.model.slot(slot).free_gpus > 0);
    }
    if (holds && (!best || r.start < best->start)) best = &r;
  }
  return best;
}

std::string DescribeReservation(const NodeReservation& r) {
  std::string nodes;
  for (size_t i = 0; i < r.nodes.size() && i < 4; ++i) nodes += (i ? "," : "") + r.nodes[i];
  if (r.nodes.size() > 4) nodes += ",... (" + std::to_string(r.nodes.size()) + " nodes)";
  return "reservation " + r.name + (r.maintenance ? " (maintenance)" : "") + " of " + nodes +
         " from " + FormatUtc(r.start) + " to " + FormatUtc(r.end);
}

}  // namespace corral::sched
