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

}  // namespace

Json ToJson(const Service& s) {
  const ServiceSpec& p = s.spec;
  return Json{{"name", p.name},
              {"owner", p.owner},
              {"spec", ToJson(p.job)},
              {"min_replicas", p.min_replicas},
              {"max_replicas", p.max_replicas},
              {"port", p.port},
              {"health", p.health_path},
              {"any_user", p.any_user},
              {"desired", s.desired},
              {"version", s.version},
              {"created_at", s.created_at}};
}

Result<Service> ServiceFromJson(const Json& j) {
  if (!j.is_object()) return InvalidArgument("service: want an object");
  auto job = JobSpecFromJson(j.value("spec", Json::object()));
  if (!job.ok()) return job.status();
  Service s;
  s.spec.name = j.value("name", "");
  s.spec.owner = j.value("owner", "");
  s.spec.job = std::move(*job);
  s.spec.min_replicas = j.value("min_replicas", 1);
  s.spec.max_replicas = j.value("max_replicas", 1);
  s.spec.port = j.value("port", 0);
  s.spec.health_path = j.value("health", "/");
  s.spec.any_user = j.value("any_user", false);
  s.desired = j.value("desired", 1);
  s.version = j.value("version", 1);
  s.created_at = j.value("created_at", TimeMs{0});
  return s;
}

Result<ServiceSpec> ParseServiceSpec(const Json& body) {
  if (!body.is_object()) return InvalidArgument("service: want a JSON/YAML object");
  static const std::set<std::string> kKnown = {"name", "replicas", "min_replicas", "max_replicas",
                                               "port", "health",   "any_user",     "spec"};
  for (auto it = body.begin(); it != body.end(); ++it) {
    if (!kKnown.count(it.key())) {
      return InvalidArgument("unknown field '" + it.key() +
                             "'; known fields: name, replicas, min_replicas, max_replicas, "
                             "port, health, any_user, spec");
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
  if (!body.contains("port")) return ServiceFieldError("port", "want the port replicas listen on");
  auto port = ServiceInt(body, "port", 0, 65535);
  if (!port.ok()) return port.status();
  s.port = *port;
  if (body.contains("health")) {
    const Json& h = body.at("health");
    if (!h.is_string() || h.get<std::string>().empty() || h.get<std::string>()[0] != '/' ||
        h.get<std::string>().find_first_of(" \r\n") != std::string::npos) {
      return ServiceFieldError("health", "want an HTTP path starting with '/', got " + h.dump());
    }
    s.health_path = h.get<std::string>();
  }
  if (body.contains("any_user")) {
    if (!body.at("any_user").is_boolean()) return ServiceFieldError("any_user", "want a boolean");
    s.any_user = body.at("any_user").get<bool>();
  }
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
