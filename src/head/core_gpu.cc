// The head core's side of GPU health (DESIGN §9): per-GPU drains by an operator or by the
// agents' health checks, and what a check's finding does to the runs on that GPU.
#include <algorithm>

#include "head/head_core.h"

namespace corral::head {

std::vector<JobId> HeadCore::JobsOnGpu(const std::string& node, int32_t gpu) const {
  std::vector<JobId> out;
  for (JobId id : active().OnNode(node)) {
    const Run& run = *state_.jobs.at(id).CurrentRun();
    for (const ReplicaPlacement& p : run.placement) {
      if (p.node == node && std::find(p.gpus.begin(), p.gpus.end(), gpu) != p.gpus.end()) {
        out.push_back(id);
        break;
      }
    }
  }
  return out;
}

Result<NodeView> HeadCore::SetGpuDrain(const Caller& by, const std::string& name, int32_t gpu,
                                       bool drain, const std::string& reason, TimeMs now) {
  if (!by.IsAdmin()) return PermissionDenied("draining a GPU needs an admin");
  auto it = state_.nodes.find(name);
  if (it == state_.nodes.end()) return NotFound("no node " + name);
  const Node& node = it->second;
  bool known = false;
  for (const Gpu& g : node.gpus) known |= g.index == gpu;
  if (!known) {
    return InvalidArgument("field 'gpu': node " + name + " has no GPU " + std::to_string(gpu) +
                           " (it has " + std::to_string(node.gpus.size()) + ")");
  }
  auto d = node.gpu_drains.find(gpu);
  if (drain) {
    // An operator's drain replaces a health drain: it is kept until an operator returns it.
    GpuDrain set{DrainSource::kAdmin,
                 "drained by " + by.name + (reason.empty() ? "" : ": " + reason), now};
    if (d == node.gpu_drains.end() || d->second.source != DrainSource::kAdmin) {
      Emit(by, now, GpuDrainSet{name, gpu, std::move(set)});
    }
  } else if (d != node.gpu_drains.end()) {
    Emit(by, now,
         GpuDrainSet{name, gpu, GpuDrain{DrainSource::kNone, "returned by " + by.name, now}});
    gpus_.ChecksOf(name, gpu).clean = 0;
  }
  return NodeView{state_.nodes.at(name), 0, {}, {}};
}

void HeadCore::ObserveGpuHealth(const Node& node, const std::vector<GpuSample>& samples,
                                TimeMs now) {
  const std::string name = node.name;  // `node` may move as changes apply
  for (const GpuSample& s : samples) {
    GpuWatch::Checks& seen = gpus_.ChecksOf(name, s.index);
    // Each check once: the agent repeats its last one (and its undelivered Xids) until a sync
    // gets through.
    if (s.check == 0 || s.check <= seen.last) continue;
    seen.last = s.check;
    const std::string gpu = "GPU " + std::to_string(s.index) + " of node " + name;
    for (int32_t xid : s.xids) gpus_.CountXid(name, xid);
    // The application's own errors: its run fails (a restart spent, as any failure), the GPU
    // stays in service.
    for (int32_t xid : s.xids) {
      if (ClassifyXid(xid) != XidClass::kApplication) continue;
      for (JobId id : JobsOnGpu(name, s.index)) {
        RequestStop(state_.jobs.at(id), StopCause::kGpuError,
                    std::string(kReasonGpuError) + ": " + XidText(xid) + " on " + gpu +
                        ", the application's fault",
                    now);
      }
    }
    const Node& n = state_.nodes.at(name);
    auto drained = n.gpu_drains.find(s.index);
    if (s.health == GpuHealth::kCritical) {
      seen.clean = 0;
      if (drained == n.gpu_drains.end()) {
        Emit(Caller::Node(name), now,
             GpuDrainSet{name, s.index,
                         GpuDrain{DrainSource::kHealth, "critical: " + s.health_reason, now}});
      }
      // Its runs are not at fault: stopped and requeued elsewhere, no restart spent (a gang
      // restarts from its last checkpoint).
      for (JobId id : JobsOnGpu(name, s.index)) {
        RequestStop(
            state_.jobs.at(id), StopCause::kRequeued,
            std::string(kReasonRequeued) + ": " + gpu + " is critical (" + s.health_reason + ")",
            now);
      }
      continue;
    }
    if (s.health != GpuHealth::kOk) {
      seen.clean = 0;
      continue;
    }
    if (drained == n.gpu_drains.end() || drained->second.source != DrainSource::kHealth) continue;
    if (++seen.clean >= config_.gpu_clean_checks_to_return) {
      seen.clean = 0;
      Emit(Caller::Node(name), now,
           GpuDrainSet{
               name, s.index,
               GpuDrain{DrainSource::kNone,
                        "returned after " + std::to_string(config_.gpu_clean_checks_to_return) +
                            " clean health checks in a row",
                        now}});
    }
  }
}

}  // namespace corral::head
