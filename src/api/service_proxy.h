// The stable address of a service (docs/services.md): the head answers
// http(s)://HEAD/v/NAME/REST by forwarding REST to one of the service's ready replicas, the one
// with the fewest requests in flight through this head (least outstanding requests), and
// relays its answer. Who may call is the service's rule (GetService answers only them).
//
// Readiness and liveness are probed from here, the head's shell, not by the agents: the head
// is the one that routes, so what it can reach is what counts, and it needs no new agent
// protocol. Every probe interval it lists the services (as an admin) and sends GET of each
// running replica's health path: a 2xx makes the replica ready, anything else takes it out of
// the pool at once. Liveness is GET of its live path (the health path unless the service
// names another, then a probe of its own): kLivenessFailures in a row of a replica whose live
// path answered 2xx once has the core stop and replace it (ReplaceReplica). A replica that
// never answered is left to start (a model loading its weights), and gets no traffic.
//
// The core decides which replicas serve; the proxy tells it what only the proxy sees: a
// replica answered its readiness check (ReportReplicaReady: a rolling update waits for it), and
// a draining replica (one leaving: no new request is sent to it) has no request in flight any
// more (ReportReplicaDrained: it may stop). Both are repeated until the core's view shows them,
// and the core takes a repeat as a no-op.
//
// A request with no ready replica waits up to its service's wake timeout (ServiceSpec::
// wake_timeout_ms) for one, then gets 503 with the reason; one to a service scaled to zero
// first asks the core for a replica (WakeService).
//
// The autoscaler's input is measured here: each service's requests in flight (sent to a
// replica, or held for one), averaged over time, reported to the core every
// `load_report_interval` (ReportServiceLoad). A request that fails to reach its replica (refused,
// reset) is tried once more on another ready replica when its method is idempotent.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "api/service_traffic.h"
#include "head/head.h"
#include "net/async_http_client.h"
#include "net/http.h"

namespace corral::api {

struct ServiceProxyOptions {
  std::chrono::milliseconds probe_interval{500};
  std::chrono::milliseconds probe_timeout{2000};
  std::chrono::milliseconds request_timeout{60'000};
  size_t max_waiting = 1000;  // requests held at once for lack of a ready replica
  std::chrono::milliseconds load_report_interval{1000};
};

class ServiceProxy {
 public:
  static constexpr int kLivenessFailures = 3;

  ServiceProxy(head::Head* head, ServiceProxyOptions options = {});
  ~ServiceProxy();  // stops the probes; requests in flight are dropped
  ServiceProxy(const ServiceProxy&) = delete;
  ServiceProxy& operator=(const ServiceProxy&) = delete;

  // Starts probing the services' replicas (the head process calls it once it leads). Without
  // it no replica becomes ready.
  void Start();
  // A request under /v/. Any thread; never blocks.
  void Handle(net::HttpRequest req, net::Responder respond);
  // Each service's traffic through this head over the last minute (service_traffic.h), by name;
  // a service with none has no entry. Any thread.
  std::map<std::string, ServiceTraffic> Traffic();

 private:
  struct Replica {
    JobId job = 0;
    std::string base_url;  // http://HOST:PORT
    std::string health;
    std::string live;  // the liveness path; the same as `health`: one probe answers both
    bool ready = false;
    bool ever_live = false;  // its live path answered 2xx once: it has started
    bool probing = false;
    bool live_probing = false;  // a liveness probe of its own (`live` differs) is out
    bool replacing = false;
    bool core_ready = false;  // the core knows it answered its readiness check
    bool draining = false;    // leaving: no new request
    int failures = 0;         // liveness probes failed in a row
    int in_flight = 0;
  };
  // What a probe asks: readiness, liveness, or both (one path for both).
  enum class Probe { kReady, kLive, kBoth };
  struct Pending {
    std::string service;
    std::string method;
    std::string target;  // what the replica is asked: the path after /v/NAME, and the query
    std::string body;
    net::Responder respond;
    std::chrono::steady_clock::time_point deadline;
    std::chrono::steady_clock::time_point started;
    int tries = 0;
  };
  // A service's requests in flight through this head over time: their count, and its
  // integral since the last report (request-seconds), for the autoscaler's mean; and the
  // latencies of the requests answered since (the latest kLatencyKept), for its median.
  struct LoadMeter {
    int count = 0;
    std::chrono::steady_clock::time_point last;
    double area = 0;
    std::vector<double> latencies_ms;
    size_t answered = 0;
  };
  static constexpr size_t kLatencyKept = 10000;

  void ProbeLoop();
  void Refresh(const std::vector<head::ServiceView>& views);
  // Sends the probes `to_probe` names: service, run, and what each asks.
  void SendProbes(const std::vector<std::tuple<std::string, std::string, Probe>>& to_probe);
  void OnProbe(const std::string& service, const std::string& run, Probe probe, bool ok);
  // Tells the core that these draining replicas have no request in flight.
  void ReportDrained(const std::vector<JobId>& jobs);
  // Forwards `p` to the ready replica with the fewest requests in flight, or holds it.
  void Dispatch(Pending p);
  void OnAnswer(Pending p, const std::string& run, Result<net::HttpResponse> answer);
  // Held requests whose service now has a ready replica, or whose wait is over.
  void RetryWaiting();
  // Answers `p` and counts it (its code, latency, and the end of its time in flight).
  void Finish(Pending& p, net::HttpResponse out, const char* error_kind);
  // REQUIRES: mu_ held. `service`'s requests in flight change by `delta`.
  void MeterLocked(const std::string& service, int delta);
  // Each service's mean requests in flight since the last report, to the core.
  void ReportLoad();
  // REQUIRES: mu_ held. The run of the ready replica of `service` with the fewest in flight.
  std::string PickLocked(const std::string& service);

  head::Head* const head_;
  const ServiceProxyOptions options_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;                                        // GUARDED_BY(mu_)
  std::map<std::string, std::map<std::string, Replica>> pools_;  // GUARDED_BY(mu_): service -> run
  std::map<std::string, std::string> missing_;      // GUARDED_BY(mu_): why a service has no replica
  std::deque<Pending> waiting_;                     // GUARDED_BY(mu_)
  std::map<std::string, size_t> turn_;              // GUARDED_BY(mu_): ties taken in turn
  std::map<std::string, LoadMeter> meters_;         // GUARDED_BY(mu_): by service
  std::map<std::string, TrafficWindow> traffic_;    // GUARDED_BY(mu_): by service
  std::chrono::steady_clock::time_point reported_;  // GUARDED_BY(mu_): the last load report
  std::thread prober_;
  // Last: destroyed first, so that no answer of a probe or request arrives after the rest.
  net::AsyncHttpClient client_;
};

}  // namespace corral::api
