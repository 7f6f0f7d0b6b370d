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

HttpHeadChannel::HttpHeadChannel(std::string head_url, std::string join_token)
    : head_url_(std::move(head_url)), register_client_(head_url_, std::move(join_token)) {}

Result<RegisterResponse> HttpHeadChannel::Register(const RegisterRequest& req) {
  auto body = JsonReply(register_client_.Post("/v1/agent/register", ToJson(req).dump(), 10s));
  if (!body.ok()) return body.status();
  auto resp = RegisterResponseFromJson(*body);
  if (resp.ok()) {
    std::lock_guard lock(mu_);
    node_token_ = resp->node_token;
    idle_.clear();  // connections with the old token
  }
  return resp;
}

std::unique_ptr<net::HttpClient> HttpHeadChannel::Borrow() {
  std::lock_guard lock(mu_);
  if (node_token_.empty()) return nullptr;
  if (idle_.empty()) return std::make_unique<net::HttpClient>(head_url_, node_token_);
  auto c = std::move(idle_.back());
  idle_.pop_back();
  return c;
}

void HttpHeadChannel::Return(std::unique_ptr<net::HttpClient> client) {
  std::lock_guard lock(mu_);
  if (idle_.size() < 4) idle_.push_back(std::move(client));
}

Result<SyncResponse> HttpHeadChannel::Sync(const SyncRequest& req) {
  auto client = Borrow();
  if (!client) return FailedPrecondition("sync before register");
  auto timeout = std::chrono::milliseconds(req.wait_ms) + 10s;
  auto body = JsonReply(client->Post("/v1/agent/sync", ToJson(req).dump(), timeout));
  Return(std::move(client));
  if (!body.ok()) return body.status();
  return SyncResponseFromJson(*body);
}

}  // namespace corral::agentnet
