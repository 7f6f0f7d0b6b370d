#include "agentnet/head_channel.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

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

HttpHeadChannel::HttpHeadChannel(std::vector<std::string> head_urls, std::string join_token,
                                 std::string credential_path,
                                 std::function<void(const std::string&)> on_credential)
    : head_urls_(std::move(head_urls)),
      register_client_(head_urls_, std::move(join_token), AgentOptions()),
      credential_path_(std::move(credential_path)),
      on_credential_(std::move(on_credential)) {}

std::string HttpHeadChannel::KnownCredential() {
  {
    std::lock_guard lock(mu_);
    if (!node_token_.empty()) return node_token_;
  }
  if (credential_path_.empty()) return "";
  std::ifstream in(credential_path_);
  std::string kept;
  std::getline(in, kept);
  return kept;
}

// Written beside and renamed over the old one: a crash leaves one credential or the other.
void HttpHeadChannel::Keep(const std::string& credential) {
  if (credential_path_.empty()) return;
  const std::string tmp = credential_path_ + ".new";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  bool ok = fd >= 0 && ::fchmod(fd, 0600) == 0 &&
            ::write(fd, credential.data(), credential.size()) ==
                static_cast<ssize_t>(credential.size()) &&
            ::fsync(fd) == 0;
  if (fd >= 0) ::close(fd);
  if (!ok || ::rename(tmp.c_str(), credential_path_.c_str()) != 0) {
    spdlog::warn(
        "cannot keep the node credential at {}: {}; after a restart the node registers "
        "with the join token",
        credential_path_, std::strerror(errno));
  }
}

Result<RegisterResponse> HttpHeadChannel::Register(const RegisterRequest& req) {
  const std::string body = ToJson(req).dump();
  Result<net::HttpResponse> r = Unauthenticated("no node credential yet");
  if (std::string own = KnownCredential(); !own.empty()) {
    net::HeadClient with_own(head_urls_, own, AgentOptions());
    r = with_own.Request("POST", "/v1/agent/register", body, 10s, /*idempotent=*/true);
    // Refused (a removed node, a head that lost its state, a head older than node credentials
    // for registration): the join token, where this node still holds one, registers it anew.
    if (r.ok() && (r->status == 401 || r->status == 403)) {
      spdlog::info("the head refuses this node's credential ({}): registering with the join token",
                   r->status);
      r = Unauthenticated("refused");
    }
  }
  if (!r.ok() && r.status().code() == ErrorCode::kUnauthenticated) {
    r = register_client_.Request("POST", "/v1/agent/register", body, 10s, /*idempotent=*/true);
  }
  auto json = JsonReply(r);
  if (!json.ok()) return json.status();
  auto resp = RegisterResponseFromJson(*json);
  if (resp.ok()) {
    {
      std::lock_guard lock(mu_);
      node_token_ = resp->node_token;
      idle_.clear();  // connections with the old token
    }
    Keep(resp->node_token);
    if (on_credential_) on_credential_(resp->node_token);
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
