#include "head/service_autoscaler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace corral::head {
namespace {

// Replicas that `in_flight` requests want at `target` per replica (a hair under a whole
// number counts as it: averages of whole numbers are not exact).
int32_t AutoscalerWanted(double in_flight, double target) {
  return static_cast<int32_t>(std::ceil(in_flight / target - 1e-9));
}

// "5.8", "2", "0.25": a load or a target as the events say it.
std::string AutoscalerNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g", v);
  if (v >= 10) std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

// Replicas that a median latency of `latency_ms` wants of `replicas` at `target_ms`: in
// proportion, as Kubernetes' HPA scales on any metric (twice the target wants twice the
// replicas). No target, or no request answered: none (the latency is no evidence).
int32_t LatencyWanted(const ServiceLoad& load, const ServiceAutoscaling& a, int32_t replicas) {
  if (a.target_latency_ms <= 0 || !load.median_latency_ms) return 0;
  return AutoscalerWanted(replicas * *load.median_latency_ms,
                          static_cast<double>(a.target_latency_ms));
}

// ", median latency 480 ms (target 200 ms)" where the service targets a latency and its
// window saw one.
std::string LatencyText(const std::optional<double>& latency_ms, const ServiceAutoscaling& a) {
  if (a.target_latency_ms <= 0 || !latency_ms) return "";
  return ", median latency " + AutoscalerNumber(*latency_ms) + " ms (target " +
         std::to_string(a.target_latency_ms) + " ms)";
}

std::string AutoscalerArrow(int32_t from, int32_t to) {
  return "scaled " + std::to_string(from) + " \u2192 " + std::to_string(to) + ": ";
}

// `at` where `service` has a replica that answered its readiness check, is live and is not
// leaving; none: nothing (its replicas are starting, or there are none).
std::optional<TimeMs> AutoscalerServingSince(const ClusterState& s, const std::string& service,
                                             TimeMs at) {
  auto it = s.services.find(service);
  if (it == s.services.end()) return std::nullopt;
  const Service& svc = it->second;
  // Its marks keep replicas that ended since (until the next mark): only a live one counts.
  for (JobId id : svc.ready) {
    auto job = s.jobs.find(id);
    if (job != s.jobs.end() && !IsTerminal(job->second.state) && !svc.draining.count(id)) {
      return at;
    }
  }
  return std::nullopt;
}

}  // namespace

DurationMs LongestScaleWindow(const ServiceSpec& s) {
  const ServiceAutoscaling& a = s.autoscaling;
  return std::max(
      {a.scale_up_delay_ms, a.scale_down_delay_ms, a.scale_to_zero_after_ms, a.panic_window_ms});
}

void ServiceAutoscaler::Apply(const ClusterState& s, const Change& c) {
  if (const auto* e = std::get_if<ServiceCreated>(&c.what)) {
    windows_[e->service->spec.name] = Window{c.at, std::nullopt, {}};
  } else if (const auto* e = std::get_if<ServiceScaled>(&c.what)) {
    // A replica that serves on through the change keeps the idle time going from the change.
    windows_[e->name] = Window{c.at, AutoscalerServingSince(s, e->name, c.at), {}};
  } else if (const auto* e = std::get_if<ServiceRemoved>(&c.what)) {
    windows_.erase(e->name);
  } else if (const auto* e = std::get_if<ServiceReplicaMarked>(&c.what);
             e && e->mark == ReplicaMark::kReady) {
    auto it = windows_.find(e->name);
    if (it != windows_.end() && !it->second.ready_since) it->second.ready_since = c.at;
  }
}

void ServiceAutoscaler::Rebuild(const ClusterState& s, TimeMs now) {
  windows_.clear();
  for (const auto& [name, service] : s.services) {
    windows_[name] = Window{now, AutoscalerServingSince(s, name, now), {}};
  }
}

void ServiceAutoscaler::Record(const std::string& service, TimeMs at, const ServiceLoad& load,
                               DurationMs keep_ms) {
  auto [it, added] = windows_.try_emplace(service, Window{at, std::nullopt, {}});
  Window& w = it->second;
  if (!w.samples.empty() && at < w.samples.back().at) return;  // the clock never goes back
  ServiceLoad kept = load;
  kept.in_flight = std::max(0.0, load.in_flight);
  if (kept.median_latency_ms && !(*kept.median_latency_ms >= 0)) kept.median_latency_ms.reset();
  w.samples.push_back({at, kept});
  while (!w.samples.empty() && w.samples.front().at <= at - keep_ms - kSecond) {
    w.samples.pop_front();
  }
}

size_t ServiceAutoscaler::SampleCount(const std::string& service) const {
  auto it = windows_.find(service);
  return it == windows_.end() ? 0 : it->second.samples.size();
}

std::optional<ServiceAutoscaler::Load> ServiceAutoscaler::Over(const Window& w, DurationMs length,
                                                               const ServiceSpec& s,
                                                               int32_t replicas, TimeMs now) {
  // The window must have been watched whole: since its start, and by samples from its start
  // (within a report's interval: a gap in the reports is no evidence of a quiet service).
  if (w.samples.empty() || now - w.since < length ||
      w.samples.front().at > now - length + kScaleSampleSlack) {
    return std::nullopt;
  }
  const ServiceAutoscaling& a = s.autoscaling;
  Load load;
  int32_t n = 0, timed = 0;
  double latency_sum = 0;
  for (auto it = w.samples.rbegin(); it != w.samples.rend(); ++it) {
    // The latest sample always counts (a window of 0 is the last sample alone).
    if (n > 0 && it->at <= now - length) break;
    const ServiceLoad& l = it->load;
    const int32_t wanted =
        std::max(AutoscalerWanted(l.in_flight, a.target_in_flight), LatencyWanted(l, a, replicas));
    load.fewest_wanted = n == 0 ? wanted : std::min(load.fewest_wanted, wanted);
    load.most_wanted = std::max(load.most_wanted, wanted);
    load.peak = std::max(load.peak, l.in_flight);
    load.mean += l.in_flight;
    if (l.median_latency_ms) {
      latency_sum += *l.median_latency_ms;
      ++timed;
    }
    ++n;
  }
  load.mean /= n;
  if (timed > 0) load.latency_ms = latency_sum / timed;
  return load;
}

bool ServiceAutoscaler::IdleSinceReady(const Service& s, const Window& w, TimeMs now) {
  const ServiceAutoscaling& a = s.spec.autoscaling;
  if (s.spec.min_replicas != 0 || !w.ready_since) return false;
  // The idle time starts when a replica was first ready: a replica loading its model for longer
  // than the idle time gets no request because it cannot take one yet, not for lack of use.
  if (now - *w.ready_since < a.scale_to_zero_after_ms) return false;
  auto idle = Over(w, a.scale_to_zero_after_ms, s.spec, s.desired, now);
  return idle && idle->peak <= 0;
}

std::optional<ServiceAutoscaler::Decision> ServiceAutoscaler::Panic(const Service& s,
                                                                    const Window& w, TimeMs now) {
  // Only where the panic window is shorter than the up-delay (else the up-delay acts first).
  const ServiceAutoscaling& a = s.spec.autoscaling;
  if (a.scale_up_delay_ms <= a.panic_window_ms) return std::nullopt;
  auto panic = Over(w, a.panic_window_ms, s.spec, s.desired, now);
  const double target = a.target_in_flight;
  if (!panic || panic->mean / s.desired < a.panic_threshold_pct / 100.0 * target) {
    return std::nullopt;
  }
  const int32_t to = std::min(AutoscalerWanted(panic->mean, target), s.spec.max_replicas);
  if (to <= s.desired) return std::nullopt;
  return Decision{
      to, AutoscalerArrow(s.desired, to) + "panic: " + AutoscalerNumber(panic->mean / s.desired) +
              " requests in flight per replica over " + ServiceDurationText(a.panic_window_ms) +
              ", at least " + std::to_string(a.panic_threshold_pct) + "% of target " +
              AutoscalerNumber(target)};
}

std::optional<ServiceAutoscaler::Decision> ServiceAutoscaler::Decide(const Service& s,
                                                                     TimeMs now) const {
  const ServiceSpec& spec = s.spec;
  if (!Autoscaled(spec) || s.removing || s.rollout) return std::nullopt;
  auto it = windows_.find(spec.name);
  if (it == windows_.end() || it->second.samples.empty()) return std::nullopt;
  const Window& w = it->second;
  const ServiceAutoscaling& a = spec.autoscaling;
  const double target = a.target_in_flight;
  const int32_t from = s.desired;
  const std::string per_target = ", target " + AutoscalerNumber(target);
  if (from == 0) {  // a request waits: no window
    const double latest = w.samples.back().load.in_flight;
    if (latest <= 0) return std::nullopt;
    const int32_t to = std::clamp(AutoscalerWanted(latest, target), 1, spec.max_replicas);
    return Decision{to, AutoscalerArrow(from, to) + AutoscalerNumber(latest) +
                            " request(s) in flight with no replica"};
  }
  if (auto panic = Panic(s, w, now)) return panic;
  if (auto up = Over(w, a.scale_up_delay_ms, spec, from, now)) {
    const int32_t to = std::min(up->fewest_wanted, spec.max_replicas);
    if (to > from) {
      return Decision{to, AutoscalerArrow(from, to) + AutoscalerNumber(up->mean / from) +
                              " requests in flight per replica over " +
                              ServiceDurationText(a.scale_up_delay_ms) + per_target +
                              LatencyText(up->latency_ms, a)};
    }
  }
  if (IdleSinceReady(s, w, now)) {
    return Decision{0, AutoscalerArrow(from, 0) + "no request in flight for " +
                           ServiceDurationText(a.scale_to_zero_after_ms)};
  }
  if (auto down = Over(w, a.scale_down_delay_ms, spec, from, now)) {
    const int32_t to = std::max(down->most_wanted, std::max(spec.min_replicas, 1));
    if (to < from) {
      return Decision{to, AutoscalerArrow(from, to) + AutoscalerNumber(down->mean / from) +
                              " requests in flight per replica over " +
                              ServiceDurationText(a.scale_down_delay_ms) + per_target +
                              LatencyText(down->latency_ms, a)};
    }
  }
  return std::nullopt;
}

}  // namespace corral::head
