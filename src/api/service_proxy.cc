#include "api/service_proxy.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "api/api_service.h"

namespace corral::api {
namespace {

bool IdempotentMethod(const std::string& m) {
  return m == "GET" || m == "HEAD" || m == "PUT" || m == "DELETE" || m == "OPTIONS";
}

// The median of `values` (none: nothing); reorders them.
std::optional<double> ProxyMedian(std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  auto mid = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), mid, values.end());
  return *mid;
}

std::string ReplicaUrl(const head::ServiceReplica& r) {
  const bool v6 = r.host.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + r.host + "]" : r.host) + ":" + std::to_string(r.port);
}

}  // namespace

ServiceProxy::ServiceProxy(head::Head* head, ServiceProxyOptions options)
    : head_(head), options_(options) {}

ServiceProxy::~ServiceProxy() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (prober_.joinable()) prober_.join();
}

void ServiceProxy::Start() {
  if (!prober_.joinable()) prober_ = std::thread([this] { ProbeLoop(); });
}

void ServiceProxy::Handle(net::HttpRequest req, net::Responder respond) {
  // /v/NAME/REST?QUERY, taken from the raw target so that REST reaches the replica as sent.
  const std::string& target = req.target;
  const size_t end = target.find_first_of("/?", 3);
  const std::string name = target.substr(3, end == std::string::npos ? end : end - 3);
  if (name.empty()) {
    return respond(net::JsonError(
        404, "not_found", "no service at " + req.path + ": want /v/NAME/ (a service's name)"));
  }
  std::string rest = end == std::string::npos ? "" : target.substr(end);
  if (rest.empty() || rest[0] == '?') rest = "/" + rest;
  const auto now = std::chrono::steady_clock::now();
  Pending p{name,
            req.method,
            std::move(rest),
            std::move(req.body),
            std::move(respond),
            now + std::chrono::milliseconds(kDefaultWakeTimeout),
            now};
  head_->Run(req.BearerToken(), head::GetService{name},
             [this, p = std::move(p)](Result<head::ServiceView> v) mutable {
               if (!v.ok()) return p.respond(ErrorResponse(v.status()));
               const bool asleep = v->service.desired == 0;
               // Held for a ready replica at most the service's wake timeout, whether it
               // wakes from zero (a replica starts for it) or its replicas are starting.
               p.deadline = p.started + std::chrono::milliseconds(v->service.spec.wake_timeout_ms);
               {
                 std::lock_guard lock(mu_);
                 MeterLocked(p.service, 1);
               }
               if (asleep) {
                 head_->Run(head_->tokens().admin, head::WakeService{p.service},
                            [](Result<Service>) {});
               }
               Dispatch(std::move(p));
             });
}

std::string ServiceProxy::PickLocked(const std::string& service) {
  auto pool = pools_.find(service);
  if (pool == pools_.end()) return "";
  // The fewest in flight; among equals, in turn (sequential requests then spread evenly too).
  std::vector<const std::string*> least;
  int fewest = 0;
  for (const auto& [run, r] : pool->second) {
    if (!r.ready || r.draining) continue;
    if (least.empty() || r.in_flight < fewest) {
      least.clear();
      fewest = r.in_flight;
    }
    if (r.in_flight == fewest) least.push_back(&run);
  }
  if (least.empty()) return "";
  return *least[turn_[service]++ % least.size()];
}

void ServiceProxy::Dispatch(Pending p) {
  std::unique_lock lock(mu_);
  const std::string run = PickLocked(p.service);
  if (run.empty()) {
    if (waiting_.size() >= options_.max_waiting) {
      lock.unlock();
      return Finish(p,
                    net::JsonError(503, "unavailable",
                                   "service '" + p.service +
                                       "': too many requests waiting for a ready replica"),
                    "queue_full");
    }
    waiting_.push_back(std::move(p));
    return;
  }
  Replica& r = pools_[p.service][run];
  ++r.in_flight;
  const std::string url = r.base_url;
  lock.unlock();
  ++p.tries;
  std::string method = p.method, target = p.target, body = p.body;
  client_.Request(url, "", std::move(method), std::move(target), std::move(body),
                  options_.request_timeout,
                  [this, p = std::move(p), run](Result<net::HttpResponse> a) mutable {
                    OnAnswer(std::move(p), run, std::move(a));
                  });
}

void ServiceProxy::OnAnswer(Pending p, const std::string& run, Result<net::HttpResponse> a) {
  std::vector<JobId> drained;
  {
    std::lock_guard lock(mu_);
    if (auto pool = pools_.find(p.service); pool != pools_.end()) {
      if (auto r = pool->second.find(run); r != pool->second.end()) {
        --r->second.in_flight;
        if (!a.ok()) r->second.ready = false;  // out of the pool until a probe says otherwise
        if (r->second.draining && r->second.in_flight == 0) drained.push_back(r->second.job);
      }
    }
  }
  ReportDrained(drained);
  if (!a.ok() && IdempotentMethod(p.method) && p.tries < 2) return Dispatch(std::move(p));
  net::HttpResponse out;
  const char* error = nullptr;
  if (a.ok()) {
    out.status = a->status;
    out.body = std::move(a->body);
    auto ct = a->headers.find("content-type");
    out.content_type = ct == a->headers.end() ? "application/octet-stream" : ct->second;
    if (out.status / 100 == 5) error = "replica_5xx";
  } else {
    out = net::JsonError(502, "bad_gateway",
                         "service '" + p.service + "': replica run " + run +
                             " did not answer: " + a.status().message());
    error = "replica_unreachable";
  }
  Finish(p, std::move(out), error);
}

void ServiceProxy::Finish(Pending& p, net::HttpResponse out, const char* error_kind) {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - p.started).count();
  const std::string code = std::to_string(out.status);
  head_->metrics().Add(
      "corral_service_requests_total",
      {{"service", p.service}, {"code", code}, {"class", code.substr(0, 1) + "xx"}}, 1);
  head_->metrics().Observe("corral_service_request_duration_seconds", {{"service", p.service}},
                           seconds);
  if (error_kind) {
    head_->metrics().Add("corral_service_errors_total",
                         {{"service", p.service}, {"kind", error_kind}}, 1);
  }
  {
    std::lock_guard lock(mu_);
    MeterLocked(p.service, -1);
    LoadMeter& m = meters_[p.service];
    // The latest kLatencyKept of the interval, in a ring: a median needs no more.
    if (m.latencies_ms.size() < kLatencyKept) {
      m.latencies_ms.push_back(seconds * 1000);
    } else {
      m.latencies_ms[m.answered % kLatencyKept] = seconds * 1000;
    }
    ++m.answered;
    traffic_[p.service].Record(std::chrono::steady_clock::now(), seconds * 1000, out.status);
  }
  p.respond(std::move(out));
}

std::map<std::string, ServiceTraffic> ServiceProxy::Traffic() {
  std::lock_guard lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  std::map<std::string, ServiceTraffic> out;
  for (const auto& [name, window] : traffic_) out[name] = window.Summary(now);
  for (const auto& [name, m] : meters_) {
    if (m.count > 0) out[name].in_flight = m.count;
  }
  return out;
}

void ServiceProxy::MeterLocked(const std::string& service, int delta) {
  const auto now = std::chrono::steady_clock::now();
  LoadMeter& m = meters_[service];
  if (m.last != std::chrono::steady_clock::time_point{}) {
    m.area += m.count * std::chrono::duration<double>(now - m.last).count();
  }
  m.last = now;
  m.count += delta;
}

void ServiceProxy::ReportLoad() {
  std::map<std::string, ServiceLoad> load;
  {
    std::lock_guard lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (now - reported_ < options_.load_report_interval) return;
    const bool first = reported_ == std::chrono::steady_clock::time_point{};
    const double elapsed = std::chrono::duration<double>(now - reported_).count();
    reported_ = now;
    for (const auto& [name, pool] : pools_) meters_[name];  // an idle service reports 0 too
    for (auto it = meters_.begin(); it != meters_.end();) {
      MeterLocked(it->first, 0);  // its integral up to now
      LoadMeter& m = it->second;
      if (!first) load[it->first] = ServiceLoad{m.area / elapsed, ProxyMedian(m.latencies_ms)};
      m.area = 0;
      m.latencies_ms.clear();
      m.answered = 0;
      head_->metrics().Set("corral_service_requests_in_flight", {{"service", it->first}},
                           it->second.count);
      it = it->second.count == 0 && !pools_.count(it->first) ? meters_.erase(it) : std::next(it);
    }
    for (auto it = traffic_.begin(); it != traffic_.end();) {
      it = it->second.Empty(now) && !pools_.count(it->first) ? traffic_.erase(it) : std::next(it);
    }
  }
  if (load.empty()) return;
  head_->Run(head_->tokens().admin, head::ReportServiceLoad{std::move(load)},
             [](Result<int32_t>) {});
}

void ServiceProxy::RetryWaiting() {
  std::vector<Pending> go, expired;
  std::map<std::string, std::string> why;
  {
    std::lock_guard lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    std::deque<Pending> keep;
    for (Pending& p : waiting_) {
      if (!PickLocked(p.service).empty()) {
        go.push_back(std::move(p));
      } else if (now >= p.deadline) {
        auto m = missing_.find(p.service);
        why[p.service] = m != missing_.end() ? m->second
                                             : "its replicas run but none answers its health "
                                               "check with 2xx yet";
        expired.push_back(std::move(p));
      } else {
        keep.push_back(std::move(p));
      }
    }
    waiting_ = std::move(keep);
  }
  for (Pending& p : go) Dispatch(std::move(p));
  for (Pending& p : expired) {
    const auto waited =
        std::chrono::duration_cast<std::chrono::milliseconds>(p.deadline - p.started).count();
    Finish(p,
           net::JsonError(503, "unavailable",
                          "service '" + p.service + "' has no ready replica after " +
                              std::to_string(waited) + " ms: " + why[p.service]),
           "no_ready_replica");
  }
}

void ServiceProxy::ProbeLoop() {
  while (true) {
    {
      std::unique_lock lock(mu_);
      if (wake_.wait_for(lock, options_.probe_interval, [this] { return stopping_; })) return;
    }
    head_->Run(head_->tokens().admin, head::ListServices{},
               [this](Result<std::vector<head::ServiceView>> views) {
                 if (views.ok()) Refresh(*views);
                 RetryWaiting();
               });
    ReportLoad();
  }
}

void ServiceProxy::ReportDrained(const std::vector<JobId>& jobs) {
  for (JobId job : jobs) {
    head_->Run(head_->tokens().admin, head::ReportReplicaDrained{job}, [](Result<Job>) {});
  }
}

void ServiceProxy::Refresh(const std::vector<head::ServiceView>& views) {
  std::vector<std::tuple<std::string, std::string, Probe>> to_probe;
  std::vector<JobId> drained;
  {
    std::lock_guard lock(mu_);
    std::map<std::string, std::map<std::string, Replica>> next;
    missing_.clear();
    for (const head::ServiceView& v : views) {
      const std::string& name = v.service.spec.name;
      auto& pool = next[name];
      auto old = pools_.find(name);
      int32_t ready = 0;
      for (const head::ServiceReplica& r : v.replicas) {
        if (!r.running || r.port <= 0) continue;  // pending, starting, or being stopped
        const Replica* kept = nullptr;
        if (old != pools_.end()) {
          if (auto k = old->second.find(r.run_id); k != old->second.end()) kept = &k->second;
        }
        Replica& entry = pool[r.run_id] =
            kept ? *kept
                 : Replica{r.job, ReplicaUrl(r), v.service.spec.health_path,
                           LivenessPath(v.service.spec)};
        entry.core_ready = r.ready;
        entry.draining = r.draining;
        if (entry.draining && entry.in_flight == 0) drained.push_back(entry.job);
        ready += entry.ready && !entry.draining ? 1 : 0;
      }
      if (pool.empty()) {
        missing_[name] =
            !v.note.empty() ? v.note
            : v.replicas.empty()
                ? (v.service.desired == 0 ? "it is scaled to zero" : "it has no replica")
                : std::to_string(v.replicas.size()) + " replicas waiting to start";
      }
      head_->metrics().Set("corral_service_replicas_ready", {{"service", name}}, ready);
      head_->metrics().Set("corral_service_replicas_desired", {{"service", name}},
                           v.service.desired);
    }
    pools_ = std::move(next);
    for (auto& [name, pool] : pools_) {
      for (auto& [run, r] : pool) {
        const bool one_path = r.live == r.health;
        if (!r.probing) {
          r.probing = true;
          to_probe.emplace_back(name, run, one_path ? Probe::kBoth : Probe::kReady);
        }
        if (!one_path && !r.live_probing) {
          r.live_probing = true;
          to_probe.emplace_back(name, run, Probe::kLive);
        }
      }
    }
  }
  ReportDrained(drained);
  SendProbes(to_probe);
}

void ServiceProxy::SendProbes(
    const std::vector<std::tuple<std::string, std::string, Probe>>& to_probe) {
  for (const auto& [name, run, probe] : to_probe) {
    std::string url, path;
    {
      std::lock_guard lock(mu_);
      const Replica& r = pools_[name][run];
      url = r.base_url;
      path = probe == Probe::kLive ? r.live : r.health;
    }
    client_.Request(url, "", "GET", path, options_.probe_timeout,
                    [this, name, run, probe](Result<net::HttpResponse> a) {
                      OnProbe(name, run, probe, a.ok() && a->status / 100 == 2);
                    });
  }
}

void ServiceProxy::OnProbe(const std::string& service, const std::string& run, Probe probe,
                           bool ok) {
  bool became_ready = false;
  JobId replace = 0, now_ready = 0;
  std::string live;
  {
    std::lock_guard lock(mu_);
    auto pool = pools_.find(service);
    if (pool == pools_.end()) return;
    auto it = pool->second.find(run);
    if (it == pool->second.end()) return;
    Replica& r = it->second;
    if (probe != Probe::kLive) {  // readiness
      r.probing = false;
      became_ready = ok && !r.ready;
      r.ready = ok;
      if (ok && !r.core_ready) now_ready = r.job;
    }
    if (probe != Probe::kReady) {  // liveness
      if (probe == Probe::kLive) r.live_probing = false;
      r.failures = ok ? 0 : r.failures + 1;
      r.ever_live = r.ever_live || ok;
      if (r.ever_live && r.failures >= kLivenessFailures && !r.replacing) {
        r.replacing = true;
        replace = r.job;
        live = r.live;
      }
    }
  }
  if (replace != 0) {
    head_->Run(
        head_->tokens().admin,
        head::ReplaceReplica{replace, "liveness: GET " + live + " failed " +
                                          std::to_string(kLivenessFailures) + " times in a row"},
        [](Result<Job>) {});
  }
  if (now_ready != 0) {
    head_->Run(head_->tokens().admin, head::ReportReplicaReady{now_ready}, [](Result<Job>) {});
  }
  if (became_ready) RetryWaiting();
}

}  // namespace corral::api
