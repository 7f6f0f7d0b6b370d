// What the agent's relay endpoints (exec_server.h, log_server.h, notebook_relay.h) accept: a
// relay grant (core/relay_grant.h) the head signed for this node and for the run asked for,
// not yet expired. The join token opens none of them. The key is the one derived from this
// node's credential, set at each registration (the head rotates the credential then), so a
// grant signed before a rotation stops verifying with it.
// Shared by the endpoints' threads and the head channel's: every member is thread-safe.
#pragma once

#include <mutex>
#include <string>

#include "core/relay_grant.h"
#include "net/http.h"

namespace corral::agentnet {

class RelayAuth {
 public:
  explicit RelayAuth(std::string node) : node_(std::move(node)) {}

  // The credential the head issued this node (on every registration).
  void SetCredential(const std::string& credential);
  // Whether `bearer` grants a relay into `run` on this node now.
  GrantCheck Check(const std::string& bearer, const std::string& run) const;
  // The refusal as an HTTP answer (401, 403 or 503) whose error code names the refusal.
  static net::HttpResponse Refusal(const GrantCheck& check);

 private:
  const std::string node_;
  mutable std::mutex mu_;
  std::string key_;  // GUARDED_BY(mu_); empty until the first registration
};

}  // namespace corral::agentnet
