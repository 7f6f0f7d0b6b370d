// The agent's HeadChannel over HTTP (docs/api.md, "Agents"): register with the join token,
// then sync with the node token the head returned. `head_urls` may name several heads
// ("http://a:7070,http://b:7070"): calls follow the leader (net::HeadClient). Sync may be called from two threads at
// once (the long poll and an immediate report), so each call borrows its own connection.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "net/head_client.h"

namespace corral::agentnet {

class HttpHeadChannel final : public agent::HeadChannel {
 public:
  HttpHeadChannel(std::vector<std::string> head_urls, std::string join_token);
  Result<RegisterResponse> Register(const RegisterRequest& req) override;
  Result<SyncResponse> Sync(const SyncRequest& req) override;

 private:
  std::unique_ptr<net::HeadClient> Borrow();
  void Return(std::unique_ptr<net::HeadClient> client);

  std::vector<std::string> head_urls_;
  net::HeadClient register_client_;
  std::mutex mu_;
  std::string node_token_;                              // GUARDED_BY(mu_)
  std::vector<std::unique_ptr<net::HeadClient>> idle_;  // GUARDED_BY(mu_)
};

}  // namespace corral::agentnet
