// A TLS-only cluster: `corral head --tls` and an agent over HTTPS, the CLI with --ca /
// CORRAL_CA, and the head reading a job's log from the agent's TLS log endpoint with the
// certificate it issued at registration. Plain HTTP, another CA and another name get nothing.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cluster_fixture.h"
#include "net/tls_certs.h"

namespace corral::testing {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::string HostPort(const std::string& addr) { return addr.substr(addr.find("://") + 3); }

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

CommandResult CorralWith(const LocalCluster& c, const std::string& addr, const std::string& ca,
                         const std::vector<std::string>& args) {
  std::vector<std::string> argv = {CorralBin()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, {{"CORRAL_ADDR", addr},
                           {"CORRAL_TOKEN", c.token()},
                           {"CORRAL_CA", ca},
                           {"CORRAL_CONFIG", c.dir() + "/no-such-config.json"}});
}

TEST(Tls, AClusterOverTlsRunsAJobAndServesItsLogThroughTheHead) {
  LocalCluster c("tls", 1, 1, {"--tls"});
  ASSERT_TRUE(c.tls()) << c.addr();

  // The head's PKI on disk: keys only the head's user can read.
  struct stat st {};
  ASSERT_EQ(stat((c.head_dir() + "/tls/ca-key.pem").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat((c.head_dir() + "/tls/server-key.pem").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  const std::string id = c.Submit({"--", "/bin/sh", "-c", "echo hello over tls"});
  auto waited = c.Corral({"wait", id, "--timeout", "30s"});
  ASSERT_EQ(waited.exit_code, 0) << waited.out << waited.err;
  // The head fetched this from the agent's log endpoint over TLS, verifying the certificate
  // it issued to the agent at registration.
  auto logs = c.Corral({"logs", id});
  ASSERT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_EQ(logs.out, "hello over tls\n");

  // --ca on the command line works as CORRAL_CA does.
  auto flag = CorralWith(c, c.addr(), "", {"jobs", "--ca", c.ca_path()});
  EXPECT_EQ(flag.exit_code, 0) << flag.err;

  // Plain HTTP on the TLS port: the connection is closed unanswered.
  auto plain = CorralWith(c, "http://" + HostPort(c.addr()), "", {"jobs"});
  EXPECT_NE(plain.exit_code, 0) << plain.out;
  EXPECT_NE(plain.err.find("cannot reach the head"), std::string::npos) << plain.err;

  // A client trusting another CA (the system's store, or someone else's CA) is refused.
  auto other = net::MakeCa("not the head's CA");
  ASSERT_TRUE(other.ok());
  Write(c.dir() + "/other-ca.pem", other->cert_pem);
  auto wrong_ca = CorralWith(c, c.addr(), c.dir() + "/other-ca.pem", {"jobs"});
  EXPECT_NE(wrong_ca.exit_code, 0) << wrong_ca.out;
  EXPECT_NE(wrong_ca.err.find("certificate verify failed"), std::string::npos) << wrong_ca.err;
  auto system_ca = CorralWith(c, c.addr(), "", {"jobs"});
  EXPECT_NE(system_ca.exit_code, 0) << system_ca.out;

  // A TLS head issues log endpoint certificates, so a registration without a CSR (an older
  // agent) is refused, naming the field, and registers nothing.
  auto no_csr = RunCommand(
      {"/usr/bin/curl", "-sS", "--max-time", "5", "--cacert", c.ca_path(), "-w", "\n%{http_code}",
       "-H", "Authorization: Bearer " + Trim(Slurp(c.head_dir() + "/join.token")), "-d",
       R"({"name":"intruder","address":"127.0.0.1:1"})", c.addr() + "/v1/agent/register"});
  EXPECT_NE(no_csr.out.find("csr_pem"), std::string::npos) << no_csr.out << no_csr.err;
  EXPECT_NE(no_csr.out.find("\n400"), std::string::npos) << no_csr.out;
  EXPECT_EQ(c.Corral({"nodes"}).out.find("intruder"), std::string::npos);

  // The agent's log endpoint refuses plain HTTP too.
  auto nodes = c.Corral({"nodes", "-o", "json"});
  std::smatch m;
  std::regex addr_re("\"address\":\\s*\"([0-9.]+:[0-9]+)\"");
  ASSERT_TRUE(std::regex_search(nodes.out, m, addr_re)) << nodes.out;
  auto agent_plain =
      RunCommand({"/usr/bin/curl", "-sS", "--max-time", "5", "http://" + m[1].str() + "/metrics"});
  EXPECT_NE(agent_plain.exit_code, 0) << agent_plain.out;
}

// An operator's own certificate (--tls-cert/--tls-key) is served, and a client that reaches
// the head by a name the certificate does not carry is refused.
TEST(Tls, AnOperatorsCertificateIsServedAndItsNamesAreChecked) {
  const std::string dir =
      std::filesystem::temp_directory_path() / ("corral-it-tls-own-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto ca = net::MakeCa("operator CA");
  ASSERT_TRUE(ca.ok());
  auto cert = net::IssueCertificate(*ca, "head", {"127.0.0.1", "head.example"});
  ASSERT_TRUE(cert.ok());
  Write(dir + "/ca.pem", ca->cert_pem);
  Write(dir + "/head.pem", cert->cert_pem);
  Write(dir + "/head-key.pem", cert->key_pem);
  std::string addr;
  {
    Daemon head({CorralBin(), "head", "--state-dir", dir + "/state", "--listen", "127.0.0.1:0",
                 "--tls-cert", dir + "/head.pem", "--tls-key", dir + "/head-key.pem"},
                dir + "/head.log");
    std::regex re("listening on (https://[0-9.:]+)");
    ASSERT_TRUE(WaitUntil(20000, [&] {
      std::smatch m;
      const std::string log = Slurp(dir + "/head.log");
      if (!std::regex_search(log, m, re)) return false;
      addr = m[1].str();
      return true;
    })) << Slurp(dir + "/head.log");
    const std::string token = Trim(Slurp(dir + "/state/admin.token"));
    auto run = [&](const std::string& a) {
      return RunCommand({CorralBin(), "jobs"}, {{"CORRAL_ADDR", a},
                                                {"CORRAL_TOKEN", token},
                                                {"CORRAL_CA", dir + "/ca.pem"},
                                                {"CORRAL_CONFIG", dir + "/none.json"}});
    };
    auto ok = run(addr);
    EXPECT_EQ(ok.exit_code, 0) << ok.err;
    auto wrong_name =
        run("https://localhost:" + HostPort(addr).substr(HostPort(addr).find(':') + 1));
    EXPECT_NE(wrong_name.exit_code, 0) << wrong_name.out;
    EXPECT_NE(wrong_name.err.find("hostname mismatch"), std::string::npos) << wrong_name.err;
    // The head's own CA still exists, for the certificates it issues to agents.
    EXPECT_TRUE(std::filesystem::exists(dir + "/state/tls/ca-key.pem"));
    EXPECT_FALSE(std::filesystem::exists(dir + "/state/tls/server.pem"));
  }
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
}

TEST(Tls, BadTlsFlagsAreRefusedNamingTheFlag) {
  auto half = RunCommand({CorralBin(), "head", "--state-dir", "/tmp/corral-never-made", "--listen",
                          "127.0.0.1:0", "--tls-cert", "/dev/null"});
  EXPECT_EQ(half.exit_code, 2);
  EXPECT_NE(half.err.find("--tls-key"), std::string::npos) << half.err;
  auto both = RunCommand({CorralBin(), "head", "--state-dir", "/tmp/corral-never-made", "--listen",
                          "127.0.0.1:0", "--tls", "--no-tls"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("--no-tls"), std::string::npos) << both.err;
  EXPECT_FALSE(std::filesystem::exists("/tmp/corral-never-made"));
}

}  // namespace
}  // namespace corral::testing
