// TLS settings for HttpServer, HttpClient and AsyncHttpClient (OpenSSL through Boost.Asio):
// what a server presents (its certificate and key) and what a client trusts (a CA file).
// TLS 1.2 or later; clients always verify the peer's chain and its name (DNS or IP SAN).
// Immutable once shared, but for TlsServerContext::Replace; any thread.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "core/status.h"

namespace boost::asio::ssl {
class context;
}
struct ssl_st;  // OpenSSL's SSL

namespace corral::net {

class TlsClientContext {
 public:
  // Trusts the CA certificates in a PEM file (e.g. the head's STATE_DIR/tls/ca.pem).
  // Errors: kInvalidArgument naming the file and why it is unusable.
  static Result<std::shared_ptr<const TlsClientContext>> FromCaFile(const std::string& path);
  static Result<std::shared_ptr<const TlsClientContext>> FromCaPem(const std::string& pem);
  // Trusts the system's CA store (/etc/ssl/certs): for heads with a publicly signed certificate.
  static std::shared_ptr<const TlsClientContext> System();

  ~TlsClientContext();
  boost::asio::ssl::context& asio() const { return *ctx_; }
  // "CA file PATH" or "the system's CA store": for error messages.
  const std::string& trust() const { return trust_; }

  // Per connection, before the handshake: SNI and the name the certificate must carry.
  Status PrepareConnection(ssl_st* ssl, const std::string& host) const;

 private:
  TlsClientContext(std::unique_ptr<boost::asio::ssl::context> ctx, std::string trust);
  std::unique_ptr<boost::asio::ssl::context> ctx_;
  std::string trust_;
};

// What https URLs trust when the caller gave no TlsClientContext: set once by a main()
// from --ca / CORRAL_CA, else the system's store. A process-wide default (like OpenSSL's own
// default verify paths) so that every client the CLI and the agent make, to any of the
// head's addresses, verifies the same way without each call site carrying the context.
void SetDefaultClientTls(std::shared_ptr<const TlsClientContext> tls);
std::shared_ptr<const TlsClientContext> DefaultClientTls();

// Why a client handshake failed, in words: the verification error when there was one
// ("TLS certificate verify failed: hostname mismatch"), else the TLS error.
std::string HandshakeFailure(ssl_st* ssl, const std::string& tls_error, const std::string& trust);

class TlsServerContext {
 public:
  // Errors: kInvalidArgument naming the file, or saying that the key does not match.
  static Result<std::shared_ptr<TlsServerContext>> FromFiles(const std::string& cert_path,
                                                             const std::string& key_path);
  static Result<std::shared_ptr<TlsServerContext>> FromPem(const std::string& cert_pem,
                                                           const std::string& key_pem);
  // No certificate yet (every handshake fails) until Replace(): an agent's log endpoint
  // listens before the head has issued its certificate.
  static std::shared_ptr<TlsServerContext> WithoutCertificate();

  ~TlsServerContext();
  // New connections use the new certificate; open ones keep theirs.
  Status Replace(const std::string& cert_pem, const std::string& key_pem);
  std::shared_ptr<boost::asio::ssl::context> Current() const;
  bool has_certificate() const;

 private:
  TlsServerContext() = default;
  mutable std::mutex mu_;
  std::shared_ptr<boost::asio::ssl::context> ctx_;  // GUARDED_BY(mu_)
  bool has_cert_ = false;                           // GUARDED_BY(mu_)
};

}  // namespace corral::net
