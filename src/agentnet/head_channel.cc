#include "agentnet/head_channel.h"

#include "core/codec.h"

namespace corral::agentnet {
namespace {

using namespace std::chrono_literals;

Result<Json> JsonReply(const Result<net::HttpResponse>& r) {
  if (!r.ok()) return r.status();
  Json body = Json::parse(r->body, nullptr, false);
  if (r->status != 200) {
    std::string msg = body.is_object() && body.contains("error")
                          ? body["error"].value("message", r->body)
                          : r->body;
    ErrorCode code = r->status == 401   ? ErrorCode::kUnauthenticated
                     : r->status >= 500 ? ErrorCode::kUnavailable
                                        : ErrorCode::kFailedPrecondition;
    return Status(code, "head answered " + std::to_string(r->status) + ": " + msg);
  }
  if (body.is_discarded()) return Internal("head answered with malformed JSON");
  return body;
}

}  // namespace

namespace {

// A sync must come back inside the agent's lease, failover included: try the other heads
// for a few seconds at most, then let the agent's own loop retry.
net::HeadClientOptions AgentOptions() {
  net::HeadClientOptions o;
  o.failover_window = 3s;
  o.pause_between_rounds = 200ms;
  return o;
}

}  // namespace

HttpHeadChannel::HttpHeadChannel(std::vector<std::string> head_urls, std::string join_token)
    : head_urls_(std::move(head_urls)),
      register_client_(head_urls_, std::move(join_token), AgentOptions()) {}

Result<RegisterResponse> HttpHeadChannel::Register(const RegisterRequest& req) {
  auto body = JsonReply(register_client_.Request("POST", "/v1/agent/register",
                                                              ToJson(req).dump(), 10s,
                                                              /*idempotent=*/true));
  if (!body.ok()) return body.status();
  auto resp = RegisterResponseFromJson(*body);
  if (resp.ok()) {
    std::lock_guard lock(mu_);
    node_token_ = resp->node_token;
    idle_.clear();  // connections with the old token
  }
  return resp;
}

std::unique_ptr<net::HeadClient> HttpHeadChannel::Borrow() {
  std::lock_guard lock(mu_);
  if (node_token_.empty()) return nullptr;
  if (idle_.empty()) {
    return std::make_unique<net::HeadClient>(head_urls_, node_token_, AgentOptions());
  }
  auto c = std::move(idle_.back());
  idle_.pop_back();
  return c;
}

void HttpHeadChannel::Return(std::unique_ptr<net::HeadClient> client) {
  std::lock_guard lock(mu_);
  if (idle_.size() < 4) idle_.push_back(std::move(client));
}

Result<SyncResponse> HttpHeadChannel::Sync(const SyncRequest& req) {
  auto client = Borrow();
  if (!client) return FailedPrecondition("sync before register");
  auto timeout = std::chrono::milliseconds(req.wait_ms) + 10s;
  auto body = JsonReply(client->Request("POST", "/v1/agent/sync", ToJson(req).dump(), timeout,
                                                /*idempotent=*/true));
  Return(std::move(client));
  if (!body.ok()) return body.status();
  return SyncResponseFromJson(*body);
}

}  // namespace corral::agentnet
