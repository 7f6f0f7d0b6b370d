// QoS classes (core/qos.h): admins define them; every submission's priority is checked
// against the class of its owner and queue, and the class's preemption right goes into the
// job's scheduler input.
#include "head/head_core.h"
#include "head/queue_admin.h"

namespace corral::head {
namespace {}  // namespace

std::vector<QosClass> HeadCore::ListQos() const {
  std::vector<QosClass> out;
  for (const auto& [name, q] : state_.qos) out.push_back(q);
  return out;
}

Result<QosClass> HeadCore::SetQos(const Caller& by, QosClass qos, TimeMs now) {
  if (!by.IsAdmin()) return PermissionDenied("setting a QoS class needs an admin");
  CORRAL_RETURN_IF_ERROR(CheckQosAssignments(state_.qos, qos));
  Emit(by, now, QosSet{qos});
  return qos;
}

Result<QosClass> HeadCore::DeleteQos(const Caller& by, const std::string& name, TimeMs now) {
  if (!by.IsAdmin()) return PermissionDenied("deleting a QoS class needs an admin");
  auto it = state_.qos.find(name);
  if (it == state_.qos.end()) return NotFound("no QoS class '" + name + "'");
  QosClass gone = it->second;
  Emit(by, now, QosDeleted{name});
  return gone;
}

Status HeadCore::CheckPriority(const Caller& by, const JobSpec& spec,
                               const std::string& owner) const {
  if (by.IsAdmin()) return Status::Ok();
  const std::string p = std::to_string(spec.priority);
  if (const QosClass* q = QosFor(state_.qos, owner, spec.queue)) {
    if (spec.priority > q->max_priority) {
      return PermissionDenied("field 'priority': got " + p + ", above the limit " +
                              std::to_string(q->max_priority) + " of QoS '" + q->name +
                              "' (user '" + owner + "', queue '" + spec.queue + "')");
    }
    if (spec.priority < q->min_priority) {
      return PermissionDenied("field 'priority': got " + p + ", below the limit " +
                              std::to_string(q->min_priority) + " of QoS '" + q->name +
                              "' (user '" + owner + "', queue '" + spec.queue + "')");
    }
    return Status::Ok();
  }
  if (spec.priority > config_.max_user_priority &&
      !(by.role == Role::kQueueAdmin && ManagesQueue(by, spec.queue))) {
    return PermissionDenied("field 'priority': got " + p + ", want at most " +
                            std::to_string(config_.max_user_priority) +
                            " (higher takes an admin, an admin of queue '" + spec.queue +
                            "', or a QoS class that allows it)");
  }
  return Status::Ok();
}

void HeadCore::RefreshPendingInputs() {
  for (const auto& [id, job] : state_.jobs) {
    if (job.state != JobState::kPending || admission_.IsHeld(id)) continue;
    model_.Unqueue(id);
    model_.Queue(state_, job);
  }
  WantSchedule();
}

}  // namespace corral::head
