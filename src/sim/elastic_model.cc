#include "sim/elastic_model.h"

#include <algorithm>
#include <cmath>

namespace corral::sim {

bool ElasticShapeOf(const TraceJob& t, int32_t gpus_per_node, const ElasticModel& m,
                    ElasticShape* out) {
  if (!m.on || t.spec || t.num_gpus < 2 || t.gpu_milli > 0 || t.gpu_memory_mb > 0 ||
      gpus_per_node <= 0) {
    return false;
  }
  int32_t per = 1;
  if (t.num_gpus > gpus_per_node) {  // whole-node replicas, as a rigid gang's (Shape)
    per = t.num_gpus;
    for (int32_t r = (t.num_gpus + gpus_per_node - 1) / gpus_per_node; r <= t.num_gpus; ++r) {
      if (t.num_gpus % r == 0 && t.num_gpus / r <= gpus_per_node) {
        per = t.num_gpus / r;
        break;
      }
    }
  }
  const int32_t max = t.num_gpus / per;
  if (max < 2) return false;
  const auto min = static_cast<int32_t>(std::ceil(m.min_fraction * max - 1e-9));
  *out = ElasticShape{std::clamp(min, 1, max), max, per, t.num_gpus};
  return out->min < out->max;
}

double ElasticRate(const ElasticShape& s, int32_t replicas, double alpha) {
  if (replicas <= 0 || s.gpus <= 0) return 0;
  if (replicas >= s.max) return 1.0;
  return std::pow(static_cast<double>(replicas * s.per_replica) / s.gpus, alpha);
}

}  // namespace corral::sim
