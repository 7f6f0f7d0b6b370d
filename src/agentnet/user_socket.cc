#include "agentnet/user_socket.h"

#include <chrono>
#include <map>
#include <string_view>

#include "core/status.h"

namespace corral::agentnet {
namespace {

using namespace std::chrono_literals;

// Longer than the head's longest wait (a watch of events: 60 s), so that a long poll ends at
// the head, not here.
constexpr auto kForwardTimeout = 90s;

// The request headers the API reads besides the bearer (content type, an event stream's
// Accept and Last-Event-ID); nothing else of the caller's reaches the head.
constexpr std::string_view kForwardedHeaders[] = {"content-type", "accept", "last-event-id"};

bool UserSocketPathUnder(const std::string& path, std::string_view prefix) {
  return path.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

Result<std::string> ForwardedTarget(const net::HttpRequest& req) {
  CORRAL_CHECK(req.peer.has_value(), "a request on the node's socket without its peer");
  if (!req.Header("authorization").empty()) {
    return InvalidArgument(
        "header 'Authorization': the node's local socket takes no token; the caller is its Unix "
        "user (uid " +
        std::to_string(req.peer->uid) + "). Send tokens to the head's TCP address instead");
  }
  if (UserSocketPathUnder(req.path, "/s/") || UserSocketPathUnder(req.path, "/v/")) {
    return InvalidArgument(
        "notebooks (/s/) and services (/v/NAME/) are served on the head's TCP address, not on "
        "a node's local socket");
  }
  if (!UserSocketPathUnder(req.path, "/v1/") || !UserSocketPathUnder(req.target, "/v1/")) {
    return NotFound("no such path on a node's local socket: " + req.path + " (the API is /v1/)");
  }
  if (UserSocketPathUnder(req.path, "/v1/agent/") ||
      UserSocketPathUnder(req.path, "/v1/forwarded/")) {
    return PermissionDenied("path '" + req.path +
                            "': an agent's own route, not forwarded for a user");
  }
  return "/v1/forwarded/" + std::to_string(req.peer->uid) + req.target;
}

net::HttpResponse RelayedAnswer(const Result<net::HttpResponse>& from_head) {
  if (!from_head.ok()) {
    return net::JsonError(
        502, "unavailable",
        "this node's agent cannot reach the head: " + from_head.status().message());
  }
  net::HttpResponse out;
  out.status = from_head->status;
  out.body = from_head->body;
  for (const auto& [name, value] : from_head->headers) {
    if (name == "content-type") {
      out.content_type = value;
    } else if (UserSocketPathUnder(name, "x-corral-") || name == "retry-after") {
      out.headers[name] = value;
    }
  }
  return out;
}

UserForwarder::UserForwarder(std::vector<std::string> head_urls, int workers, size_t max_queued)
    : head_urls_(std::move(head_urls)), max_queued_(max_queued) {
  CORRAL_CHECK(workers >= 1, "UserForwarder needs a worker");
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this] { Work(); });
}

UserForwarder::~UserForwarder() {
  std::deque<Queued> left;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    left.swap(queue_);
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
  for (Queued& q : left) {
    q.respond(net::JsonError(503, "unavailable", "this node's agent is stopping"));
  }
}

void UserForwarder::SetCredential(const std::string& credential) {
  std::lock_guard lock(mu_);
  credential_ = credential;
}

void UserForwarder::Handle(net::HttpRequest req, net::Responder respond) {
  auto target = ForwardedTarget(req);
  if (!target.ok()) {
    const int status = target.status().code() == ErrorCode::kNotFound           ? 404
                       : target.status().code() == ErrorCode::kPermissionDenied ? 403
                                                                                : 400;
    const char* code = status == 404   ? "not_found"
                       : status == 403 ? "permission_denied"
                                       : "invalid_argument";
    return respond(net::JsonError(status, code, target.status().message()));
  }
  {
    std::lock_guard lock(mu_);
    if (queue_.size() < max_queued_ && !stopping_) {
      queue_.push_back(Queued{std::move(*target), std::move(req), std::move(respond)});
      wake_.notify_one();
      return;
    }
  }
  respond(net::JsonError(503, "unavailable",
                         "this node's agent has too many requests of its users waiting for the "
                         "head; retry shortly"));
}

void UserForwarder::Work() {
  std::unique_ptr<net::HeadClient> client;
  std::string client_credential;
  for (;;) {
    Queued q;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      q = std::move(queue_.front());
      queue_.pop_front();
    }
    q.respond(Forward(q, client, client_credential));
  }
}

net::HttpResponse UserForwarder::Forward(const Queued& q, std::unique_ptr<net::HeadClient>& client,
                                         std::string& client_credential) {
  std::string credential;
  {
    std::lock_guard lock(mu_);
    credential = credential_;
  }
  if (credential.empty()) {
    return net::JsonError(503, "unavailable",
                          "this node has not joined its head yet; retry shortly");
  }
  // A new credential (the node registered again): connections with the old one are dropped.
  if (!client || credential != client_credential) {
    client = std::make_unique<net::HeadClient>(head_urls_, credential);
    client_credential = credential;
  }
  std::map<std::string, std::string> headers;
  for (std::string_view name : kForwardedHeaders) {
    if (std::string v = q.req.Header(std::string(name)); !v.empty()) headers[std::string(name)] = v;
  }
  // Only a read is sent again after it may have reached a head: a retried POST could act twice.
  const bool idempotent = q.req.method == "GET";
  return RelayedAnswer(
      client->Request(q.req.method, q.target, q.req.body, kForwardTimeout, idempotent, headers));
}

}  // namespace corral::agentnet
