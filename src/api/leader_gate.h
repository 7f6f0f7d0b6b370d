// LeaderGate: the front of a head that may be a standby (DESIGN §7, HA). While another head
// leads, every request is answered 307 with a Location at the leader (or 503 "no_leader"
// while none is known), so that clients and agents follow it (net::HeadClient); once this
// head leads, requests go to its ApiService. A request over a standby's local socket is
// answered 409 "standby" naming the leader instead: a redirect would take its Unix user to
// the leader's TCP address as nobody. `GET /v1/leader` is answered in both roles.
// Thread-safe: the HTTP server's threads call Handle, the election loop the setters.
#pragma once

#include <atomic>
#include <mutex>
#include <string>

#include "net/http.h"
#include "net/http_server.h"

namespace corral::api {

class ApiService;

class LeaderGate {
 public:
  explicit LeaderGate(std::string self_url) : self_url_(std::move(self_url)) {}

  void Handle(net::HttpRequest req, net::Responder respond);
  // A /s/ connection (session_proxy.h): the leader's to relay; a standby answers 503.
  void Take(net::HttpRequest req, std::shared_ptr<net::TakenConnection> conn);

  void SetLeaderUrl(std::string url);  // as the store names it; "" when unknown
  // From now on this head leads: requests go to `api` (which must outlive the gate's use).
  void Lead(ApiService* api);
  bool leading() const { return api_.load() != nullptr; }

 private:
  const std::string self_url_;
  std::atomic<ApiService*> api_{nullptr};
  mutable std::mutex mu_;
  std::string leader_url_;  // GUARDED_BY(mu_)
};

}  // namespace corral::api
