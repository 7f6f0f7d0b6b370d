#include "api/step_request.h"

#include <nlohmann/json.hpp>

namespace corral::api {
namespace {

using Json = nlohmann::json;

Status Bad(const std::string& field, const std::string& want) {
  return InvalidArgument("field '" + field + "': want " + want);
}

}  // namespace

Result<head::StepRequest> StepRequestFromJson(const std::string& body) {
  Json j = Json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgument("body: want a JSON object {\"command\": [...], ...}");
  }
  head::StepRequest r;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const Json& v = it.value();
    if (k == "command") {
      if (!v.is_array() || v.empty()) return Bad(k, "a non-empty array of strings");
      for (const Json& a : v) {
        if (!a.is_string()) return Bad(k, "a non-empty array of strings");
        r.command.push_back(a.get<std::string>());
      }
    } else if (k == "env") {
      if (!v.is_object()) return Bad(k, "an object of strings");
      for (auto e = v.begin(); e != v.end(); ++e) {
        if (!e.value().is_string()) return Bad("env." + e.key(), "a string");
        r.env[e.key()] = e.value().get<std::string>();
      }
    } else if (k == "workdir") {
      if (!v.is_string()) return Bad(k, "a string");
      r.workdir = v.get<std::string>();
    } else if (k == "replicas") {
      if (!v.is_array()) return Bad(k, "an array of replica numbers");
      for (const Json& x : v) {
        if (!x.is_number_integer()) return Bad(k, "an array of replica numbers");
        r.replicas.push_back(x.get<int32_t>());
      }
    } else if (k == "ntasks" || k == "tasks_per_replica") {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 1 << 20) {
        return Bad(k, "a whole number of tasks");
      }
      (k == "ntasks" ? r.ntasks : r.tasks_per_replica) = v.get<int32_t>();
    } else if (k == "gpus_per_task") {
      if (!v.is_boolean()) return Bad(k, "true or false");
      r.gpus_per_task = v.get<bool>();
    } else {
      return InvalidArgument("unknown field '" + k +
                             "'; want command, env, workdir, replicas, ntasks, "
                             "tasks_per_replica, gpus_per_task");
    }
  }
  if (r.command.empty()) return Bad("command", "a non-empty array of strings");
  return r;
}

}  // namespace corral::api
