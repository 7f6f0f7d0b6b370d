// The agent's HeadChannel over HTTP (docs/api.md, "Agents"): register with the join token,
// then sync with the node token the head returned. Sync may be called from two threads at
// once (the long poll and an immediate report), so each call borrows its own connection.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "net/http_client.h"

namespace corral::agentnet {

class HttpHeadChannel final : public agent::HeadChannel {
 public:
  HttpHeadChannel(std::string head_url, std::string join_token);
  Result<RegisterResponse> Register(const RegisterRequest& req) override;
  Result<SyncResponse> Sync(const SyncRequest& req) override;

 private:
  std::unique_ptr<net::HttpClient> Borrow();
  void Return(std::unique_ptr<net::HttpClient> client);

  std::string head_url_;
  net::HttpClient register_client_;
  std::mutex mu_;
  std::string node_token_;                              // GUARDED_BY(mu_)
  std::vector<std::unique_ptr<net::HttpClient>> idle_;  // GUARDED_BY(mu_)
};

}  // namespace corral::agentnet
