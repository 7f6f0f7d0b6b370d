// Each node's own credential and the head's relay grants, on a real head and two real agents
// over loopback: the join token opens no relay on an agent, a grant opens only its run on its
// node until it expires, a node's credential opens nothing on another node or at the head for
// another node, and a removed node's credential is refused; exec and logs still work end to end
// through the head.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cluster_fixture.h"
#include "core/codec.h"
#include "core/relay_grant.h"
#include "core/time.h"
#include "net/http_client.h"

namespace corral::testing {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

std::string CredentialPath(const LocalCluster& c, const std::string& node) {
  return c.dir() + "/agents/" + node + "/node.credential";
}

std::string Grant(const std::string& credential, const std::string& node, const std::string& run,
                  DurationMs ttl_ms = kRelayGrantLifetimeMs) {
  return SignRelayGrant(NodeGrantKey(credential), {node, run, SystemClock().Now() + ttl_ms});
}

// An answer's status and, for a refusal, its error code ("" for none).
std::pair<int, std::string> Ask(const std::string& address, const std::string& bearer,
                                const std::string& method, const std::string& path,
                                const std::string& body = "",
                                std::map<std::string, std::string> headers = {}) {
  net::HttpClient client("http://" + address, bearer);
  headers["Connection"] = "close";
  auto r = client.Request(method, path, body, 10s, headers);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return {0, ""};
  Json j = Json::parse(r->body, nullptr, false);
  std::string code = j.is_object() && j.contains("error") ? j["error"].value("code", "") : "";
  return {r->status, code};
}

std::string NodeAddress(const LocalCluster& c, const std::string& node) {
  net::HttpClient head(c.addr(), c.token());
  auto r = head.Get("/v1/nodes/" + node, 10s);
  EXPECT_TRUE(r.ok() && r->status == 200);
  return r.ok() ? Json::parse(r->body, nullptr, false)["node"].value("address", "") : "";
}

// A sync of `node` with `credential`, as its agent would send it: the head's status. Of an
// agent epoch the node never had, so that an accepted one changes nothing (it is answered
// "register again" before any report is read).
int SyncAs(const LocalCluster& c, const std::string& credential, const std::string& node) {
  SyncRequest req;
  req.node = node;
  req.agent_epoch = uint64_t{1} << 40;
  net::HttpClient head(c.addr(), credential);
  auto r = head.Post("/v1/agent/sync", ToJson(req).dump(), 10s);
  EXPECT_TRUE(r.ok());
  return r.ok() ? r->status : 0;
}

using P = std::pair<int, std::string>;

TEST(NodeCredentials, EachNodesCredentialAndEachGrantOpenOnlyTheirOwn) {
  LocalCluster c("nodecreds", 2, 1);
  const std::string id =
      c.Submit({"--gpus", "1", "--", "sh", "-c", "echo hello-from-the-run; exec sleep 120"});
  const std::string run = id + ".1";
  std::string a;  // the job's node
  ASSERT_TRUE(WaitUntil(30000, [&] {
    Json job = Json::parse(c.Corral({"show", id, "-o", "json"}).out, nullptr, false);
    if (!job.is_object() || job.value("state", "") != "running") return false;
    a = job["runs"][0]["placement"][0].value("node", "");
    return true;
  }));
  const std::string b = a == "node1" ? "node2" : "node1";
  const std::string addr_a = NodeAddress(c, a), addr_b = NodeAddress(c, b);
  const std::string join = ReadFile(c.head_dir() + "/join.token");
  const std::string cred_a = ReadFile(CredentialPath(c, a)),
                    cred_b = ReadFile(CredentialPath(c, b));
  ASSERT_EQ(cred_a.size(), 64u);
  ASSERT_NE(cred_a, cred_b);
  struct stat st {};
  ASSERT_EQ(stat(CredentialPath(c, a).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "the node's credential is its agent's alone";
  const std::string logs = "/v1/runs/" + run + "/logs";
  const std::string exec = "/v1/runs/" + run + "/exec";
  const std::string exec_body = R"({"command":["true"]})";
  const std::map<std::string, std::string> notebook = {{"X-Corral-Run", run}};

  // The join token, and a node's own credential, open no relay on any agent.
  for (const std::string& bearer : {join, cred_a, cred_b}) {
    EXPECT_EQ(Ask(addr_a, bearer, "GET", logs), (P{401, "missing"}));
    EXPECT_EQ(Ask(addr_a, bearer, "POST", exec, exec_body), (P{401, "missing"}));
    EXPECT_EQ(Ask(addr_a, bearer, "GET", "/s/" + id + "/", "", notebook), (P{401, "missing"}));
  }
  // A grant for this run on this node opens its log.
  {
    net::HttpClient agent("http://" + addr_a, Grant(cred_a, a, run));
    auto r = agent.Get(logs, 10s);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_NE(r->body.find("hello-from-the-run"), std::string::npos) << r->body;
  }
  // ... and no other run.
  EXPECT_EQ(Ask(addr_a, Grant(cred_a, a, id + ".2"), "GET", logs), (P{403, "other_run"}));
  EXPECT_EQ(Ask(addr_a, Grant(cred_a, a, "999999.1"), "POST", exec, exec_body),
            (P{403, "other_run"}));
  // A grant for node A means nothing on node B; node B's credential makes none for node A.
  EXPECT_EQ(Ask(addr_b, Grant(cred_a, a, run), "GET", logs), (P{401, "bad_signature"}));
  EXPECT_EQ(Ask(addr_b, Grant(cred_a, b, run), "GET", logs), (P{401, "bad_signature"}));
  EXPECT_EQ(Ask(addr_a, Grant(cred_b, a, run), "GET", logs), (P{401, "bad_signature"}));
  EXPECT_EQ(Ask(addr_a, Grant(cred_b, b, run), "GET", logs), (P{401, "bad_signature"}));
  // An expired grant is refused.
  EXPECT_EQ(Ask(addr_a, Grant(cred_a, a, run, -1000), "GET", logs), (P{401, "expired"}));
  EXPECT_EQ(Ask(addr_a, Grant(cred_a, a, run, -1000), "POST", exec, exec_body),
            (P{401, "expired"}));
  // At the head, a node's credential speaks for its own node alone.
  EXPECT_EQ(SyncAs(c, cred_b, a), 403);
  EXPECT_EQ(SyncAs(c, join, a), 403) << "the join token only joins";

  // Through the head, with its grants: logs and exec still work.
  auto logged = c.Corral({"logs", id});
  EXPECT_EQ(logged.exit_code, 0) << logged.err;
  EXPECT_NE(logged.out.find("hello-from-the-run"), std::string::npos) << logged.out;
  auto ran = c.Corral({"exec", id, "--", "sh", "-c", "echo exec-in-$CORRAL_JOB_ID"});
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_NE(ran.out.find("exec-in-" + id), std::string::npos) << ran.out;

  // A restarted agent registers again with its credential, which rotates it: the old one stops.
  c.KillAgent(b == "node1" ? 1 : 2, 15);
  c.StartAgent(b == "node1" ? 1 : 2);
  std::string rotated;
  ASSERT_TRUE(WaitUntil(30000, [&] {
    rotated = ReadFile(CredentialPath(c, b));
    return rotated.size() == 64 && rotated != cred_b;
  }));
  EXPECT_EQ(SyncAs(c, cred_b, b), 401) << "the credential before the rotation";
  // The removed node's credential is refused; a node with a live run is not removed.
  c.KillAgent(b == "node1" ? 1 : 2, 15);
  auto busy = c.Corral({"nodes", "rm", a});
  EXPECT_EQ(busy.exit_code, 1);
  EXPECT_NE(busy.err.find("live run(s) (job " + id + ")"), std::string::npos) << busy.err;
  auto none = c.Corral({"nodes", "rm", "no-such-node"});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("'no-such-node': no such node"), std::string::npos) << none.err;
  auto removed = c.Corral({"nodes", "rm", b});
  EXPECT_EQ(removed.exit_code, 0) << removed.err;
  EXPECT_NE(removed.out.find("removed"), std::string::npos) << removed.out;
  EXPECT_EQ(SyncAs(c, rotated, b), 401);
  EXPECT_EQ(c.Corral({"nodes", "show", b}).exit_code, 1);
  EXPECT_EQ(SyncAs(c, cred_a, a), 200) << "the other node's credential still works";
  c.Corral({"cancel", id});
}

// User tokens over real HTTP: one past its expiry and one revoked are refused (401, saying
// which), and a revoked token's open exec session is refused at its next request.
TEST(UserTokens, AnExpiredOrARevokedTokenIsRefused) {
  LocalCluster c("usertokens", 1, 1);
  auto mint = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"token", "create"});
    auto r = c.Corral(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out.substr(0, r.out.find('\n'));
  };
  const std::string brief = mint({"--user", "ana", "--expires", "3s"});
  const std::string revoked = mint({"--user", "bob"});
  auto status_of = [&](const std::string& token, const std::string& method, const std::string& path,
                       std::string* body = nullptr) {
    net::HttpClient client(c.addr(), token);
    auto r = client.Request(method, path, "", 10s);
    EXPECT_TRUE(r.ok());
    if (body != nullptr && r.ok()) *body = r->body;
    return r.ok() ? r->status : 0;
  };
  EXPECT_EQ(status_of(brief, "GET", "/v1/jobs"), 200) << "before its expiry";
  std::string why;
  ASSERT_TRUE(WaitUntil(20000, [&] { return status_of(brief, "GET", "/v1/jobs", &why) == 401; }))
      << "still accepted long after its expiry";
  EXPECT_NE(why.find("expired"), std::string::npos) << why;

  // bob's running job and an exec session into it, then bob's token is revoked.
  auto sub = RunCommand({CorralBin(), "submit", "--parsable", "--", "sleep", "120"},
                        {{"CORRAL_ADDR", c.addr()},
                         {"CORRAL_TOKEN", revoked},
                         {"CORRAL_CONFIG", c.dir() + "/none.json"}});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  const std::string id = sub.out.substr(0, sub.out.find('\n'));
  ASSERT_TRUE(WaitUntil(30000, [&] {
    return c.Corral({"show", id, "-o", "json"}).out.find("\"running\"") != std::string::npos;
  }));
  net::HttpClient bob(c.addr(), revoked);
  auto opened = bob.Post("/v1/jobs/" + id + "/exec", R"({"command":["sleep","30"]})", 20s);
  ASSERT_TRUE(opened.ok());
  ASSERT_EQ(opened->status, 201) << opened->body;
  const std::string session = Json::parse(opened->body)["session"].get<std::string>();
  std::string output = "/v1/exec/" + session + "/output?wait_ms=0";
  EXPECT_EQ(status_of(revoked, "GET", output), 200);
  std::string token_id;
  {
    std::string listed;
    ASSERT_EQ(status_of(c.token(), "GET", "/v1/tokens", &listed), 200);
    Json all = Json::parse(listed, nullptr, false);
    for (const Json& t : all.value("tokens", Json::array())) {
      if (t["who"].value("name", "") == "bob") token_id = t.value("id", "");
    }
  }
  ASSERT_FALSE(token_id.empty());
  ASSERT_EQ(c.Corral({"token", "revoke", token_id}).exit_code, 0);
  EXPECT_EQ(status_of(revoked, "GET", "/v1/jobs", &why), 401);
  EXPECT_NE(why.find("revoked"), std::string::npos) << why;
  EXPECT_EQ(status_of(revoked, "GET", output, &why), 401) << "its open session ends with it";
  EXPECT_EQ(status_of(revoked, "GET", "/v1/jobs/" + id + "/logs"), 401);
  c.Corral({"cancel", id});
}

}  // namespace
}  // namespace corral::testing
