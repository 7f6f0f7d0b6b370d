#include "agentnet/log_server.h"

#include <algorithm>
#include <boost/asio/post.hpp>

#include "agent/launch/launcher.h"
#include "core/secrets.h"

namespace corral::agentnet {

net::HttpResponse ServeLog(const std::string& state_dir, const RelayAuth& auth,
                           const net::HttpRequest& req) {
  const std::string prefix = "/v1/runs/";
  if (req.method != "GET" || req.path.rfind(prefix, 0) != 0 ||
      req.path.size() < prefix.size() + 6 || req.path.substr(req.path.size() - 5) != "/logs") {
    return net::JsonError(404, "not_found", "no such path: " + req.path);
  }
  std::string run_id = req.path.substr(prefix.size(), req.path.size() - prefix.size() - 5);
  if (GrantCheck check = auth.Check(req.BearerToken(), run_id); !check.ok()) {
    return RelayAuth::Refusal(check);
  }
  std::string bad;
  auto num = [&](const char* key, int64_t def) {
    auto it = req.query.find(key);
    if (it == req.query.end()) return def;
    try {
      size_t used = 0;
      int64_t v = std::stoll(it->second, &used);
      if (used == it->second.size() && v >= 0) return v;
    } catch (...) {
    }
    if (bad.empty()) bad = std::string(key) + " \"" + it->second + "\": want an integer >= 0";
    return def;
  };
  int64_t replica = num("replica", 0), task = num("task", 0), offset = num("offset", 0);
  int64_t max = num("max", 65536);
  if (!bad.empty()) return net::JsonError(400, "invalid_argument", bad);
  if (max == 0) return net::JsonError(400, "invalid_argument", "max must be > 0");
  std::string stream = req.query.count("stream") ? req.query.at("stream") : "stdout";
  auto data = agent::ReadRunLog(state_dir, run_id, static_cast<int32_t>(replica),
                                static_cast<int32_t>(task), stream, offset,
                                std::min<int64_t>(max, 4 << 20));
  if (!data.ok()) {
    return net::JsonError(data.status().code() == ErrorCode::kNotFound ? 404 : 400,
                          ErrorCodeName(data.status().code()), data.status().message());
  }
  net::HttpResponse r;
  r.content_type = "text/plain";
  r.headers["X-Corral-Next-Offset"] = std::to_string(offset + static_cast<int64_t>(data->size()));
  r.body = std::move(*data);
  return r;
}

namespace {

bool FromLoopback(const std::string& remote) {
  return remote.rfind("127.", 0) == 0 || remote.rfind("[::1]", 0) == 0 ||
         remote.rfind("::1:", 0) == 0 || remote.rfind("::ffff:127.", 0) == 0;
}

}  // namespace

LogService::LogService(std::string state_dir, const RelayAuth* auth, std::string join_token,
                       std::function<std::string()> render_metrics, int threads)
    : state_dir_(std::move(state_dir)),
      auth_(auth),
      join_token_(std::move(join_token)),
      render_metrics_(std::move(render_metrics)),
      pool_(static_cast<size_t>(threads)) {}

LogService::~LogService() { pool_.join(); }

void LogService::Handle(net::HttpRequest req, net::Responder respond) {
  if (exec_ != nullptr && ExecServer::Serves(req)) return exec_->Handle(std::move(req), respond);
  if (req.path == "/metrics" && req.method == "GET") {
    if (!FromLoopback(req.remote) && !TokensEqual(req.BearerToken(), join_token_)) {
      return respond(net::JsonError(401, "unauthenticated",
                                    "bad token: /metrics takes the join token from off the node"));
    }
    net::HttpResponse r;
    r.content_type = "text/plain; version=0.0.4";
    if (render_metrics_) r.body = render_metrics_();
    return respond(std::move(r));
  }
  boost::asio::post(pool_, [this, req = std::move(req), respond = std::move(respond)] {
    respond(ServeLog(state_dir_, *auth_, req));
  });
}

}  // namespace corral::agentnet
