#include "agentnet/log_cert_channel.h"

#include "net/tls_certs.h"

namespace corral::agentnet {

LogCertChannel::LogCertChannel(std::unique_ptr<agent::HeadChannel> inner,
                               std::shared_ptr<net::TlsServerContext> log_tls,
                               std::string node_name)
    : inner_(std::move(inner)), log_tls_(std::move(log_tls)), node_name_(std::move(node_name)) {}

Result<RegisterResponse> LogCertChannel::Register(const RegisterRequest& request) {
  auto key = net::MakeKeyAndCsr("corral agent " + node_name_);
  if (!key.ok()) return key.status();
  RegisterRequest with_csr = request;
  with_csr.csr_pem = key->csr_pem;
  auto r = inner_->Register(with_csr);
  if (!r.ok()) return r;
  if (r->log_cert_pem.empty()) {
    return FailedPrecondition(
        "the head issued no certificate for this agent's log endpoint (does it serve plain "
        "HTTP? then use an http:// --head)");
  }
  if (Status st = log_tls_->Replace(r->log_cert_pem, key->key_pem); !st.ok()) {
    return Internal("the log endpoint certificate from the head: " + st.message());
  }
  return r;
}

}  // namespace corral::agentnet
