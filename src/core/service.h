// Services (docs/services.md): long-running inference endpoints. A service is a job template
// kept alive as `desired` replicas, each an ordinary job the head's core submits and owns
// (JobSpec::service names the service), so that scheduling, agents, logs and exec work for
// replicas unchanged. The head proxies http(s)://HEAD/v/NAME/... to its ready replicas.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/codec.h"
#include "core/job.h"
#include "core/status.h"
#include "core/time.h"

namespace corral {

// The autoscaler's settings (docs/services.md, "Autoscaling"). Defaults are Ray Serve's
// (AutoscalingConfig: target_ongoing_requests 2, upscale_delay_s 30, downscale_delay_s 600).
struct ServiceAutoscaling {
  double target_in_flight = 2;                       // requests in flight per replica it aims at
  DurationMs scale_up_delay_ms = 30 * kSecond;       // load above target this long: scale up
  DurationMs scale_down_delay_ms = 10 * kMinute;     // load below target this long: scale down
  DurationMs scale_to_zero_after_ms = 10 * kMinute;  // min_replicas 0: no request this long
  // The median latency through the head's proxy it aims at (0: latency is no input). Each
  // sample's median over the target wants replicas in proportion, as in-flight load does.
  DurationMs target_latency_ms = 0;
  // Knative's panic mode (KPA defaults: 10% of its 60 s stable window, 200%): a mean load over
  // the last panic_window of at least panic_threshold_pct% of what the replicas take at the
  // target scales up at once.
  DurationMs panic_window_ms = 6 * kSecond;
  int32_t panic_threshold_pct = 200;
  bool operator==(const ServiceAutoscaling&) const = default;
};

// What the head's proxy measured of a service over one report's interval: the autoscaler's
// input.
struct ServiceLoad {
  double in_flight = 0;  // requests in flight on average (to its replicas, and held for one)
  // The median latency of the requests answered in the interval (ms); none answered: nothing.
  std::optional<double> median_latency_ms;
  bool operator==(const ServiceLoad&) const = default;
};

// The default of `wake_timeout` (Knative's activator holds a request for a cold start as long).
constexpr DurationMs kDefaultWakeTimeout = 60 * kSecond;

struct ServiceSpec {
  std::string name;  // [a-z0-9-], 1..40, starts with a letter: it is a URL path segment
  std::string owner;
  JobSpec job;  // the replica template: command, env, resources, queue
  int32_t min_replicas = 1;
  int32_t max_replicas = 1;  // >= min_replicas
  // The port every replica listens on (PORT and CORRAL_PORT in its environment); 0: the head
  // picks a free port per replica on its node (the run's master port).
  int32_t port = 0;
  std::string health_path = "/";  // readiness: GET answers 2xx
  std::string live_path;          // liveness: GET answers 2xx; empty: the health path
  bool any_user = false;          // any authenticated user may call it; else owner and admins
  // How long a replica leaving (an update, a scale-down, the service's removal) may finish the
  // requests it has in flight, after the head's proxy stopped sending it new ones.
  DurationMs drain_timeout_ms = 30 * kSecond;
  // How long the head's proxy holds a request for lack of a ready replica (the service at zero
  // and waking, or its replicas starting) before it answers 503 with the reason: a model's cold
  // start.
  DurationMs wake_timeout_ms = kDefaultWakeTimeout;
  ServiceAutoscaling autoscaling;  // used where Autoscaled()
  bool operator==(const ServiceSpec&) const = default;
};

// Whether the autoscaler sets its desired replicas: it has a range to move in (min < max), or
// may scale to zero (min 0).
bool Autoscaled(const ServiceSpec& s);
// The path a replica's liveness is probed on: `live_path`, or the health path.
const std::string& LivenessPath(const ServiceSpec& s);

// Who changed a service's desired replicas (head/change.h ServiceScaled).
enum class ScaleCause { kHand, kAutoscaler, kRequest };
const char* ScaleCauseName(ScaleCause c);
bool ParseScaleCause(const std::string& text, ScaleCause* out);

// An update in progress: replicas of the new version replace the old one at a time.
struct ServiceRollout {
  ServiceSpec from;  // the template it replaces, restored by a rollback
  int32_t from_version = 0;
  TimeMs started_at = 0;
  DurationMs ready_timeout_ms = 0;  // a new replica not ready this long after it was submitted
                                    // rolls the update back
  bool operator==(const ServiceRollout&) const = default;
};

// The default of `corral serve update --ready-timeout`: a model server loads its weights first.
constexpr DurationMs kDefaultReadyTimeout = 5 * kMinute;

struct Service {
  ServiceSpec spec;
  int32_t desired = 1;     // replicas to keep alive, within [min, max]
  int32_t version = 1;     // the version of `spec`; each replica's job names the one it runs
  int32_t generation = 1;  // the highest version it ever had: an update takes the next one
  TimeMs created_at = 0;
  std::optional<ServiceRollout> rollout;  // an update in progress
  std::string last_rollout;               // how the latest update ended, and why
  // Replicas that answered the head's readiness check once (the proxy reports it): an update
  // replaces an old replica only once a new one is.
  std::set<JobId> ready;
  // Replicas leaving: the proxy sends them no new request; each is stopped once it has none in
  // flight, or at its time (now + drain_timeout when it started leaving).
  std::map<JobId, TimeMs> draining;
  bool removing = false;  // removed: its replicas drain, then it is gone
  // Which version each replica runs, by job id (ids only grow): replicas from job id `first`
  // on run `version`, until the next entry. Before the first entry, version 1.
  struct Epoch {
    JobId first = 0;
    int32_t version = 1;
    bool operator==(const Epoch&) const = default;
  };
  std::vector<Epoch> epochs;
  int32_t VersionOf(JobId replica) const;
  bool operator==(const Service&) const = default;
};

// The typed changes of a service's rollout and replicas (head/change.h carries them); applied
// here, so that the live head and a recovered one hold the same service.
// `next_job`: the id the next job submitted will have (the first of the new version).
void StartRollout(Service& s, ServiceSpec spec, DurationMs ready_timeout, TimeMs at,
                  JobId next_job);
// Ends the update: kept, or rolled back (the old template and version restored).
void EndRollout(Service& s, bool rolled_back, const std::string& reason, JobId next_job);
enum class ReplicaMark { kReady, kDraining };
const char* ReplicaMarkName(ReplicaMark m);
bool ParseReplicaMark(const std::string& text, ReplicaMark* out);
void MarkReplica(Service& s, JobId job, ReplicaMark mark, TimeMs until);
// Forgets the marks of replicas that `live` says have ended (they are never reused).
template <typename Live>
void ForgetEndedReplicas(Service& s, Live live) {
  std::erase_if(s.ready, [&](JobId id) { return !live(id); });
  std::erase_if(s.draining, [&](const auto& d) { return !live(d.first); });
}

Json ToJson(const ServiceSpec& s);
Result<ServiceSpec> ServiceSpecFromJson(const Json& j);
Json ToJson(const Service& s);
Result<Service> ServiceFromJson(const Json& j);  // the stored form (the head wrote it)

// A duration as services' messages say it: "30s", "5m", "1m30s", "250ms".
std::string ServiceDurationText(DurationMs ms);

// A service as a user sends it (POST /v1/services): {"name", "min_replicas", "max_replicas"
// or "replicas", "port", "health", "any_user", "spec": a job spec as for submit}. Every field
// checked, the wrong one named; the owner is the caller's to set.
Result<ServiceSpec> ParseServiceSpec(const Json& body);

// A replica's job spec: the template, named for its service, with PORT and CORRAL_PORT when
// the port is fixed, never restarted by itself (the service replaces it), preemptible only
// above the minimum.
JobSpec ReplicaSpec(const ServiceSpec& s, bool above_minimum);

// An update of a service's replica template (`corral serve update`, POST
// /v1/services/NAME/update): the job-spec fields given replace the template's, the others
// stay.
struct ServiceTemplatePatch {
  JobSpec job;                   // parsed as for submit
  std::set<std::string> fields;  // the job-spec fields given (command, image, gpus, ...)
  DurationMs ready_timeout_ms = kDefaultReadyTimeout;
  // Or the service's settings to change, as given (ServiceSettingFields: replica counts,
  // the autoscaler's, the timeouts): they apply at once and replace no replica. Never both.
  Json settings = Json::object();
};
// The settings an update may change without replacing replicas, as ParseServiceSpec names them.
const std::set<std::string>& ServiceSettingFields();
// {"spec": {job-spec fields}, "ready_timeout": "5m"} or {settings...}: every field checked,
// the wrong one named.
Result<ServiceTemplatePatch> ParseServiceUpdate(const Json& body);
// `base` with the settings given (ServiceTemplatePatch::settings), checked against each other.
Result<ServiceSpec> PatchedSettings(const ServiceSpec& base, const Json& settings);
// The template with the patch's fields; the first that may not change names itself.
Result<JobSpec> PatchedTemplate(const JobSpec& base, const ServiceTemplatePatch& patch);

}  // namespace corral
