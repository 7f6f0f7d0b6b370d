#include "net/tls_context.h"

// <utility> before any Boost.Asio header: Boost 1.74's awaitable.hpp needs std::exchange.
#include <utility>

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/ssl/context.hpp>
#include <fstream>
#include <sstream>

#include "net/strings_internal.h"

namespace corral::net {
namespace {

namespace ssl = boost::asio::ssl;
using boost::system::error_code;

std::unique_ptr<ssl::context> NewContext(ssl::context::method method) {
  auto ctx = std::make_unique<ssl::context>(method);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                   ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                   ssl::context::single_dh_use);
  return ctx;
}

std::mutex g_default_mu;
std::shared_ptr<const TlsClientContext> g_default;  // GUARDED_BY(g_default_mu)

}  // namespace

TlsClientContext::TlsClientContext(std::unique_ptr<ssl::context> ctx, std::string trust)
    : ctx_(std::move(ctx)), trust_(std::move(trust)) {}
TlsClientContext::~TlsClientContext() = default;

Result<std::shared_ptr<const TlsClientContext>> TlsClientContext::FromCaFile(
    const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgument("CA file " + path + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  auto ctx = FromCaPem(text.str());
  if (!ctx.ok()) return InvalidArgument("CA file " + path + ": " + ctx.status().message());
  const_cast<TlsClientContext&>(**ctx).trust_ = "CA file " + path;
  return ctx;
}

Result<std::shared_ptr<const TlsClientContext>> TlsClientContext::FromCaPem(
    const std::string& pem) {
  auto ctx = NewContext(ssl::context::tls_client);
  error_code ec;
  ctx->add_certificate_authority(boost::asio::buffer(pem), ec);
  if (ec) return InvalidArgument("no PEM CA certificate in it (" + ec.message() + ")");
  ctx->set_verify_mode(ssl::verify_peer);
  return std::shared_ptr<const TlsClientContext>(
      new TlsClientContext(std::move(ctx), "the given CA"));
}

std::shared_ptr<const TlsClientContext> TlsClientContext::System() {
  auto ctx = NewContext(ssl::context::tls_client);
  error_code ignored;
  ctx->set_default_verify_paths(ignored);
  ctx->set_verify_mode(ssl::verify_peer);
  return std::shared_ptr<const TlsClientContext>(
      new TlsClientContext(std::move(ctx), "the system's CA store"));
}

Status TlsClientContext::PrepareConnection(ssl_st* ssl, const std::string& raw_host) const {
  const std::string host = StripBrackets(raw_host);
  unsigned char buf[16];
  const bool ip =
      inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
  if (ip) {
    // An address is checked against the certificate's IP SANs (no SNI for addresses).
    if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str()) != 1) {
      return InvalidArgument("cannot verify TLS for address " + host);
    }
    return Status::Ok();
  }
  if (SSL_set_tlsext_host_name(ssl, host.c_str()) != 1 || SSL_set1_host(ssl, host.c_str()) != 1) {
    return InvalidArgument("cannot verify TLS for host " + host);
  }
  return Status::Ok();
}

void SetDefaultClientTls(std::shared_ptr<const TlsClientContext> tls) {
  std::lock_guard lock(g_default_mu);
  g_default = std::move(tls);
}

std::shared_ptr<const TlsClientContext> DefaultClientTls() {
  std::lock_guard lock(g_default_mu);
  if (!g_default) g_default = TlsClientContext::System();
  return g_default;
}

std::string HandshakeFailure(ssl_st* ssl, const std::string& tls_error, const std::string& trust) {
  const long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK) {
    return std::string("TLS certificate verify failed: ") + X509_verify_cert_error_string(verify) +
           " (trusting " + trust + ")";
  }
  return "TLS handshake failed: " + tls_error;
}

TlsServerContext::~TlsServerContext() = default;

Result<std::shared_ptr<TlsServerContext>> TlsServerContext::FromFiles(const std::string& cert_path,
                                                                      const std::string& key_path) {
  auto read = [](const std::string& path) -> Result<std::string> {
    std::ifstream in(path, std::ios::binary);
    if (!in) return InvalidArgument(path + ": cannot be read");
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  };
  auto cert = read(cert_path);
  if (!cert.ok()) return cert.status();
  auto key = read(key_path);
  if (!key.ok()) return key.status();
  auto ctx = FromPem(*cert, *key);
  if (!ctx.ok()) {
    return InvalidArgument("TLS certificate " + cert_path + " with key " + key_path + ": " +
                           ctx.status().message());
  }
  return ctx;
}

Result<std::shared_ptr<TlsServerContext>> TlsServerContext::FromPem(const std::string& cert_pem,
                                                                    const std::string& key_pem) {
  std::shared_ptr<TlsServerContext> out(new TlsServerContext());
  CORRAL_RETURN_IF_ERROR(out->Replace(cert_pem, key_pem));
  return out;
}

std::shared_ptr<TlsServerContext> TlsServerContext::WithoutCertificate() {
  std::shared_ptr<TlsServerContext> out(new TlsServerContext());
  out->ctx_ = NewContext(ssl::context::tls_server);
  return out;
}

Status TlsServerContext::Replace(const std::string& cert_pem, const std::string& key_pem) {
  std::shared_ptr<ssl::context> ctx = NewContext(ssl::context::tls_server);
  // No session tickets: nothing resumes sessions, and a ticket arriving after the handshake
  // would look like unread data on an idle keep-alive connection.
  SSL_CTX_set_num_tickets(ctx->native_handle(), 0);
  error_code ec;
  ctx->use_certificate_chain(boost::asio::buffer(cert_pem), ec);
  if (ec) return InvalidArgument("not a PEM certificate (" + ec.message() + ")");
  ctx->use_private_key(boost::asio::buffer(key_pem), ssl::context::pem, ec);
  // OpenSSL checks the key against the certificate as it loads it.
  if (ec) {
    return InvalidArgument("the private key is not PEM or does not match the certificate (" +
                           ec.message() + ")");
  }
  if (SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
    ERR_clear_error();
    return InvalidArgument("the private key does not match the certificate");
  }
  std::lock_guard lock(mu_);
  ctx_ = std::move(ctx);
  has_cert_ = true;
  return Status::Ok();
}

std::shared_ptr<ssl::context> TlsServerContext::Current() const {
  std::lock_guard lock(mu_);
  return ctx_;
}

bool TlsServerContext::has_certificate() const {
  std::lock_guard lock(mu_);
  return has_cert_;
}

}  // namespace corral::net
