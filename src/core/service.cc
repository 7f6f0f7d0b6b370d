#include "core/service.h"

#include <algorithm>
#include <set>

#include "core/spec.h"

namespace corral {
namespace {

constexpr int32_t kMaxServiceReplicas = 64;

Status ServiceFieldError(const std::string& field, const std::string& why) {
  return InvalidArgument("field '" + field + "': " + why);
}

bool ValidServiceName(const std::string& n) {
  if (n.empty() || n.size() > 40 || !(n[0] >= 'a' && n[0] <= 'z')) return false;
  return n.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") == std::string::npos;
}

Result<int32_t> ServiceInt(const Json& body, const std::string& field, int32_t lo, int32_t hi) {
  const Json& v = body.at(field);
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi) {
    return ServiceFieldError(field, "want an integer in [" + std::to_string(lo) + ", " +
                                        std::to_string(hi) + "], got " + v.dump());
  }
  return v.get<int32_t>();
}

// What a replica's template may not be: a replica is one process group on one node that runs
// until stopped.
Status CheckReplicaTemplate(const JobSpec& j) {
  if (j.replicas != 1) {
    return ServiceFieldError("spec.replicas",
                             "a replica is one node's process group; set min_replicas and "
                             "max_replicas of the service instead");
  }
  if (!j.array.empty()) return ServiceFieldError("spec.array", "a service has no array");
  if (j.interactive || j.notebook) {
    return ServiceFieldError("spec.kind", "a service's replicas are batch processes");
  }
  if (j.batch) return ServiceFieldError("spec.batch", "a service runs its command, not a script");
  if (!j.dependencies.empty()) {
    return ServiceFieldError("spec.dependency", "a service's replicas wait for nothing");
  }
  if (j.time_limit_ms != 0) {
    return ServiceFieldError("spec.time_limit", "a service runs until removed");
  }
  if (j.command.empty()) return ServiceFieldError("spec.command", "want a command to run");
  return Status::Ok();
}

Status ParseReplicaCounts(const Json& body, ServiceSpec* s) {
  const bool fixed = body.contains("replicas");
  if (fixed && (body.contains("min_replicas") || body.contains("max_replicas"))) {
    return ServiceFieldError("replicas", "give either replicas or min_replicas/max_replicas");
  }
  if (fixed) {
    auto n = ServiceInt(body, "replicas", 1, kMaxServiceReplicas);
    if (!n.ok()) return n.status();
    s->min_replicas = s->max_replicas = *n;
    return Status::Ok();
  }
  if (body.contains("min_replicas")) {
    auto n = ServiceInt(body, "min_replicas", 0, kMaxServiceReplicas);
    if (!n.ok()) return n.status();
    s->min_replicas = *n;
  }
  s->max_replicas = std::max(s->min_replicas, 1);
  if (body.contains("max_replicas")) {
    auto n = ServiceInt(body, "max_replicas", 1, kMaxServiceReplicas);
    if (!n.ok()) return n.status();
    s->max_replicas = *n;
  }
  if (s->max_replicas < s->min_replicas) {
    return ServiceFieldError("max_replicas", std::to_string(s->max_replicas) +
                                                 " is below min_replicas " +
                                                 std::to_string(s->min_replicas));
  }
  return Status::Ok();
}

// A duration field ("30s", "5m"), within [0, most].
Result<DurationMs> ServiceDuration(const Json& v, const std::string& field, DurationMs most) {
  if (!v.is_string()) return ServiceFieldError(field, "want a duration such as \"30s\"");
  auto d = ParseDuration(field, v.get<std::string>());
  if (!d.ok()) return d.status();
  if (*d < 0 || *d > most) {
    return ServiceFieldError(
        field, "want at most " + FormatDuration(most) + ", got " + v.get<std::string>());
  }
  return *d;
}

// A latency target: "250ms" (whole milliseconds), or a duration as the others ("2s"); at most
// 10m, 0 none.
Result<DurationMs> ServiceLatency(const Json& v) {
  const std::string text = v.is_string() ? v.get<std::string>() : "";
  const bool ms = text.size() > 2 && text.compare(text.size() - 2, 2, "ms") == 0 &&
                  text.find_first_not_of("0123456789") == text.size() - 2;
  if (!ms) return ServiceDuration(v, "target_latency", 10 * kMinute);
  const DurationMs d =
      text.size() > 11 ? 10 * kMinute + 1 : std::stoll(text.substr(0, text.size() - 2));
  if (d > 10 * kMinute) {
    return ServiceFieldError("target_latency", "want at most 10m, got " + text);
  }
  return d;
}

// The autoscaler's latency target (at most 10m; 0: none) and its panic window (1s to 1h) and
// threshold (Knative's bounds: 110% to 1000%), where given.
Status ParseLatencyAndPanic(const Json& body, ServiceAutoscaling& a) {
  if (body.contains("target_latency")) {
    auto d = ServiceLatency(body.at("target_latency"));
    if (!d.ok()) return d.status();
    a.target_latency_ms = *d;
  }
  if (body.contains("panic_window")) {
    auto d = ServiceDuration(body.at("panic_window"), "panic_window", kHour);
    if (!d.ok()) return d.status();
    if (*d < kSecond) {
      return ServiceFieldError("panic_window",
                               "want at least 1s (the proxy reports every "
                               "second), got " +
                                   body.at("panic_window").dump());
    }
    a.panic_window_ms = *d;
  }
  if (body.contains("panic_threshold_pct")) {
    auto pct = ServiceInt(body, "panic_threshold_pct", 110, 1000);
    if (!pct.ok()) return pct.status();
    a.panic_threshold_pct = *pct;
  }
  return Status::Ok();
}

// The autoscaler's fields: target_in_flight (a number > 0), scale_up_delay, scale_down_delay
// and scale_to_zero_after (durations; the last only with min_replicas 0, and by default the
// scale-down delay).
Status ParseAutoscaling(const Json& body, ServiceSpec* s) {
  ServiceAutoscaling& a = s->autoscaling;
  if (body.contains("target_in_flight")) {
    const Json& v = body.at("target_in_flight");
    if (!v.is_number() || !(v.get<double>() > 0) || v.get<double>() > 1000) {
      return ServiceFieldError("target_in_flight",
                               "want a number of requests in flight per replica in (0, 1000], "
                               "got " +
                                   v.dump());
    }
    a.target_in_flight = v.get<double>();
  }
  if (body.contains("scale_up_delay")) {
    auto d = ServiceDuration(body.at("scale_up_delay"), "scale_up_delay", kHour);
    if (!d.ok()) return d.status();
    a.scale_up_delay_ms = *d;
  }
  if (body.contains("scale_down_delay")) {
    auto d = ServiceDuration(body.at("scale_down_delay"), "scale_down_delay", kHour);
    if (!d.ok()) return d.status();
    a.scale_down_delay_ms = *d;
  }
  a.scale_to_zero_after_ms = a.scale_down_delay_ms;
  if (body.contains("scale_to_zero_after")) {
    if (s->min_replicas != 0) {
      return ServiceFieldError("scale_to_zero_after",
                               "a service scales to zero only with min_replicas 0, it has " +
                                   std::to_string(s->min_replicas));
    }
    auto d = ServiceDuration(body.at("scale_to_zero_after"), "scale_to_zero_after", kHour);
    if (!d.ok()) return d.status();
    if (*d < kSecond) {
      return ServiceFieldError("scale_to_zero_after",
                               "want at least 1s, got " + body.at("scale_to_zero_after").dump());
    }
    a.scale_to_zero_after_ms = *d;
  }
  return ParseLatencyAndPanic(body, a);
}

// drain_timeout (at most 10m) and wake_timeout (1s to 10m), where given.
Status ParseServiceTimeouts(const Json& body, ServiceSpec* s) {
  if (body.contains("drain_timeout")) {
    auto d = ServiceDuration(body.at("drain_timeout"), "drain_timeout", 10 * kMinute);
    if (!d.ok()) return d.status();
    s->drain_timeout_ms = *d;
  }
  if (body.contains("wake_timeout")) {
    auto d = ServiceDuration(body.at("wake_timeout"), "wake_timeout", 10 * kMinute);
    if (!d.ok()) return d.status();
    if (*d < kSecond) {
      return ServiceFieldError("wake_timeout",
                               "want at least 1s (a request is held this long for a ready "
                               "replica), got " +
                                   body.at("wake_timeout").dump());
    }
    s->wake_timeout_ms = *d;
  }
  return Status::Ok();
}

}  // namespace

const std::set<std::string>& ServiceSettingFields() {
  static const std::set<std::string> kFields = {
      "replicas",         "min_replicas",   "max_replicas",
      "target_in_flight", "scale_up_delay", "scale_down_delay",
      "drain_timeout",    "wake_timeout",   "scale_to_zero_after",
      "target_latency",   "panic_window",   "panic_threshold_pct"};
  return kFields;
}

const std::string& LivenessPath(const ServiceSpec& s) {
  return s.live_path.empty() ? s.health_path : s.live_path;
}

bool Autoscaled(const ServiceSpec& s) {
  return s.min_replicas < s.max_replicas || s.min_replicas == 0;
}

const char* ScaleCauseName(ScaleCause c) {
  switch (c) {
    case ScaleCause::kHand:
      return "hand";
    case ScaleCause::kAutoscaler:
      return "autoscaler";
    case ScaleCause::kRequest:
      return "request";
  }
  return "hand";
}

bool ParseScaleCause(const std::string& text, ScaleCause* out) {
  for (ScaleCause c : {ScaleCause::kHand, ScaleCause::kAutoscaler, ScaleCause::kRequest}) {
    if (text == ScaleCauseName(c)) {
      *out = c;
      return true;
    }
  }
  return false;
}

Json ToJson(const ServiceSpec& p) {
  Json j{{"name", p.name},
         {"owner", p.owner},
         {"spec", ToJson(p.job)},
         {"min_replicas", p.min_replicas},
         {"max_replicas", p.max_replicas},
         {"port", p.port},
         {"health", p.health_path},
         {"any_user", p.any_user},
         {"drain_timeout_ms", p.drain_timeout_ms},
         {"wake_timeout_ms", p.wake_timeout_ms},
         {"target_in_flight", p.autoscaling.target_in_flight},
         {"scale_up_delay_ms", p.autoscaling.scale_up_delay_ms},
         {"scale_down_delay_ms", p.autoscaling.scale_down_delay_ms},
         {"scale_to_zero_after_ms", p.autoscaling.scale_to_zero_after_ms}};
  // Written only where set, so that a service's stored form without them reads back the same.
  if (!p.live_path.empty()) j["live"] = p.live_path;
  const ServiceAutoscaling defaults;
  if (p.autoscaling.target_latency_ms != defaults.target_latency_ms) {
    j["target_latency_ms"] = p.autoscaling.target_latency_ms;
  }
  if (p.autoscaling.panic_window_ms != defaults.panic_window_ms) {
    j["panic_window_ms"] = p.autoscaling.panic_window_ms;
  }
  if (p.autoscaling.panic_threshold_pct != defaults.panic_threshold_pct) {
    j["panic_threshold_pct"] = p.autoscaling.panic_threshold_pct;
  }
  return j;
}

Result<ServiceSpec> ServiceSpecFromJson(const Json& j) {
  auto job = JobSpecFromJson(j.value("spec", Json::object()));
  if (!job.ok()) return job.status();
  ServiceSpec p;
  p.name = j.value("name", "");
  p.owner = j.value("owner", "");
  p.job = std::move(*job);
  p.min_replicas = j.value("min_replicas", 1);
  p.max_replicas = j.value("max_replicas", 1);
  p.port = j.value("port", 0);
  p.health_path = j.value("health", "/");
  p.any_user = j.value("any_user", false);
  p.drain_timeout_ms = j.value("drain_timeout_ms", 30 * kSecond);
  p.wake_timeout_ms = j.value("wake_timeout_ms", kDefaultWakeTimeout);
  const ServiceAutoscaling defaults;
  p.autoscaling.target_in_flight = j.value("target_in_flight", defaults.target_in_flight);
  p.autoscaling.scale_up_delay_ms = j.value("scale_up_delay_ms", defaults.scale_up_delay_ms);
  p.autoscaling.scale_down_delay_ms = j.value("scale_down_delay_ms", defaults.scale_down_delay_ms);
  p.autoscaling.scale_to_zero_after_ms =
      j.value("scale_to_zero_after_ms", defaults.scale_to_zero_after_ms);
  p.live_path = j.value("live", "");
  p.autoscaling.target_latency_ms = j.value("target_latency_ms", defaults.target_latency_ms);
  p.autoscaling.panic_window_ms = j.value("panic_window_ms", defaults.panic_window_ms);
  p.autoscaling.panic_threshold_pct = j.value("panic_threshold_pct", defaults.panic_threshold_pct);
  return p;
}

Json ToJson(const Service& s) {
  Json j = ToJson(s.spec);
  j["desired"] = s.desired;
  j["version"] = s.version;
  j["generation"] = s.generation;
  j["created_at"] = s.created_at;
  if (s.rollout) {
    j["rollout"] = Json{{"from", ToJson(s.rollout->from)},
                        {"from_version", s.rollout->from_version},
                        {"started_at", s.rollout->started_at},
                        {"ready_timeout_ms", s.rollout->ready_timeout_ms}};
  }
  if (!s.last_rollout.empty()) j["last_rollout"] = s.last_rollout;
  j["ready"] = Json(std::vector<JobId>(s.ready.begin(), s.ready.end()));
  Json draining = Json::array();
  for (const auto& [job, until] : s.draining)
    draining.push_back(Json{{"job", job}, {"until", until}});
  j["draining"] = std::move(draining);
  if (s.removing) j["removing"] = true;
  Json epochs = Json::array();
  for (const Service::Epoch& e : s.epochs)
    epochs.push_back(Json{{"first", e.first}, {"version", e.version}});
  j["epochs"] = std::move(epochs);
  return j;
}

Result<Service> ServiceFromJson(const Json& j) {
  if (!j.is_object()) return InvalidArgument("service: want an object");
  auto spec = ServiceSpecFromJson(j);
  if (!spec.ok()) return spec.status();
  Service s;
  s.spec = std::move(*spec);
  s.desired = j.value("desired", 1);
  s.version = j.value("version", 1);
  s.generation = j.value("generation", s.version);
  s.created_at = j.value("created_at", TimeMs{0});
  if (auto r = j.find("rollout"); r != j.end() && r->is_object()) {
    auto from = ServiceSpecFromJson(r->value("from", Json::object()));
    if (!from.ok()) return from.status();
    s.rollout = ServiceRollout{std::move(*from), r->value("from_version", 1),
                               r->value("started_at", TimeMs{0}),
                               r->value("ready_timeout_ms", kDefaultReadyTimeout)};
  }
  s.last_rollout = j.value("last_rollout", "");
  for (const Json& id : j.value("ready", Json::array())) s.ready.insert(id.get<JobId>());
  for (const Json& d : j.value("draining", Json::array())) {
    s.draining[d.value("job", JobId{0})] = d.value("until", TimeMs{0});
  }
  s.removing = j.value("removing", false);
  for (const Json& e : j.value("epochs", Json::array())) {
    s.epochs.push_back({e.value("first", JobId{0}), e.value("version", 1)});
  }
  return s;
}

int32_t Service::VersionOf(JobId replica) const {
  int32_t v = 1;
  for (const Epoch& e : epochs) {
    if (e.first > replica) break;
    v = e.version;
  }
  return v;
}

std::string ServiceDurationText(DurationMs ms) {
  if (ms % kSecond != 0) return std::to_string(ms) + "ms";
  const DurationMs s = ms / kSecond;
  std::string out;
  if (s >= 3600) out += std::to_string(s / 3600) + "h";
  if (s % 3600 >= 60) out += std::to_string(s % 3600 / 60) + "m";
  if (s % 60 != 0 || s == 0) out += std::to_string(s % 60) + "s";
  return out;
}

void StartRollout(Service& s, ServiceSpec spec, DurationMs ready_timeout, TimeMs at,
                  JobId next_job) {
  s.rollout = ServiceRollout{s.spec, s.version, at, ready_timeout};
  s.spec = std::move(spec);
  s.version = ++s.generation;
  s.epochs.push_back({next_job, s.version});
}

void EndRollout(Service& s, bool rolled_back, const std::string& reason, JobId next_job) {
  if (!s.rollout) return;
  if (rolled_back) {
    s.spec = s.rollout->from;
    s.version = s.rollout->from_version;
    s.epochs.push_back({next_job, s.version});
  }
  s.rollout.reset();
  s.last_rollout = reason;
}

const char* ReplicaMarkName(ReplicaMark m) {
  return m == ReplicaMark::kReady ? "ready" : "draining";
}

bool ParseReplicaMark(const std::string& text, ReplicaMark* out) {
  for (ReplicaMark m : {ReplicaMark::kReady, ReplicaMark::kDraining}) {
    if (text == ReplicaMarkName(m)) {
      *out = m;
      return true;
    }
  }
  return false;
}

void MarkReplica(Service& s, JobId job, ReplicaMark mark, TimeMs until) {
  if (mark == ReplicaMark::kReady) {
    s.ready.insert(job);
  } else {
    s.draining[job] = until;
  }
}

Result<ServiceSpec> ParseServiceSpec(const Json& body) {
  if (!body.is_object()) return InvalidArgument("service: want a JSON/YAML object");
  static const std::set<std::string> kKnown = {"name",
                                               "replicas",
                                               "min_replicas",
                                               "max_replicas",
                                               "port",
                                               "health",
                                               "live",
                                               "any_user",
                                               "drain_timeout",
                                               "wake_timeout",
                                               "spec",
                                               "target_in_flight",
                                               "scale_up_delay",
                                               "scale_down_delay",
                                               "scale_to_zero_after",
                                               "target_latency",
                                               "panic_window",
                                               "panic_threshold_pct"};
  for (auto it = body.begin(); it != body.end(); ++it) {
    if (!kKnown.count(it.key())) {
      return InvalidArgument("unknown field '" + it.key() +
                             "'; known fields: name, replicas, min_replicas, max_replicas, "
                             "port, health, live, any_user, drain_timeout, wake_timeout, "
                             "target_in_flight, scale_up_delay, scale_down_delay, "
                             "scale_to_zero_after, target_latency, panic_window, "
                             "panic_threshold_pct, spec");
    }
  }
  ServiceSpec s;
  const Json name = body.value("name", Json());
  if (!name.is_string() || !ValidServiceName(name.get<std::string>())) {
    return ServiceFieldError(
        "name", "want 1 to 40 of a-z, 0-9 and '-', starting with a letter, got " + name.dump());
  }
  s.name = name.get<std::string>();
  CORRAL_RETURN_IF_ERROR(ParseReplicaCounts(body, &s));
  CORRAL_RETURN_IF_ERROR(ParseAutoscaling(body, &s));
  if (!body.contains("port")) return ServiceFieldError("port", "want the port replicas listen on");
  auto port = ServiceInt(body, "port", 0, 65535);
  if (!port.ok()) return port.status();
  s.port = *port;
  for (const char* field : {"health", "live"}) {
    if (!body.contains(field)) continue;
    const Json& h = body.at(field);
    if (!h.is_string() || h.get<std::string>().empty() || h.get<std::string>()[0] != '/' ||
        h.get<std::string>().find_first_of(" \r\n") != std::string::npos) {
      return ServiceFieldError(field, "want an HTTP path starting with '/', got " + h.dump());
    }
    (std::string(field) == "health" ? s.health_path : s.live_path) = h.get<std::string>();
  }
  if (body.contains("any_user")) {
    if (!body.at("any_user").is_boolean()) return ServiceFieldError("any_user", "want a boolean");
    s.any_user = body.at("any_user").get<bool>();
  }
  CORRAL_RETURN_IF_ERROR(ParseServiceTimeouts(body, &s));
  auto job = ParseJobSpec(body.value("spec", Json()));
  if (!job.ok()) return InvalidArgument("field 'spec': " + job.status().message());
  s.job = std::move(*job);
  CORRAL_RETURN_IF_ERROR(CheckReplicaTemplate(s.job));
  if (s.job.name.empty()) s.job.name = s.name;
  return s;
}

JobSpec ReplicaSpec(const ServiceSpec& s, bool above_minimum) {
  JobSpec j = s.job;
  j.service = s.name;
  j.max_restarts = 0;
  j.preemptible = above_minimum;
  if (s.port > 0) {
    j.env["PORT"] = std::to_string(s.port);
    j.env["CORRAL_PORT"] = std::to_string(s.port);
  }
  return j;
}

}  // namespace corral

namespace corral {
namespace {

// The job-spec fields an update may change, each with what it copies from the patch.
using TemplateField = void (*)(JobSpec& to, const JobSpec& from);
const std::map<std::string, TemplateField>& UpdatableFields() {
  static const std::map<std::string, TemplateField> kFields = {
      {"command", [](JobSpec& t, const JobSpec& f) { t.command = f.command; }},
      {"env", [](JobSpec& t, const JobSpec& f) { t.env = f.env; }},
      {"workdir", [](JobSpec& t, const JobSpec& f) { t.workdir = f.workdir; }},
      {"queue", [](JobSpec& t, const JobSpec& f) { t.queue = f.queue; }},
      {"priority", [](JobSpec& t, const JobSpec& f) { t.priority = f.priority; }},
      {"gpu_model", [](JobSpec& t, const JobSpec& f) { t.gpu_model = f.gpu_model; }},
      {"node_labels", [](JobSpec& t, const JobSpec& f) { t.node_labels = f.node_labels; }},
      {"gpus",
       [](JobSpec& t, const JobSpec& f) {
         t.per_replica.gpu_milli = f.per_replica.gpu_milli;
         t.per_replica.gpu_memory_mb = f.per_replica.gpu_memory_mb;
         t.per_replica.gpu_isolation = f.per_replica.gpu_isolation;
       }},
      {"gpu_memory",
       [](JobSpec& t, const JobSpec& f) {
         t.per_replica.gpu_memory_mb = f.per_replica.gpu_memory_mb;
       }},
      {"gpu_isolation",
       [](JobSpec& t, const JobSpec& f) {
         t.per_replica.gpu_isolation = f.per_replica.gpu_isolation;
       }},
      {"cpus",
       [](JobSpec& t, const JobSpec& f) { t.per_replica.cpu_milli = f.per_replica.cpu_milli; }},
      {"memory",
       [](JobSpec& t, const JobSpec& f) { t.per_replica.memory_mb = f.per_replica.memory_mb; }},
      {"image", [](JobSpec& t, const JobSpec& f) { t.container.image = f.container.image; }},
      {"mounts", [](JobSpec& t, const JobSpec& f) { t.container.mounts = f.container.mounts; }},
      {"container_workdir",
       [](JobSpec& t, const JobSpec& f) { t.container.workdir = f.container.workdir; }},
      {"container_writable",
       [](JobSpec& t, const JobSpec& f) { t.container.writable = f.container.writable; }},
      {"container_mount_home",
       [](JobSpec& t, const JobSpec& f) { t.container.mount_home = f.container.mount_home; }},
  };
  return kFields;
}

}  // namespace

Result<ServiceSpec> PatchedSettings(const ServiceSpec& base, const Json& settings) {
  ServiceSpec s = base;
  if (settings.contains("replicas")) {
    if (settings.contains("min_replicas") || settings.contains("max_replicas")) {
      return ServiceFieldError("replicas", "give either replicas or min_replicas/max_replicas");
    }
    auto n = ServiceInt(settings, "replicas", 1, kMaxServiceReplicas);
    if (!n.ok()) return n.status();
    s.min_replicas = s.max_replicas = *n;
  }
  if (settings.contains("min_replicas")) {
    auto n = ServiceInt(settings, "min_replicas", 0, kMaxServiceReplicas);
    if (!n.ok()) return n.status();
    s.min_replicas = *n;
  }
  if (settings.contains("max_replicas")) {
    auto n = ServiceInt(settings, "max_replicas", 1, kMaxServiceReplicas);
    if (!n.ok()) return n.status();
    s.max_replicas = *n;
  }
  if (s.max_replicas < s.min_replicas) {
    return ServiceFieldError(settings.contains("max_replicas") ? "max_replicas" : "min_replicas",
                             "max_replicas " + std::to_string(s.max_replicas) +
                                 " would be below min_replicas " + std::to_string(s.min_replicas));
  }
  // The idle time to zero keeps its value unless given (ParseAutoscaling would take the
  // down-delay's).
  const DurationMs to_zero = s.autoscaling.scale_to_zero_after_ms;
  CORRAL_RETURN_IF_ERROR(ParseAutoscaling(settings, &s));
  if (!settings.contains("scale_to_zero_after")) s.autoscaling.scale_to_zero_after_ms = to_zero;
  CORRAL_RETURN_IF_ERROR(ParseServiceTimeouts(settings, &s));
  return s;
}

Result<ServiceTemplatePatch> ParseServiceUpdate(const Json& body) {
  if (!body.is_object()) return InvalidArgument("update: want a JSON/YAML object");
  ServiceTemplatePatch p;
  for (auto it = body.begin(); it != body.end(); ++it) {
    if (ServiceSettingFields().count(it.key())) {
      p.settings[it.key()] = it.value();
    } else if (it.key() != "spec" && it.key() != "ready_timeout") {
      std::string known = "spec, ready_timeout";
      for (const std::string& f : ServiceSettingFields()) known += ", " + f;
      return InvalidArgument("unknown field '" + it.key() + "'; known fields: " + known);
    }
  }
  if (!p.settings.empty()) {
    // Each setting's form, against a service that allows any range (the head checks them
    // against the service's own).
    ServiceSpec any;
    any.min_replicas = 0;
    any.max_replicas = kMaxServiceReplicas;
    auto checked = PatchedSettings(any, p.settings);
    if (!checked.ok()) return checked.status();
    const Json spec = body.value("spec", Json::object());
    if (!spec.is_object() || !spec.empty() || body.contains("ready_timeout")) {
      return ServiceFieldError(
          "spec",
          "an update changes either the replica template (replaced one replica at a "
          "time) or the service's settings (at once, no replica replaced), not both: "
          "make two updates");
    }
    return p;
  }
  if (body.contains("ready_timeout")) {
    auto d = ServiceDuration(body.at("ready_timeout"), "ready_timeout", kHour);
    if (!d.ok()) return d.status();
    if (*d == 0) return ServiceFieldError("ready_timeout", "want more than 0s");
    p.ready_timeout_ms = *d;
  }
  const Json spec = body.value("spec", Json::object());
  if (!spec.is_object() || spec.empty()) {
    return ServiceFieldError("spec",
                             "want the replica fields to change (command, image, gpus, ...)");
  }
  for (auto it = spec.begin(); it != spec.end(); ++it) {
    if (!UpdatableFields().count(it.key())) {
      std::string known;
      for (const auto& [name, copy] : UpdatableFields())
        known += (known.empty() ? "" : ", ") + name;
      return ServiceFieldError("spec." + it.key(), "an update may change only " + known);
    }
    p.fields.insert(it.key());
  }
  Json full = spec;
  if (!full.contains("command")) full["command"] = Json::array({"true"});  // not taken
  auto job = ParseJobSpec(full);
  if (!job.ok()) return InvalidArgument("field 'spec': " + job.status().message());
  p.job = std::move(*job);
  return p;
}

Result<JobSpec> PatchedTemplate(const JobSpec& base, const ServiceTemplatePatch& patch) {
  JobSpec out = base;
  for (const std::string& f : patch.fields) {
    auto it = UpdatableFields().find(f);
    if (it == UpdatableFields().end()) {
      return ServiceFieldError("spec." + f, "an update may not change it");
    }
    it->second(out, patch.job);
  }
  CORRAL_RETURN_IF_ERROR(CheckReplicaTemplate(out));
  return out;
}

}  // namespace corral
