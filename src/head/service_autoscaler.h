// The services' autoscaler (docs/services.md, "Autoscaling"): each service's recent load, as
// the head's proxy measures and reports it (the requests in flight to its replicas and those
// held waiting for one, averaged over each report's interval), and the decision of how many
// replicas it wants, with stabilisation windows so that it does not flap:
//
// - up: when every sample of the last scale_up_delay wants more replicas than it has, to the
//   fewest any of them wants (ceil(in flight / target); with a target latency, at least
//   ceil(replicas × median latency / target latency)), at most max_replicas;
// - down: when every sample of the last scale_down_delay wants fewer, to the most any of them
//   wants, at least max(min_replicas, 1);
// - panic (Knative's): when the mean in flight over the last panic_window is at least
//   panic_threshold_pct% of what the replicas take at the target, at once to what it wants;
// - to zero (min_replicas 0): when no request was in flight for scale_to_zero_after, counted
//   from when a replica was first ready (a cold start longer than the idle time is not an
//   idle service: its replica is not killed while it loads);
// - from zero: at once, on the first sample with a request (the proxy also asks for a replica
//   as the request arrives: HeadCore::WakeService).
//
// The windows count from the service's creation or its last change of desired replicas (by
// hand or by the autoscaler), so a new count holds at least one window before the next. The
// samples are observations, not durable: a new leadership starts every window afresh
// (Rebuild), so a restarted head decides nothing before a whole window of new samples.
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <string>

#include "head/cluster_state.h"

namespace corral::head {

class ServiceAutoscaler {
 public:
  // Services created, scaled or removed: their windows start afresh (the idle time too, where
  // a ready replica serves on), or are forgotten; a replica marked ready starts the idle time
  // of a window that had none.
  void Apply(const ClusterState& s, const Change& c);
  // Every service's window starts empty at `now`, its idle time too where a replica is ready.
  void Rebuild(const ClusterState& s, TimeMs now);

  // A sample of `service`'s load over the interval ending at `at`: requests in flight on
  // average (over all its replicas, and held for one) and the median latency of those
  // answered. Samples older than `keep_ms` go.
  void Record(const std::string& service, TimeMs at, const ServiceLoad& load, DurationMs keep_ms);

  struct Decision {
    int32_t to = 0;
    std::string reason;  // "scaled 1 → 3: 5.8 requests in flight per replica over 30s, target 2"
  };
  // Whether `s` should now have another number of replicas, and why.
  std::optional<Decision> Decide(const Service& s, TimeMs now) const;

  // How many samples it keeps of `service` (tests, and the head's own checks).
  size_t SampleCount(const std::string& service) const;

 private:
  struct Sample {
    TimeMs at = 0;
    ServiceLoad load;
  };
  struct Window {
    TimeMs since = 0;  // its samples count from here
    // When a replica of the service was first ready in this window: the idle time to zero
    // counts from here, never from before (none yet: it is starting, not idle).
    std::optional<TimeMs> ready_since;
    std::deque<Sample> samples;
  };
  // The load over the last `length` of a window, if the window spans it.
  struct Load {
    int32_t fewest_wanted = 0;  // the smallest number of replicas one of its samples wants
    int32_t most_wanted = 0;
    double mean = 0;  // in flight, over all replicas
    double peak = 0;
    std::optional<double> latency_ms;  // the mean of its samples' median latencies
  };
  // What each sample of the last `length` wants of `s`, which has `replicas` (its windows
  // start at each change of them, so every sample saw as many).
  static std::optional<Load> Over(const Window& w, DurationMs length, const ServiceSpec& s,
                                  int32_t replicas, TimeMs now);
  // Knative's panic mode: the mean in flight over the panic window at least the threshold's
  // percent of what `s`'s replicas take at the target scales up at once, to what it wants.
  static std::optional<Decision> Panic(const Service& s, const Window& w, TimeMs now);
  // Whether `s` has had a ready replica and no request in flight for its scale_to_zero_after.
  static bool IdleSinceReady(const Service& s, const Window& w, TimeMs now);
  std::map<std::string, Window> windows_;
};

// How far the oldest sample may start after a window's start: the proxy reports every second.
constexpr DurationMs kScaleSampleSlack = 2 * kSecond;

// The longest window a service's autoscaler looks back over: its samples are kept that long.
DurationMs LongestScaleWindow(const ServiceSpec& s);

}  // namespace corral::head
