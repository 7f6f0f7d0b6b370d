// Services (core/service.h) as HTTP carries them: POST /v1/services, GET /v1/services,
// GET /v1/services/{name}, DELETE /v1/services/{name} (docs/api.md, docs/services.md).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "api/command_http.h"
#include "api/service_traffic.h"
#include "head/service_history.h"

namespace corral::api {

// The body is a service as ParseServiceSpec takes it; the owner is the caller.
Result<head::CreateService> DecodeCreateService(const net::HttpRequest& req, const PathArgs& args);
// POST /v1/services/{name}/scale {"replicas": N}
Result<head::ScaleService> DecodeScaleService(const net::HttpRequest& req, const PathArgs& args);
// POST /v1/services/{name}/update {"spec": {job-spec fields to change}, "ready_timeout": "5m"}
Result<head::UpdateService> DecodeUpdateService(const net::HttpRequest& req, const PathArgs& args);
Result<head::RemoveService> DecodeRemoveService(const net::HttpRequest& req, const PathArgs& args);

Json ServiceAnswer(const Service& s);  // {"service": ...}

// What the head's shell adds to the core's view of services: their recent history (events and
// the latest scale, from the changes it keeps) and their traffic through its proxy, by name.
struct ServiceObserved {
  std::map<std::string, head::ServiceHistory> history;
  std::map<std::string, ServiceTraffic> traffic;
};
// {"service": ..., "replicas", "traffic", "last_scale", "events"}
Json ServiceViewAnswer(const head::ServiceView& v, const ServiceObserved& seen);
// {"services": [...]}: each with "traffic" and "last_scale"
Json ServiceListAnswer(const std::vector<head::ServiceView>& all, const ServiceObserved& seen);

}  // namespace corral::api
