// Certificates for Corral's own small PKI (OpenSSL, EC P-256 keys, SHA-256 signatures): the
// head's CA, the head's server certificate, and the certificates the head issues to agents'
// log endpoints from their CSRs. Everything is PEM text in memory; files are handled by
// EnsureHeadTls() alone. Pure computation apart from EnsureHeadTls(); any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace corral::net {

struct CertAndKey {
  std::string cert_pem;
  std::string key_pem;  // PKCS#8
};

struct KeyAndCsr {
  std::string key_pem;
  std::string csr_pem;
};

// A self-signed CA certificate (CA:TRUE, keyCertSign) valid for 10 years, with a new key.
Result<CertAndKey> MakeCa(const std::string& common_name);

// How long a leaf certificate (the head's, an agent's) is valid by default: 2 years.
constexpr int kLeafCertDays = 730;

// A leaf certificate (serverAuth and clientAuth) for `sans`, valid for `days`, signed
// by `ca`, with a new key. An IP literal ("10.0.0.1", "::1", "[::1]") becomes an IP SAN, anything
// else a DNS SAN. Errors: kInvalidArgument naming the SAN that is empty or holds a comma or space.
Result<CertAndKey> IssueCertificate(const CertAndKey& ca, const std::string& common_name,
                                    const std::vector<std::string>& sans, int days = kLeafCertDays);

// When a certificate stops being valid (notAfter), in seconds since the epoch.
Result<int64_t> CertificateNotAfter(const std::string& cert_pem);

// A head reissues its server certificate at start when it has less than this left.
constexpr int kRenewServerCertDays = 30;

// A new key and a certificate signing request for it (what an agent sends at registration).
Result<KeyAndCsr> MakeKeyAndCsr(const std::string& common_name);

// Signs the public key of `csr_pem` (after checking the CSR's own signature) into a leaf
// certificate for `sans`. The names the CSR asks for are ignored: the signer decides them
// (the head uses the address the agent registered with).
Result<std::string> SignCsr(const CertAndKey& ca, const std::string& csr_pem,
                            const std::string& common_name, const std::vector<std::string>& sans);

// The subject alternative names of a certificate: DNS names as they are, IPs as text.
Result<std::vector<std::string>> CertificateSans(const std::string& cert_pem);

// The head's TLS directory (STATE_DIR/tls): ca.pem, ca-key.pem (0600), server.pem,
// server-key.pem (0600).
struct HeadTls {
  std::string dir;
  CertAndKey ca;
  std::string ca_path, server_cert_path, server_key_path;
  bool created_ca = false;     // this call made the CA
  bool issued_server = false;  // this call (re)issued the server certificate
};

// Loads the CA in `dir`, making it (and `dir`, 0700) on first use, and, when `server_sans`
// is not empty, a server certificate covering them: an existing one that covers them all and
// is valid for kRenewServerCertDays more is kept; one that misses some or expires sooner is
// reissued by the same CA (so clients' ca.pem still works).
// Keys are written 0600 through a temporary file and rename (never readable by others).
Result<HeadTls> EnsureHeadTls(const std::string& dir, const std::vector<std::string>& server_sans);

// What a head's certificate should cover by default: localhost, 127.0.0.1, ::1, this host's
// name (and its canonical name), the listen host, and, when it listens on every address
// (0.0.0.0 or ::), the addresses of this host's interfaces. Sorted, without duplicates.
std::vector<std::string> DefaultHeadSans(const std::string& listen_host);

}  // namespace corral::net
