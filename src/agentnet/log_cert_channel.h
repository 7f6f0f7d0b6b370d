// The head channel of an agent whose head serves TLS: each registration sends a certificate
// request for a fresh key, and installs the certificate the head answers with (signed by the
// head's CA, naming the address the agent registered) into the log endpoint's TLS context.
//
// Why a CSR rather than the head sending a key: the private key never leaves the node, as
// with kubelet's TLS bootstrap; registration already runs over the verified TLS channel, so
// the certificate needs no second trust step.
#pragma once

#include <memory>
#include <string>

#include "agent/agent.h"
#include "net/tls_context.h"

namespace corral::agentnet {

class LogCertChannel final : public agent::HeadChannel {
 public:
  LogCertChannel(std::unique_ptr<agent::HeadChannel> inner,
                 std::shared_ptr<net::TlsServerContext> log_tls, std::string node_name);
  Result<RegisterResponse> Register(const RegisterRequest& request) override;
  Result<SyncResponse> Sync(const SyncRequest& request) override { return inner_->Sync(request); }
  void Cancel() override { inner_->Cancel(); }

 private:
  std::unique_ptr<agent::HeadChannel> inner_;
  std::shared_ptr<net::TlsServerContext> log_tls_;
  std::string node_name_;
};

}  // namespace corral::agentnet
