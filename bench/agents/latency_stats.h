// Samples of a latency (ms) and their percentiles, for the whole-system load tools. Not
// thread-safe: keep one per thread and Merge them at the end.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace corral::bench {

class LatencyStats {
 public:
  void Add(double ms) { samples_.push_back(ms); }
  void Merge(const LatencyStats& other);
  size_t count() const { return samples_.size(); }

  // The p-quantile (0 <= p <= 1) by nearest rank on the sorted samples; 0 when empty.
  double Percentile(double p) const;

  // "p50 3 ms  p99 41 ms  max 90 ms  (n=1234)".
  std::string Summary() const;

 private:
  mutable std::vector<double> samples_;
  mutable bool sorted_ = false;
};

}  // namespace corral::bench
