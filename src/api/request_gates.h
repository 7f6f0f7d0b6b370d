// The checks every request from outside passes before the head does any work for it, and the
// bookkeeping of its answer, shared by the API's routes and the notebooks' /s/ connections
// (session_proxy.h), so that no path into the head skips them: the throttle of requests whose
// token has not worked here (per client address), the rate limit per token, and the audit of
// refusals (401, 403) with where they came from. Any thread.
#pragma once

#include <optional>
#include <string>

#include "api/auth_throttle.h"
#include "api/rate_limiter.h"
#include "head/head.h"
#include "net/http.h"

namespace corral::api {

class RequestGates {
 public:
  // `requests_per_second` per token (or per address without one), bursts of twice that;
  // `unauthenticated_per_second` per address whose token has not worked here (AuthThrottle);
  // <= 0: no limit.
  RequestGates(head::Head* head, double requests_per_second, double unauthenticated_per_second);

  // A 429 (with Retry-After) for a request with `bearer` from `remote` ("host:port") that must
  // not go on; nullopt when it may. `local_peer`: it came over the local socket, where the
  // kernel named its user (remote "local uid N"): never throttled as unauthenticated, and
  // rate-limited per Unix user.
  std::optional<net::HttpResponse> Admit(const std::string& bearer, const std::string& remote,
                                         bool local_peer = false);
  // What the answer `r` to `request` ("METHOD /path") says of `bearer`: a token that worked
  // passes the throttle from now on, one refused is throttled again; a refusal is audited.
  void Answered(const std::string& bearer, const std::string& remote, const std::string& request,
                const net::HttpResponse& r);

 private:
  head::Head* const head_;
  RateLimiter rate_;
  AuthThrottle unauthenticated_;
};

// The client's address without its port.
std::string AddressOf(const std::string& remote);
// "METHOD /path", cut to what the audit log keeps of it.
std::string AuditedRequest(const std::string& method, const std::string& path);

}  // namespace corral::api
