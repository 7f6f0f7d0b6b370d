#include "agents/latency_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace corral::bench {

void LatencyStats::Merge(const LatencyStats& other) {
  samples_.insert(samples_.end(), other.samples_.begin(), other.samples_.end());
  sorted_ = false;
}

double LatencyStats::Percentile(double p) const {
  if (samples_.empty()) return 0;
  if (!sorted_) {
    std::sort(samples_.begin(), samples_.end());
    sorted_ = true;
  }
  p = std::clamp(p, 0.0, 1.0);
  // Nearest rank: the smallest sample with at least p of all samples at or below it.
  size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(samples_.size())));
  return samples_[rank == 0 ? 0 : rank - 1];
}

std::string LatencyStats::Summary() const {
  char buf[128];
  std::snprintf(buf, sizeof buf, "p50 %.1f ms  p99 %.1f ms  max %.1f ms  (n=%zu)", Percentile(0.5),
                Percentile(0.99), Percentile(1.0), samples_.size());
  return buf;
}

}  // namespace corral::bench
