#include "core/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/status.h"

namespace corral {
namespace {

std::string FormatValue(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string RenderLabels(const MetricLabels& labels, const std::string& extra_key = "",
                         const std::string& extra_value = "") {
  if (labels.empty() && extra_key.empty()) return "";
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    out += (first ? "" : ",") + k + "=\"" + EscapeLabelValue(v) + "\"";
    first = false;
  }
  if (!extra_key.empty()) out += (first ? "" : ",") + extra_key + "=\"" + extra_value + "\"";
  return out + "}";
}

const char* TypeName(MetricsRegistry::Type t) {
  switch (t) {
    case MetricsRegistry::Type::kCounter:
      return "counter";
    case MetricsRegistry::Type::kGauge:
      return "gauge";
    case MetricsRegistry::Type::kHistogram:
      return "histogram";
  }
  return "untyped";
}

}  // namespace

std::string EscapeLabelValue(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::vector<double> MetricsRegistry::LatencyBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 100};
}

std::vector<double> MetricsRegistry::WaitBuckets() {
  return {1, 5, 15, 30, 60, 300, 900, 1800, 3600, 7200, 14400, 43200, 86400};
}

void MetricsRegistry::Describe(const std::string& name, Type type, const std::string& help,
                               std::vector<double> buckets) {
  std::lock_guard<std::mutex> l(mu_);
  if (families_.count(name)) return;
  Family& f = families_[name];
  f.type = type;
  f.help = help;
  std::sort(buckets.begin(), buckets.end());
  f.buckets = std::move(buckets);
}

MetricsRegistry::Family* MetricsRegistry::Find(const std::string& name) {
  auto it = families_.find(name);
  CORRAL_CHECK(it != families_.end(), "metric " + name + " used before Describe");
  return &it->second;
}

void MetricsRegistry::Add(const std::string& name, const MetricLabels& labels, double delta) {
  std::lock_guard<std::mutex> l(mu_);
  Find(name)->series[labels].value += delta;
}

void MetricsRegistry::Set(const std::string& name, const MetricLabels& labels, double value) {
  std::lock_guard<std::mutex> l(mu_);
  Find(name)->series[labels].value = value;
}

void MetricsRegistry::Observe(const std::string& name, const MetricLabels& labels, double v) {
  std::lock_guard<std::mutex> l(mu_);
  Family* f = Find(name);
  Series& s = f->series[labels];
  if (s.counts.empty()) s.counts.assign(f->buckets.size(), 0);
  auto it = std::lower_bound(f->buckets.begin(), f->buckets.end(), v);  // le: v <= bound
  if (it != f->buckets.end()) ++s.counts[it - f->buckets.begin()];
  s.value += v;
  ++s.count;
}

void MetricsRegistry::Clear(const std::string& name) {
  std::lock_guard<std::mutex> l(mu_);
  Find(name)->series.clear();
}

std::string MetricsRegistry::Render() const {
  std::lock_guard<std::mutex> l(mu_);
  std::string out;
  for (const auto& [name, f] : families_) {
    out += "# HELP " + name + " " + f.help + "\n# TYPE " + name + " " + TypeName(f.type) + "\n";
    for (const auto& [labels, s] : f.series) {
      if (f.type != Type::kHistogram) {
        out += name + RenderLabels(labels) + " " + FormatValue(s.value) + "\n";
        continue;
      }
      uint64_t cumulative = 0;
      for (size_t i = 0; i < f.buckets.size(); ++i) {
        cumulative += s.counts[i];
        out += name + "_bucket" + RenderLabels(labels, "le", FormatValue(f.buckets[i])) + " " +
               std::to_string(cumulative) + "\n";
      }
      out += name + "_bucket" + RenderLabels(labels, "le", "+Inf") + " " + std::to_string(s.count) +
             "\n";
      out += name + "_sum" + RenderLabels(labels) + " " + FormatValue(s.value) + "\n";
      out += name + "_count" + RenderLabels(labels) + " " + std::to_string(s.count) + "\n";
    }
  }
  return out;
}

}  // namespace corral
