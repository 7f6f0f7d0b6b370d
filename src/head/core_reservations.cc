// Admin reservations and maintenance windows (core/node_reservation.h): admins create and
// delete them, each a typed change; submissions into one are checked against it. The
// scheduler keeps other jobs off its nodes (sched/node_reservations.h).
#include <algorithm>

#include "head/head_core.h"

namespace corral::head {
namespace {

bool Admits(const std::vector<std::string>& list, const std::string& who) {
  return list.empty() || std::find(list.begin(), list.end(), who) != list.end();
}

std::string Interval(const NodeReservationSpec& r) {
  return "[" + std::to_string(r.start_ms) + ", " + std::to_string(r.end_ms) + ") ms";
}

}  // namespace

std::vector<NodeReservationSpec> HeadCore::ListReservations() const {
  std::vector<NodeReservationSpec> out;
  for (const auto& [name, r] : state_.reservations) out.push_back(r);
  return out;
}

Result<NodeReservationSpec> HeadCore::CreateReservation(const Caller& by, NodeReservationSpec r,
                                                        TimeMs now) {
  if (!by.IsAdmin()) return PermissionDenied("creating a reservation needs an admin");
  if (state_.reservations.count(r.name)) {
    return Status{ErrorCode::kAlreadyExists,
                  "field 'name': reservation '" + r.name + "' exists (delete it first)"};
  }
  if (r.end_ms <= now) {
    return InvalidArgument("field 'end_ms': got " + std::to_string(r.end_ms) +
                           ", which is past (now is " + std::to_string(now) + ")");
  }
  for (const std::string& node : r.nodes) {
    if (!state_.nodes.count(node)) {
      return InvalidArgument("field 'nodes': no node '" + node + "' in the cluster");
    }
  }
  for (const auto& [name, other] : state_.reservations) {
    if (other.end_ms <= r.start_ms || r.end_ms <= other.start_ms) continue;
    for (const std::string& node : r.nodes) {
      if (std::binary_search(other.nodes.begin(), other.nodes.end(), node)) {
        return FailedPrecondition("field 'nodes': node '" + node + "' is in reservation '" + name +
                                  "' " + Interval(other) + ", which overlaps " + Interval(r));
      }
    }
  }
  Emit(by, now, ReservationSet{r});
  return r;
}

Result<NodeReservationSpec> HeadCore::DeleteReservation(const Caller& by, const std::string& name,
                                                        TimeMs now) {
  if (!by.IsAdmin()) return PermissionDenied("deleting a reservation needs an admin");
  auto it = state_.reservations.find(name);
  if (it == state_.reservations.end()) return NotFound("no reservation '" + name + "'");
  NodeReservationSpec gone = it->second;
  Emit(by, now, ReservationDeleted{name});
  return gone;
}

Status HeadCore::CheckReservation(const JobSpec& spec, const std::string& owner, TimeMs now) const {
  if (spec.reservation.empty()) return Status::Ok();
  auto it = state_.reservations.find(spec.reservation);
  if (it == state_.reservations.end()) {
    return InvalidArgument("field 'reservation': no reservation '" + spec.reservation + "'");
  }
  const NodeReservationSpec& r = it->second;
  if (r.maintenance) {
    return InvalidArgument("field 'reservation': '" + r.name +
                           "' is a maintenance window, which runs no jobs");
  }
  if (r.end_ms <= now) {
    return InvalidArgument("field 'reservation': '" + r.name + "' ended at " +
                           std::to_string(r.end_ms) + " ms");
  }
  if (!Admits(r.users, owner) || !Admits(r.queues, spec.queue)) {
    return PermissionDenied("field 'reservation': user '" + owner + "' in queue '" + spec.queue +
                            "' is not allowed in reservation '" + r.name + "'");
  }
  return Status::Ok();
}

}  // namespace corral::head
