#include "head/cluster_series.h"

#include <string>

#include "core/status.h"

namespace corral::head {

ClusterPoint SampleCluster(const std::vector<NodeView>& nodes, const std::vector<QueueView>& queues,
                           TimeMs now) {
  ClusterPoint p;
  p.at = now;
  int64_t util_sum = 0, measured = 0;
  for (const NodeView& v : nodes) {
    if (v.node.liveness != Liveness::kAlive) continue;
    p.gpus += static_cast<int32_t>(v.node.gpus.size());
    p.gpus_used += v.gpus_used;
    for (const GpuSample& g : v.gpu_samples) {
      if (!g.fault.empty()) continue;
      util_sum += g.utilization_percent;
      ++measured;
    }
  }
  if (measured > 0) {
    p.gpu_util = static_cast<int32_t>((util_sum + measured / 2) / measured);
  }
  for (const QueueView& q : queues) {
    p.pending += q.pending;
    p.running += q.running;
  }
  return p;
}

ClusterSeries::ClusterSeries(DurationMs step_ms, size_t capacity)
    : step_ms_(step_ms), capacity_(capacity) {
  CORRAL_CHECK(step_ms_ > 0, "cluster series step " + std::to_string(step_ms_));
  CORRAL_CHECK(capacity_ > 0, "cluster series capacity " + std::to_string(capacity_));
}

bool ClusterSeries::Due(TimeMs now) const {
  return points_.empty() || now / step_ms_ > points_.back().at / step_ms_;
}

void ClusterSeries::Add(ClusterPoint p) {
  points_.push_back(p);
  while (points_.size() > capacity_) points_.pop_front();
}

ClusterSeriesView ClusterSeries::Since(TimeMs from) const {
  ClusterSeriesView v{step_ms_, static_cast<int64_t>(capacity_), {}};
  for (const ClusterPoint& p : points_) {
    if (p.at >= from) v.points.push_back(p);
  }
  return v;
}

Json ToJson(const ClusterSeriesView& v) {
  Json points = Json::array();
  for (const ClusterPoint& p : v.points) {
    points.push_back(
        Json::array({p.at, p.gpus, p.gpus_used, p.gpu_util < 0 ? Json(nullptr) : Json(p.gpu_util),
                     p.pending, p.running}));
  }
  return Json{{"step_ms", v.step_ms}, {"capacity", v.capacity}, {"points", std::move(points)}};
}

}  // namespace corral::head
