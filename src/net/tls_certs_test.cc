// The head's small PKI: CA, server certificates, CSRs, and STATE_DIR/tls on disk.
#include "net/tls_certs.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace corral::net {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

mode_t Mode(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

bool Has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/corral-tls-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(TlsCerts, IssuedCertificateCarriesItsDnsAndIpNames) {
  auto ca = MakeCa("test CA");
  ASSERT_TRUE(ca.ok()) << ca.status().ToString();
  auto leaf = IssueCertificate(*ca, "head", {"head.example", "10.1.2.3", "[::1]"});
  ASSERT_TRUE(leaf.ok()) << leaf.status().ToString();
  auto sans = CertificateSans(leaf->cert_pem);
  ASSERT_TRUE(sans.ok());
  EXPECT_EQ(*sans, (std::vector<std::string>{"head.example", "10.1.2.3", "::1"}));
  EXPECT_NE(leaf->key_pem.find("BEGIN PRIVATE KEY"), std::string::npos);
  EXPECT_NE(leaf->key_pem, ca->key_pem);
}

TEST(TlsCerts, ANameWithACommaIsRefusedByName) {
  auto ca = MakeCa("test CA");
  ASSERT_TRUE(ca.ok());
  auto leaf = IssueCertificate(*ca, "head", {"ok.example", "evil.example,IP:1.2.3.4"});
  ASSERT_FALSE(leaf.ok());
  EXPECT_EQ(leaf.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(leaf.status().message().find("evil.example,IP:1.2.3.4"), std::string::npos);
}

TEST(TlsCerts, ACsrIsSignedForTheNamesTheSignerChoosesNotItsOwn) {
  auto ca = MakeCa("test CA");
  ASSERT_TRUE(ca.ok());
  auto csr = MakeKeyAndCsr("node-a.evil.example");
  ASSERT_TRUE(csr.ok());
  auto cert = SignCsr(*ca, csr->csr_pem, "node-a", {"10.0.0.5"});
  ASSERT_TRUE(cert.ok()) << cert.status().ToString();
  EXPECT_EQ(*CertificateSans(*cert), std::vector<std::string>{"10.0.0.5"});

  auto garbage = SignCsr(*ca, "-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n", "x", {"x"});
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(garbage.status().message().find("csr"), std::string::npos);
}

TEST(TlsCerts, HeadTlsIsMadeOnceWithPrivateKeysAndReusedOnRestart) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/tls";
  auto first = EnsureHeadTls(dir, {"localhost", "127.0.0.1", "head.example"});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(first->created_ca);
  EXPECT_TRUE(first->issued_server);
  EXPECT_EQ(Mode(dir), 0700u);
  EXPECT_EQ(Mode(dir + "/ca-key.pem"), 0600u);
  EXPECT_EQ(Mode(dir + "/server-key.pem"), 0600u);
  EXPECT_EQ(Mode(dir + "/ca.pem"), 0644u);
  EXPECT_EQ(Mode(dir + "/server.pem"), 0644u);
  auto sans = CertificateSans(Slurp(dir + "/server.pem"));
  ASSERT_TRUE(sans.ok());
  EXPECT_TRUE(Has(*sans, "head.example"));
  EXPECT_TRUE(Has(*sans, "127.0.0.1"));
  const std::string ca = Slurp(dir + "/ca.pem");
  const std::string server = Slurp(dir + "/server.pem");
  const std::string server_key = Slurp(dir + "/server-key.pem");

  // A restart with the same names: nothing is regenerated.
  auto again = EnsureHeadTls(dir, {"127.0.0.1", "head.example"});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_FALSE(again->created_ca);
  EXPECT_FALSE(again->issued_server);
  EXPECT_EQ(Slurp(dir + "/ca.pem"), ca);
  EXPECT_EQ(Slurp(dir + "/server.pem"), server);
  EXPECT_EQ(Slurp(dir + "/server-key.pem"), server_key);
  EXPECT_EQ(again->ca.cert_pem, ca);

  // A new name (--tls-san): the same CA issues a new server certificate.
  auto more = EnsureHeadTls(dir, {"127.0.0.1", "head.example", "10.9.8.7"});
  ASSERT_TRUE(more.ok());
  EXPECT_FALSE(more->created_ca);
  EXPECT_TRUE(more->issued_server);
  EXPECT_EQ(Slurp(dir + "/ca.pem"), ca);
  EXPECT_TRUE(Has(*CertificateSans(Slurp(dir + "/server.pem")), "10.9.8.7"));
  EXPECT_EQ(Mode(dir + "/server-key.pem"), 0600u);
}

// Rotation: a server certificate with less than 30 days left is reissued at start by the same
// CA (clients keep their ca.pem); one with more is kept.
TEST(TlsCerts, AServerCertificateNearItsEndIsReissuedAtStart) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/tls";
  const std::vector<std::string> names = {"127.0.0.1", "head.example"};
  auto first = EnsureHeadTls(dir, names);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  const int64_t now = ::time(nullptr);
  auto fresh = CertificateNotAfter(Slurp(dir + "/server.pem"));
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  EXPECT_NEAR(static_cast<double>(*fresh - now), 730.0 * 86400, 2 * 3600.0);

  auto ending = IssueCertificate(first->ca, "corral head", names, 10);
  ASSERT_TRUE(ending.ok());
  std::ofstream(dir + "/server.pem", std::ios::trunc) << ending->cert_pem;
  std::ofstream(dir + "/server-key.pem", std::ios::trunc) << ending->key_pem;
  ASSERT_LT(*CertificateNotAfter(Slurp(dir + "/server.pem")) - now, 11 * 86400);
  const std::string ca = Slurp(dir + "/ca.pem");

  auto renewed = EnsureHeadTls(dir, names);
  ASSERT_TRUE(renewed.ok()) << renewed.status().ToString();
  EXPECT_FALSE(renewed->created_ca);
  EXPECT_TRUE(renewed->issued_server) << "10 days left: reissued";
  EXPECT_GT(*CertificateNotAfter(Slurp(dir + "/server.pem")) - now, 700 * 86400);
  EXPECT_EQ(Slurp(dir + "/ca.pem"), ca) << "the same CA";
  EXPECT_NE(Slurp(dir + "/server.pem"), ending->cert_pem);

  auto kept = EnsureHeadTls(dir, names);
  ASSERT_TRUE(kept.ok());
  EXPECT_FALSE(kept->issued_server) << "two years left: kept";
  EXPECT_FALSE(IssueCertificate(first->ca, "x", names, 0).ok());
}

TEST(TlsCerts, ACorruptCaIsAnErrorNotSilentlyReplaced) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/tls";
  ASSERT_TRUE(EnsureHeadTls(dir, {"localhost"}).ok());
  { std::ofstream(dir + "/ca.pem") << "not a certificate"; }
  auto r = EnsureHeadTls(dir, {"localhost"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("ca.pem"), std::string::npos);
  EXPECT_EQ(Slurp(dir + "/ca.pem"), "not a certificate");
}

TEST(TlsCerts, DefaultNamesCoverLoopbackAndTheListenAddress) {
  auto sans = DefaultHeadSans("10.20.30.40");
  EXPECT_TRUE(Has(sans, "localhost"));
  EXPECT_TRUE(Has(sans, "127.0.0.1"));
  EXPECT_TRUE(Has(sans, "::1"));
  EXPECT_TRUE(Has(sans, "10.20.30.40"));
  auto wildcard = DefaultHeadSans("0.0.0.0");
  EXPECT_FALSE(Has(wildcard, "0.0.0.0"));
  EXPECT_TRUE(Has(wildcard, "127.0.0.1"));
}

}  // namespace
}  // namespace corral::net
