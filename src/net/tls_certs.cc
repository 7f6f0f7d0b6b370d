#include "net/tls_certs.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include "net/strings_internal.h"

namespace corral::net {
namespace {

template <auto F>
struct Free {
  template <typename T>
  void operator()(T* p) const {
    F(p);
  }
};
using PKey = std::unique_ptr<EVP_PKEY, Free<EVP_PKEY_free>>;
using Cert = std::unique_ptr<X509, Free<X509_free>>;
using Req = std::unique_ptr<X509_REQ, Free<X509_REQ_free>>;
using Bio = std::unique_ptr<BIO, Free<BIO_free>>;
using Ext = std::unique_ptr<X509_EXTENSION, Free<X509_EXTENSION_free>>;
using Bn = std::unique_ptr<BIGNUM, Free<BN_free>>;

constexpr int kCaDays = 3650;

// The reason OpenSSL gives for its last failure (and clears its error queue).
std::string SslError(const std::string& what) {
  unsigned long e = ERR_get_error();
  std::string out = what;
  if (e != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    out += ": ";
    out += buf;
  }
  ERR_clear_error();
  return out;
}

Result<PKey> NewKey() {
  PKey key(EVP_EC_gen("P-256"));
  if (!key) return Internal(SslError("cannot generate an EC P-256 key"));
  return key;
}

std::string BioText(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(n));
}

std::string KeyPem(EVP_PKEY* key) {
  Bio bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr);
  return BioText(bio.get());
}

std::string CertPem(X509* cert) {
  Bio bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(bio.get(), cert);
  return BioText(bio.get());
}

Result<Cert> ParseCert(const std::string& pem) {
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  Cert cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!cert) return InvalidArgument(SslError("not a PEM certificate"));
  return cert;
}

Result<PKey> ParseKey(const std::string& pem) {
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  PKey key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!key) return InvalidArgument(SslError("not a PEM private key"));
  return key;
}

bool IsIp(std::string_view s) {
  unsigned char buf[16];
  const std::string str(s);
  return inet_pton(AF_INET, str.c_str(), buf) == 1 || inet_pton(AF_INET6, str.c_str(), buf) == 1;
}

// "DNS:a,IP:1.2.3.4" for X509V3_EXT_conf_nid; a name with a comma would split it.
Result<std::string> SanList(const std::vector<std::string>& sans) {
  std::string out;
  for (const auto& raw : sans) {
    const std::string s = StripBrackets(raw);
    if (s.empty() || s.find_first_of(", \t\r\n") != std::string::npos) {
      return InvalidArgument("TLS name '" + raw + "': want a host name or an IP address (no " +
                             "spaces or commas)");
    }
    if (!out.empty()) out.push_back(',');
    out += (IsIp(s) ? "IP:" : "DNS:") + s;
  }
  return out;
}

Status AddExt(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  Ext ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) {
    return Internal(SslError(std::string("cannot add ") + OBJ_nid2sn(nid) + " = " + value));
  }
  return Status::Ok();
}

// A certificate for `pubkey` named `cn`, not yet signed. issuer == nullptr: self-issued.
Result<Cert> NewCert(EVP_PKEY* pubkey, const std::string& cn, X509* issuer, int days) {
  Cert cert(X509_new());
  X509_set_version(cert.get(), 2);
  Bn serial(BN_new());
  BN_rand(serial.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY);  // positive, 16 bytes
  BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get()));
  // An hour of slack for clocks a little behind the head's.
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), static_cast<long>(days) * 86400);
  X509_set_pubkey(cert.get(), pubkey);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>("corral"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : name);
  return cert;
}

Result<std::string> SignLeaf(const CertAndKey& ca, EVP_PKEY* pubkey, const std::string& cn,
                             const std::vector<std::string>& sans, int days = kLeafCertDays) {
  auto san_list = SanList(sans);
  if (!san_list.ok()) return san_list.status();
  if (sans.empty()) return InvalidArgument("a certificate needs at least one name");
  auto ca_cert = ParseCert(ca.cert_pem);
  if (!ca_cert.ok()) return Internal("the CA certificate: " + ca_cert.status().message());
  auto ca_key = ParseKey(ca.key_pem);
  if (!ca_key.ok()) return Internal("the CA key: " + ca_key.status().message());
  auto cert = NewCert(pubkey, cn, ca_cert->get(), days);
  if (!cert.ok()) return cert.status();
  X509* c = cert->get();
  CORRAL_RETURN_IF_ERROR(AddExt(c, ca_cert->get(), NID_basic_constraints, "critical,CA:FALSE"));
  CORRAL_RETURN_IF_ERROR(
      AddExt(c, ca_cert->get(), NID_key_usage, "critical,digitalSignature,keyAgreement"));
  CORRAL_RETURN_IF_ERROR(AddExt(c, ca_cert->get(), NID_ext_key_usage, "serverAuth,clientAuth"));
  CORRAL_RETURN_IF_ERROR(AddExt(c, ca_cert->get(), NID_subject_key_identifier, "hash"));
  CORRAL_RETURN_IF_ERROR(AddExt(c, ca_cert->get(), NID_authority_key_identifier, "keyid:always"));
  CORRAL_RETURN_IF_ERROR(AddExt(c, ca_cert->get(), NID_subject_alt_name, *san_list));
  if (X509_sign(c, ca_key->get(), EVP_sha256()) == 0) {
    return Internal(SslError("cannot sign the certificate"));
  }
  return CertPem(c);
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": " + std::strerror(errno));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Writes through a temporary file in the same directory and renames it over `path`, so a
// crash leaves either the old file or the new one, and a key is never readable by others.
Status WriteFileAtomically(const std::string& path, const std::string& text, mode_t mode) {
  const std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) return Internal("cannot create " + tmp + ": " + std::strerror(errno));
  bool ok = ::fchmod(fd, mode) == 0 &&
            ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
            ::fsync(fd) == 0;
  const int saved = errno;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return Internal("cannot write " + path + ": " + std::strerror(ok ? errno : saved));
  }
  return Status::Ok();
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string Normalized(const std::string& san) {
  std::string s = StripBrackets(san);
  unsigned char buf[16];
  char text[INET6_ADDRSTRLEN];
  if (inet_pton(AF_INET6, s.c_str(), buf) == 1 && inet_ntop(AF_INET6, buf, text, sizeof text)) {
    return text;
  }
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

Result<CertAndKey> MakeCa(const std::string& common_name) {
  auto key = NewKey();
  if (!key.ok()) return key.status();
  auto cert = NewCert(key->get(), common_name, nullptr, kCaDays);
  if (!cert.ok()) return cert.status();
  X509* c = cert->get();
  CORRAL_RETURN_IF_ERROR(AddExt(c, c, NID_basic_constraints, "critical,CA:TRUE,pathlen:0"));
  CORRAL_RETURN_IF_ERROR(AddExt(c, c, NID_key_usage, "critical,keyCertSign,cRLSign"));
  CORRAL_RETURN_IF_ERROR(AddExt(c, c, NID_subject_key_identifier, "hash"));
  if (X509_sign(c, key->get(), EVP_sha256()) == 0) {
    return Internal(SslError("cannot sign the CA certificate"));
  }
  return CertAndKey{CertPem(c), KeyPem(key->get())};
}

Result<CertAndKey> IssueCertificate(const CertAndKey& ca, const std::string& common_name,
                                    const std::vector<std::string>& sans, int days) {
  if (days <= 0) return InvalidArgument("certificate validity: want a positive number of days");
  auto key = NewKey();
  if (!key.ok()) return key.status();
  auto cert = SignLeaf(ca, key->get(), common_name, sans, days);
  if (!cert.ok()) return cert.status();
  return CertAndKey{std::move(*cert), KeyPem(key->get())};
}

Result<KeyAndCsr> MakeKeyAndCsr(const std::string& common_name) {
  auto key = NewKey();
  if (!key.ok()) return key.status();
  Req req(X509_REQ_new());
  X509_REQ_set_version(req.get(), 0);
  X509_NAME* name = X509_REQ_get_subject_name(req.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  X509_REQ_set_pubkey(req.get(), key->get());
  if (X509_REQ_sign(req.get(), key->get(), EVP_sha256()) == 0) {
    return Internal(SslError("cannot sign the certificate request"));
  }
  Bio bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509_REQ(bio.get(), req.get());
  return KeyAndCsr{KeyPem(key->get()), BioText(bio.get())};
}

Result<std::string> SignCsr(const CertAndKey& ca, const std::string& csr_pem,
                            const std::string& common_name, const std::vector<std::string>& sans) {
  Bio bio(BIO_new_mem_buf(csr_pem.data(), static_cast<int>(csr_pem.size())));
  Req req(PEM_read_bio_X509_REQ(bio.get(), nullptr, nullptr, nullptr));
  if (!req) return InvalidArgument(SslError("csr: not a PEM certificate request"));
  EVP_PKEY* pub = X509_REQ_get0_pubkey(req.get());
  if (pub == nullptr || X509_REQ_verify(req.get(), pub) != 1) {
    return InvalidArgument(SslError("csr: its signature does not match its key"));
  }
  return SignLeaf(ca, pub, common_name, sans);
}

Result<int64_t> CertificateNotAfter(const std::string& cert_pem) {
  auto cert = ParseCert(cert_pem);
  if (!cert.ok()) return cert.status();
  struct tm tm {};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(cert->get()), &tm) != 1) {
    return Internal(SslError("cannot read the certificate's expiry"));
  }
  return static_cast<int64_t>(timegm(&tm));
}

Result<std::vector<std::string>> CertificateSans(const std::string& cert_pem) {
  auto cert = ParseCert(cert_pem);
  if (!cert.ok()) return cert.status();
  std::vector<std::string> out;
  auto* names = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert->get(), NID_subject_alt_name, nullptr, nullptr));
  if (names == nullptr) return out;
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* gn = sk_GENERAL_NAME_value(names, i);
    if (gn->type == GEN_DNS) {
      const auto* s = gn->d.dNSName;
      out.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                       static_cast<size_t>(ASN1_STRING_length(s)));
    } else if (gn->type == GEN_IPADD) {
      const auto* s = gn->d.iPAddress;
      char text[INET6_ADDRSTRLEN] = {};
      const int len = ASN1_STRING_length(s);
      if (len == 4 || len == 16) {
        inet_ntop(len == 4 ? AF_INET : AF_INET6, ASN1_STRING_get0_data(s), text, sizeof text);
        out.emplace_back(text);
      }
    }
  }
  GENERAL_NAMES_free(names);
  return out;
}

Result<HeadTls> EnsureHeadTls(const std::string& dir, const std::vector<std::string>& server_sans) {
  HeadTls tls;
  tls.dir = dir;
  tls.ca_path = dir + "/ca.pem";
  const std::string ca_key_path = dir + "/ca-key.pem";
  tls.server_cert_path = dir + "/server.pem";
  tls.server_key_path = dir + "/server-key.pem";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Internal("cannot create " + dir + ": " + ec.message());
  ::chmod(dir.c_str(), 0700);

  if (Exists(tls.ca_path) || Exists(ca_key_path)) {
    auto cert = ReadFile(tls.ca_path);
    auto key = ReadFile(ca_key_path);
    if (!cert.ok()) return Internal("the head's CA: " + cert.status().message());
    if (!key.ok()) return Internal("the head's CA: " + key.status().message());
    tls.ca = {std::move(*cert), std::move(*key)};
    if (auto c = ParseCert(tls.ca.cert_pem); !c.ok()) {
      return Internal(tls.ca_path + ": " + c.status().message());
    }
    if (auto k = ParseKey(tls.ca.key_pem); !k.ok()) {
      return Internal(ca_key_path + ": " + k.status().message());
    }
  } else {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    auto ca = MakeCa(std::string("corral CA (") + host + ")");
    if (!ca.ok()) return ca.status();
    tls.ca = std::move(*ca);
    // The key first: a ca.pem without its key would be unusable.
    CORRAL_RETURN_IF_ERROR(WriteFileAtomically(ca_key_path, tls.ca.key_pem, 0600));
    CORRAL_RETURN_IF_ERROR(WriteFileAtomically(tls.ca_path, tls.ca.cert_pem, 0644));
    tls.created_ca = true;
  }
  if (server_sans.empty()) return tls;

  bool covered = false;
  if (!tls.created_ca && Exists(tls.server_cert_path) && Exists(tls.server_key_path)) {
    auto cert = ReadFile(tls.server_cert_path);
    auto have =
        cert.ok() ? CertificateSans(*cert) : Result<std::vector<std::string>>(cert.status());
    if (have.ok()) {
      std::set<std::string> names;
      for (const auto& s : *have) names.insert(Normalized(s));
      covered = std::all_of(server_sans.begin(), server_sans.end(),
                            [&](const std::string& s) { return names.count(Normalized(s)) > 0; });
    }
    // Rotation: a certificate close to its end is reissued now, at a start, rather than let
    // clients fail on the day it expires.
    auto until = cert.ok() ? CertificateNotAfter(*cert) : Result<int64_t>(cert.status());
    if (!until.ok() ||
        *until - static_cast<int64_t>(::time(nullptr)) < int64_t{kRenewServerCertDays} * 86400) {
      covered = false;
    }
  }
  if (covered) return tls;
  auto server = IssueCertificate(tls.ca, "corral head", server_sans);
  if (!server.ok()) return server.status();
  CORRAL_RETURN_IF_ERROR(WriteFileAtomically(tls.server_key_path, server->key_pem, 0600));
  CORRAL_RETURN_IF_ERROR(WriteFileAtomically(tls.server_cert_path, server->cert_pem, 0644));
  tls.issued_server = true;
  return tls;
}

std::vector<std::string> DefaultHeadSans(const std::string& listen_host) {
  std::set<std::string> names = {"localhost", "127.0.0.1", "::1"};
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0 && host[0] != '\0') {
    names.insert(host);
    addrinfo hints{};
    hints.ai_flags = AI_CANONNAME;
    addrinfo* res = nullptr;
    if (::getaddrinfo(host, nullptr, &hints, &res) == 0) {
      if (res->ai_canonname != nullptr && res->ai_canonname[0] != '\0') {
        names.insert(res->ai_canonname);
      }
      ::freeaddrinfo(res);
    }
  }
  const std::string listen = StripBrackets(listen_host);
  const bool wildcard = listen.empty() || listen == "0.0.0.0" || listen == "::";
  if (!wildcard) names.insert(listen);
  if (wildcard) {
    ifaddrs* ifs = nullptr;
    if (::getifaddrs(&ifs) == 0) {
      for (ifaddrs* i = ifs; i != nullptr; i = i->ifa_next) {
        if (i->ifa_addr == nullptr || (i->ifa_flags & IFF_UP) == 0) continue;
        char text[INET6_ADDRSTRLEN] = {};
        if (i->ifa_addr->sa_family == AF_INET) {
          inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, text,
                    sizeof text);
        } else if (i->ifa_addr->sa_family == AF_INET6) {
          const auto* a6 = reinterpret_cast<sockaddr_in6*>(i->ifa_addr);
          if (IN6_IS_ADDR_LINKLOCAL(&a6->sin6_addr)) continue;  // needs a zone; not a SAN
          inet_ntop(AF_INET6, &a6->sin6_addr, text, sizeof text);
        }
        if (text[0] != '\0') names.insert(text);
      }
      ::freeifaddrs(ifs);
    }
  }
  return {names.begin(), names.end()};
}

}  // namespace corral::net
