// What the dashboard shows of a service's traffic (GET /v1/services[/NAME], docs/services.md):
// the requests its head's proxy answered over the last minute, their rate, the share answered
// 5xx, and their latency's median and 99th percentile, from arrival at the head to the answer.
// The proxy records each answer here; the figures are computed when asked. An observation in the
// shell's memory, like the histograms of /metrics: not durable, this head's proxy only.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "core/codec.h"

namespace corral::api {

struct ServiceTraffic {
  double window_s = 0;   // the span the figures cover: the window, or less since the first answer
  int64_t requests = 0;  // answered within it
  double requests_per_s = 0;
  int64_t errors_5xx = 0;        // answered with a 5xx code (the replica's, or the proxy's 502/503)
  double error_share = 0;        // errors_5xx / requests; 0 without requests
  std::optional<double> p50_ms;  // none answered: none
  std::optional<double> p99_ms;
  int in_flight = 0;  // now: sent to a replica or held for one
};
Json ToJson(const ServiceTraffic& t);

// One service's answers over the last `window`, in one-second buckets.
class TrafficWindow {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kWindow{60};
  // Latencies kept per second for the quantiles (a second with more keeps its first ones; the
  // counts stay exact).
  static constexpr size_t kLatenciesPerSecond = 1000;

  void Record(Clock::time_point now, double latency_ms, int status);
  ServiceTraffic Summary(Clock::time_point now) const;
  // Whether it holds no answer of the window any more (the service may be forgotten).
  bool Empty(Clock::time_point now) const;

 private:
  struct Second {
    int64_t index = 0;  // whole seconds of the clock
    int64_t requests = 0;
    int64_t errors = 0;
    std::vector<float> latencies_ms;
  };
  static int64_t SecondOf(Clock::time_point t);
  void Prune(Clock::time_point now);

  std::deque<Second> seconds_;              // oldest first
  std::optional<Clock::time_point> first_;  // the first answer recorded
};

}  // namespace corral::api
