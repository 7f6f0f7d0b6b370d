// Services (core/service.h) as HTTP carries them: POST /v1/services, GET /v1/services,
// GET /v1/services/{name}, DELETE /v1/services/{name} (docs/api.md, docs/services.md).
#pragma once

#include "api/command_http.h"

namespace corral::api {

// The body is a service as ParseServiceSpec takes it; the owner is the caller.
Result<head::CreateService> DecodeCreateService(const net::HttpRequest& req, const PathArgs& args);
Result<head::GetService> DecodeGetService(const net::HttpRequest& req, const PathArgs& args);
// POST /v1/services/{name}/scale {"replicas": N}
Result<head::ScaleService> DecodeScaleService(const net::HttpRequest& req, const PathArgs& args);
// POST /v1/services/{name}/update {"spec": {job-spec fields to change}, "ready_timeout": "5m"}
Result<head::UpdateService> DecodeUpdateService(const net::HttpRequest& req, const PathArgs& args);
Result<head::RemoveService> DecodeRemoveService(const net::HttpRequest& req, const PathArgs& args);

Json ServiceAnswer(const Service& s);                               // {"service": ...}
Json ServiceViewAnswer(const head::ServiceView& v);                 // {"service": ..., "replicas"}
Json ServiceListAnswer(const std::vector<head::ServiceView>& all);  // {"services": [...]}

}  // namespace corral::api
