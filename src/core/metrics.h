// Prometheus metrics by hand (text exposition format 0.0.4): counters, gauges and histograms
// with labels, rendered on /metrics. Naming follows Prometheus' rules: base units (seconds,
// bytes), `_total` for counters, no unbounded labels (no job ids, no user names).
//
// Thread-safe: any thread may update; Render() takes one consistent copy.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace corral {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

class MetricsRegistry {
 public:
  enum class Type { kCounter, kGauge, kHistogram };
  // Declares a family once; later calls with the same name are ignored.
  void Describe(const std::string& name, Type type, const std::string& help,
                std::vector<double> buckets = {});
  void Add(const std::string& name, const MetricLabels& labels, double delta);  // counter
  void Set(const std::string& name, const MetricLabels& labels, double value);  // gauge
  void Observe(const std::string& name, const MetricLabels& labels, double v);  // histogram
  // Forgets every series of a family (a gauge recomputed from scratch at each scrape).
  void Clear(const std::string& name);
  std::string Render() const;

  // Buckets for durations from 1 ms to about 100 s, and for waits from 1 s to 1 day.
  static std::vector<double> LatencyBuckets();
  static std::vector<double> WaitBuckets();

 private:
  struct Series {
    double value = 0;              // counter, gauge; histogram: sum
    uint64_t count = 0;            // histogram
    std::vector<uint64_t> counts;  // histogram, per bucket (not cumulative)
  };
  struct Family {
    Type type = Type::kGauge;
    std::string help;
    std::vector<double> buckets;
    std::map<MetricLabels, Series> series;
  };
  Family* Find(const std::string& name);  // REQUIRES: mu_ held

  mutable std::mutex mu_;
  std::map<std::string, Family> families_;  // GUARDED_BY(mu_)
};

// A label value escaped for the text format (\\, \", \n).
std::string EscapeLabelValue(const std::string& v);

}  // namespace corral
