#include "api/service_http.h"

namespace corral::api {
namespace {

Json ServiceReplicaJson(const head::ServiceReplica& r) {
  Json j{{"job", r.job},         {"state", JobStateName(r.state)},
         {"running", r.running}, {"version", r.version},
         {"ready", r.ready},     {"draining", r.draining}};
  if (!r.run_id.empty()) j["run"] = r.run_id;
  if (!r.node.empty()) {
    j["node"] = r.node;
    j["address"] = r.host + ":" + std::to_string(r.port);
    j["port"] = r.port;
  }
  return j;
}

Json ServiceEventJson(const head::ServiceEvent& e) {
  Json j{{"rev", e.rev}, {"at", e.at}, {"type", e.type}, {"text", e.text}};
  if (e.job != 0) j["job"] = e.job;
  if (!e.cause.empty()) j["cause"] = e.cause;
  return j;
}

// The core's view of a service, with what the shell observed of it; `events`: its history too.
Json ServiceViewJson(const head::ServiceView& v, const ServiceObserved& seen, bool events) {
  Json j = ToJson(v.service);
  Json replicas = Json::array();
  for (const head::ServiceReplica& r : v.replicas) replicas.push_back(ServiceReplicaJson(r));
  j["replicas"] = std::move(replicas);
  j["path"] = "/v/" + v.service.spec.name + "/";
  if (!v.note.empty()) j["note"] = v.note;
  const std::string& name = v.service.spec.name;
  auto traffic = seen.traffic.find(name);
  j["traffic"] = ToJson(traffic == seen.traffic.end() ? ServiceTraffic{} : traffic->second);
  auto history = seen.history.find(name);
  const head::ServiceHistory none;
  const head::ServiceHistory& h = history == seen.history.end() ? none : history->second;
  j["last_scale"] = h.last_scale ? ServiceEventJson(*h.last_scale) : Json();
  if (events) {
    Json list = Json::array();
    for (const head::ServiceEvent& e : h.events) list.push_back(ServiceEventJson(e));
    j["events"] = std::move(list);
  }
  return j;
}

}  // namespace

Result<head::CreateService> DecodeCreateService(const net::HttpRequest& req, const PathArgs&) {
  Json body = Json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    return InvalidArgument("body: want a JSON object {\"name\", \"port\", \"spec\", ...}");
  }
  auto spec = ParseServiceSpec(body);
  if (!spec.ok()) return spec.status();
  return head::CreateService{std::move(*spec)};
}

Result<head::ScaleService> DecodeScaleService(const net::HttpRequest& req, const PathArgs& args) {
  Json body = Json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    return InvalidArgument("body: want a JSON object {\"replicas\": N}");
  }
  for (auto it = body.begin(); it != body.end(); ++it) {
    if (it.key() != "replicas")
      return InvalidArgument("unknown field '" + it.key() + "'; want replicas");
  }
  const Json r = body.value("replicas", Json());
  if (!r.is_number_integer() || r.get<int64_t>() < 0 || r.get<int64_t>() > 1000) {
    return InvalidArgument("field 'replicas': want an integer, got " + r.dump());
  }
  return head::ScaleService{args.at(0), r.get<int32_t>()};
}

Result<head::UpdateService> DecodeUpdateService(const net::HttpRequest& req, const PathArgs& args) {
  Json body = Json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    return InvalidArgument("body: want a JSON object {\"spec\": {...}, \"ready_timeout\": \"5m\"}");
  }
  auto patch = ParseServiceUpdate(body);
  if (!patch.ok()) return patch.status();
  return head::UpdateService{args.at(0), std::move(*patch)};
}

Result<head::RemoveService> DecodeRemoveService(const net::HttpRequest&, const PathArgs& args) {
  return head::RemoveService{args.at(0)};
}

Json ServiceAnswer(const Service& s) { return Json{{"service", ToJson(s)}}; }

Json ServiceViewAnswer(const head::ServiceView& v, const ServiceObserved& seen) {
  return Json{{"service", ServiceViewJson(v, seen, true)}};
}

Json ServiceListAnswer(const std::vector<head::ServiceView>& all, const ServiceObserved& seen) {
  Json arr = Json::array();
  for (const head::ServiceView& v : all) arr.push_back(ServiceViewJson(v, seen, false));
  return Json{{"services", arr}};
}

}  // namespace corral::api
