#include "api/request_gates.h"

#include "api/api_service.h"
#include "core/time.h"

namespace corral::api {
namespace {

// How much of a refused request's method and path the audit log keeps.
constexpr size_t kMaxAuditedRequest = 256;

}  // namespace

std::string AddressOf(const std::string& remote) { return remote.substr(0, remote.rfind(':')); }

std::string AuditedRequest(const std::string& method, const std::string& path) {
  // A path can be as long as the header limit: the audit keeps its start.
  std::string request = method + " " + path;
  if (request.size() > kMaxAuditedRequest) request = request.substr(0, kMaxAuditedRequest) + "...";
  return request;
}

RequestGates::RequestGates(head::Head* head, double requests_per_second,
                           double unauthenticated_per_second)
    : head_(head),
      rate_(requests_per_second, 2 * requests_per_second),
      unauthenticated_(unauthenticated_per_second, [head](const std::string& bearer) {
        return head->IsCurrentCredential(bearer);
      }) {}

std::optional<net::HttpResponse> RequestGates::Admit(const std::string& bearer,
                                                     const std::string& remote, bool local_peer) {
  const std::string address = AddressOf(remote);
  if (local_peer) {
    if (rate_.Allow("peer " + address)) return std::nullopt;
    return ErrorResponse(
        Status(ErrorCode::kResourceExhausted, "too many requests from this Unix user; slow down"));
  }
  if (!unauthenticated_.Allow(bearer, address)) {
    return ErrorResponse(
        Status(ErrorCode::kResourceExhausted,
               "too many requests without a working token from " + address + "; slow down"));
  }
  if (!rate_.Allow(bearer.empty() ? "peer " + address : bearer)) {
    return ErrorResponse(
        Status(ErrorCode::kResourceExhausted, "too many requests with this token; slow down"));
  }
  return std::nullopt;
}

void RequestGates::Answered(const std::string& bearer, const std::string& remote,
                            const std::string& request, const net::HttpResponse& r) {
  unauthenticated_.Answered(bearer, r.status);
  // Every refusal that got this far is audited, with where it came from; unauthenticated
  // requests past their address's allowance were answered 429 before this and are not.
  if (r.status != 401 && r.status != 403) return;
  Json body = Json::parse(r.body, nullptr, false);
  std::string why = body.is_object() && body.contains("error") && body["error"].is_object()
                        ? body["error"].value("message", "")
                        : "";
  head_->Audit(Json{{"at", SystemClock().Now()},
                    {"from", remote},
                    {"request", request},
                    {"status", r.status},
                    {"reason", why}});
}

}  // namespace corral::api
