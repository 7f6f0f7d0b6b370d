#include "api/forwarded.h"

#include <charconv>
#include <string_view>

namespace corral::api {
namespace {

// "UID" and what follows it in `s`, which starts with the prefix; false when the uid is not
// 1 to 10 decimal digits within uint32_t.
bool SplitForwardedUid(std::string_view s, uint32_t* uid, std::string_view* rest) {
  s.remove_prefix(std::string_view(kForwardedPrefix).size());
  const size_t slash = s.find('/');
  const std::string_view digits = s.substr(0, slash);
  if (digits.empty() || digits.size() > 10) return false;
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size() || value > UINT32_MAX) {
    return false;
  }
  *uid = static_cast<uint32_t>(value);
  *rest = slash == std::string_view::npos ? std::string_view() : s.substr(slash);
  return true;
}

bool BeginsWithPart(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

bool IsForwarded(const net::HttpRequest& req) {
  return BeginsWithPart(req.path, kForwardedPrefix) || BeginsWithPart(req.target, kForwardedPrefix);
}

Status UnwrapForwarded(net::HttpRequest& req) {
  if (req.peer) {
    return InvalidArgument(
        "path: /v1/forwarded/ is where a node's agent forwards its local users, over TCP with "
        "its node credential; the local socket's caller is its own Unix user");
  }
  if (req.BearerToken().empty()) {
    return Unauthenticated("forwarding a Unix user's request takes a node's credential");
  }
  uint32_t uid = 0, target_uid = 0;
  std::string_view inner_path, inner_target;
  // The raw target and the decoded path must say the same: a percent-encoded prefix is not one.
  if (!BeginsWithPart(req.path, kForwardedPrefix) ||
      !BeginsWithPart(req.target, kForwardedPrefix) ||
      !SplitForwardedUid(req.path, &uid, &inner_path) ||
      !SplitForwardedUid(req.target, &target_uid, &inner_target) || uid != target_uid) {
    return InvalidArgument("path: want /v1/forwarded/UID/v1/..., UID the caller's decimal uid");
  }
  if (!BeginsWithPart(inner_path, "/v1/") || !BeginsWithPart(inner_target, "/v1/")) {
    return InvalidArgument("path: a forwarded request is one under /v1/, got '" +
                           std::string(inner_path) + "'");
  }
  if (BeginsWithPart(inner_path, "/v1/forwarded/") || BeginsWithPart(inner_path, "/v1/agent/") ||
      inner_path == "/v1/forwarded" || inner_path == "/v1/agent") {
    return InvalidArgument("path: '" + std::string(inner_path) +
                           "' is not forwarded for a user (an agent's own route, or forwarded "
                           "twice)");
  }
  req.path = std::string(inner_path);
  req.target = std::string(inner_target);
  req.peer = net::PeerCredentials{.uid = uid, .via_node = true};
  return Status::Ok();
}

}  // namespace corral::api
