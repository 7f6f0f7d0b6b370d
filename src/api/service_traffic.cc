#include "api/service_traffic.h"

#include <algorithm>
#include <cmath>

namespace corral::api {
namespace {

// The q-quantile of `v` by nearest rank (the smallest value with at least q of them at or
// below it); reorders `v`.
double NearestRank(std::vector<float>& v, double q) {
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  const auto at = v.begin() + static_cast<std::ptrdiff_t>(std::max<size_t>(rank, 1) - 1);
  std::nth_element(v.begin(), at, v.end());
  return *at;
}

}  // namespace

Json ToJson(const ServiceTraffic& t) {
  Json j{{"window_s", t.window_s},
         {"requests", t.requests},
         {"requests_per_s", t.requests_per_s},
         {"errors_5xx", t.errors_5xx},
         {"error_share", t.error_share},
         {"in_flight", t.in_flight}};
  j["p50_ms"] = t.p50_ms ? Json(*t.p50_ms) : Json();
  j["p99_ms"] = t.p99_ms ? Json(*t.p99_ms) : Json();
  return j;
}

int64_t TrafficWindow::SecondOf(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

void TrafficWindow::Prune(Clock::time_point now) {
  const int64_t oldest = SecondOf(now) - kWindow.count();
  while (!seconds_.empty() && seconds_.front().index <= oldest) seconds_.pop_front();
}

void TrafficWindow::Record(Clock::time_point now, double latency_ms, int status) {
  Prune(now);
  if (!first_) first_ = now;
  const int64_t s = SecondOf(now);
  if (seconds_.empty() || seconds_.back().index != s) seconds_.push_back(Second{s});
  Second& b = seconds_.back();
  ++b.requests;
  if (status / 100 == 5) ++b.errors;
  if (b.latencies_ms.size() < kLatenciesPerSecond) {
    b.latencies_ms.push_back(static_cast<float>(latency_ms));
  }
}

ServiceTraffic TrafficWindow::Summary(Clock::time_point now) const {
  ServiceTraffic t;
  const int64_t oldest = SecondOf(now) - kWindow.count();
  std::vector<float> latencies;
  for (const Second& b : seconds_) {
    if (b.index <= oldest) continue;
    t.requests += b.requests;
    t.errors_5xx += b.errors;
    latencies.insert(latencies.end(), b.latencies_ms.begin(), b.latencies_ms.end());
  }
  // A service answering for less than the window has its rate over the time it answered, at
  // least a second.
  const double since = first_ ? std::chrono::duration<double>(now - *first_).count() : 0;
  t.window_s = std::clamp(since, 1.0, static_cast<double>(kWindow.count()));
  t.requests_per_s = static_cast<double>(t.requests) / t.window_s;
  t.error_share = t.requests > 0 ? static_cast<double>(t.errors_5xx) / t.requests : 0;
  if (!latencies.empty()) {
    t.p50_ms = NearestRank(latencies, 0.5);
    t.p99_ms = NearestRank(latencies, 0.99);
  }
  return t;
}

bool TrafficWindow::Empty(Clock::time_point now) const {
  const int64_t oldest = SecondOf(now) - kWindow.count();
  return seconds_.empty() || seconds_.back().index <= oldest;
}

}  // namespace corral::api
