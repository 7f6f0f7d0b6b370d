#include "cmd/head_tls.h"

#include <arpa/inet.h>

#include "net/tls_certs.h"
#include "net/url.h"

namespace corral::cmd {

void HeadTlsFlags::AddTo(CLI::App& app) {
  app.add_flag("--tls", tls,
               "serve HTTPS (the default when --listen is not a loopback address); the head's "
               "CA and certificate are made in STATE_DIR/tls on first start");
  app.add_flag("--no-tls", no_tls,
               "serve plain HTTP even on a non-loopback address (tokens in "
               "clear: only on a network you trust)");
  app.add_option("--tls-san", sans,
                 "another name or address the head's certificate must cover (repeatable); "
                 "localhost, 127.0.0.1, this host's names and the listen address always are");
  app.add_option("--tls-cert", cert, "the head's certificate chain (PEM) instead of its own");
  app.add_option("--tls-key", key, "the private key of --tls-cert (PEM)");
}

bool IsLoopbackHost(const std::string& raw) {
  std::string host = raw;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host == "localhost" || host == "::1") return true;
  in_addr a4{};
  return inet_pton(AF_INET, host.c_str(), &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127;
}

Result<HeadTls> SetUpHeadTls(const HeadTlsFlags& flags, const std::string& state_dir,
                             const std::string& listen_host) {
  HeadTls out;
  if (flags.cert.empty() != flags.key.empty()) {
    return InvalidArgument("flags '--tls-cert' and '--tls-key': give both or neither");
  }
  const bool own = !flags.cert.empty();
  if (flags.no_tls && (flags.tls || own || !flags.sans.empty())) {
    return InvalidArgument(
        "flag '--no-tls': cannot be combined with --tls, --tls-cert or --tls-san");
  }
  out.enabled = !flags.no_tls && (flags.tls || own || !IsLoopbackHost(listen_host));
  if (!out.enabled) {
    if (flags.no_tls && !IsLoopbackHost(listen_host)) {
      out.notes.push_back("WARNING: --no-tls on " + listen_host +
                          ": tokens and job specs cross the network in clear text");
    }
    return out;
  }
  std::vector<std::string> sans;
  if (!own) {
    sans = net::DefaultHeadSans(listen_host);
    sans.insert(sans.end(), flags.sans.begin(), flags.sans.end());
  }
  // The CA signs agents' log endpoint certificates even when the operator brings the
  // head's own certificate.
  auto pki = net::EnsureHeadTls(state_dir + "/tls", sans);
  if (!pki.ok()) return pki.status();
  if (pki->created_ca) out.notes.push_back("made a new CA: " + pki->ca_path);
  if (pki->issued_server)
    out.notes.push_back("issued the head's certificate " + pki->server_cert_path);
  if (own) {
    auto server = net::TlsServerContext::FromFiles(flags.cert, flags.key);
    if (!server.ok()) return InvalidArgument("flag '--tls-cert': " + server.status().message());
    out.server = *server;
  } else {
    auto server = net::TlsServerContext::FromFiles(pki->server_cert_path, pki->server_key_path);
    if (!server.ok()) return Internal(server.status().message());
    out.server = *server;
    out.ca_path = pki->ca_path;
  }
  auto trust = net::TlsClientContext::FromCaPem(pki->ca.cert_pem);
  if (!trust.ok()) return Internal(pki->ca_path + ": " + trust.status().message());
  out.agents.log_trust = *trust;
  out.agents.issue_log_cert = [ca = pki->ca](const RegisterRequest& r) -> Result<std::string> {
    auto url = net::ParseUrl("https://" + r.address);
    if (r.address.empty() || !url.ok()) {
      return InvalidArgument("address: '" + r.address + "' is not HOST:PORT");
    }
    // The name the head will dial, not what the CSR asks for.
    return net::SignCsr(ca, r.csr_pem, "corral agent " + r.name, {url->host});
  };
  return out;
}

}  // namespace corral::cmd
