#include "api/leader_gate.h"

#include <nlohmann/json.hpp>

#include "api/api_service.h"

namespace corral::api {

void LeaderGate::SetLeaderUrl(std::string url) {
  std::lock_guard lock(mu_);
  leader_url_ = std::move(url);
}

void LeaderGate::Lead(ApiService* api) {
  SetLeaderUrl(self_url_);
  api_.store(api);
}

void LeaderGate::Handle(net::HttpRequest req, net::Responder respond) {
  ApiService* api = api_.load();
  std::string leader;
  {
    std::lock_guard lock(mu_);
    leader = leader_url_;
  }
  if (req.path == "/v1/leader" && req.method == "GET") {
    net::HttpResponse r;
    r.body =
        nlohmann::json{
            {"leader", leader}, {"self", self_url_}, {"role", api ? "leader" : "standby"}}
            .dump();
    return respond(std::move(r));
  }
  if (api) return api->Handle(std::move(req), std::move(respond));
  if (leader.empty() || leader == self_url_) {
    return respond(net::JsonError(503, "no_leader",
                                  "this head is a standby and no head leads yet; retry shortly"));
  }
  if (req.peer) {
    // Its socket's caller would reach the leader as nobody: a redirect is to the leader's TCP
    // address, where a token is needed, and a standby holds no credential the leader takes as
    // vouching for a Unix user (docs/security.md). Said now, not retried through a window.
    return respond(net::JsonError(
        409, "standby",
        "this head is a standby: its local socket serves only while it leads. The leader is " +
            leader +
            ": use the local socket on the leader's host or on a node's, or a token there "
            "(CORRAL_ADDR=" +
            leader + " CORRAL_TOKEN=...)"));
  }
  net::HttpResponse r =
      net::JsonError(307, "not_leader", "this head is a standby; the leader is " + leader);
  r.headers["Location"] = leader + req.target;
  respond(std::move(r));
}

void LeaderGate::Take(net::HttpRequest req, std::shared_ptr<net::TakenConnection> conn) {
  if (ApiService* api = api_.load()) return api->TakeSession(std::move(req), std::move(conn));
  conn->Answer(net::JsonError(503, "no_leader",
                              "this head is a standby: open the session on the leading head"));
}

}  // namespace corral::api
