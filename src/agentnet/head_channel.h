// The agent's HeadChannel over HTTP (docs/api.md, "Agents"): register, then sync with the node
// credential the head returned. The credential is kept in `credential_path` (mode 0600) and
// registers the node again, after a restart too, which rotates it; the join token registers only
// a node without one, or whose credential the head refuses (the node was removed, or the head
// is older). `head_urls` may name several heads
// ("http://a:7070,http://b:7070"): calls follow the leader (net::HeadClient). Sync may be called
// from two threads at once (the long poll and an immediate report), so each call borrows its own
// connection.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "net/head_client.h"

namespace corral::agentnet {

class HttpHeadChannel final : public agent::HeadChannel {
 public:
  // `on_credential`: told each new credential (the relay endpoints' key, relay_auth.h), from the
  // registering thread. `credential_path` empty: kept in memory only.
  HttpHeadChannel(std::vector<std::string> head_urls, std::string join_token,
                  std::string credential_path = "",
                  std::function<void(const std::string&)> on_credential = {});
  Result<RegisterResponse> Register(const RegisterRequest& req) override;
  Result<SyncResponse> Sync(const SyncRequest& req) override;

 private:
  std::unique_ptr<net::HeadClient> Borrow();
  // The credential to register with first: the one in use, else the one kept on disk.
  std::string KnownCredential();
  void Keep(const std::string& credential);
  void Return(std::unique_ptr<net::HeadClient> client);

  std::vector<std::string> head_urls_;
  net::HeadClient register_client_;  // with the join token
  const std::string credential_path_;
  const std::function<void(const std::string&)> on_credential_;
  std::mutex mu_;
  std::string node_token_;                              // GUARDED_BY(mu_)
  std::vector<std::unique_ptr<net::HeadClient>> idle_;  // GUARDED_BY(mu_)
};

}  // namespace corral::agentnet
