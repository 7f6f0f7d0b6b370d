#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>

#include "agentnet/advertise.h"
#include "agentnet/exec_server.h"
#include "agentnet/log_server.h"
#include "agentnet/relay_auth.h"
#include "core/relay_grant.h"
#include "net/http_client.h"
#include "net/http_server.h"

namespace corral::agentnet {
namespace {

constexpr char kCredential[] = "node-credential-n1";

// What the head would sign for node n1 and `run`, expiring `ttl_ms` from now.
std::string GrantFor(const std::string& run, const std::string& node = "n1",
                     TimeMs ttl_ms = kRelayGrantLifetimeMs,
                     const std::string& credential = kCredential) {
  return SignRelayGrant(NodeGrantKey(credential), {node, run, SystemClock().Now() + ttl_ms});
}

// Node n1's check, as its agent holds it once registered.
struct AuthN1 : RelayAuth {
  AuthN1() : RelayAuth("n1") { SetCredential(kCredential); }
};

TEST(Advertise, LoopbackHeadMeansLoopbackAddress) {
  auto a = LocalAddressToward("127.0.0.1", 7070);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(*a, "127.0.0.1");
  EXPECT_EQ(InterfaceOf("127.0.0.1"), "lo");
  EXPECT_EQ(InterfaceOf("192.0.2.55"), "");  // TEST-NET-1: on no interface here
}

TEST(Advertise, FlagWinsAndIsValidated) {
  EXPECT_EQ(*AdvertiseAddress("10.0.0.7", "127.0.0.1", 7070), "10.0.0.7");
  EXPECT_EQ(*AdvertiseAddress("gpu-07.example", "127.0.0.1", 7070), "gpu-07.example");
  EXPECT_EQ(*AdvertiseAddress("fd00::7", "127.0.0.1", 7070), "fd00::7");
  for (const char* bad : {"10.0.0.7:8080", "a b", "x/y"}) {
    auto r = AdvertiseAddress(bad, "127.0.0.1", 7070);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--advertise-addr"), std::string::npos);
  }
  EXPECT_FALSE(LocalAddressToward("no-such-host.invalid", 7070).ok());
}

TEST(LogServer, ServesOneTasksLogFromAnOffset) {
  auto dir = std::filesystem::temp_directory_path() / ("agentnet-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir / "runs" / "3.1.0");
  std::ofstream(dir / "runs" / "3.1.0" / "stdout") << "task zero\n";
  std::ofstream(dir / "runs" / "3.1.0" / "stdout.1") << "task one\n";
  net::HttpRequest req;
  req.method = "GET";
  req.path = "/v1/runs/3.1/logs";
  req.headers["authorization"] = "Bearer " + GrantFor("3.1");
  req.query = {{"replica", "0"}, {"task", "1"}, {"offset", "5"}};
  RelayAuth auth("n1");
  auth.SetCredential(kCredential);
  net::HttpResponse r = ServeLog(dir.string(), auth, req);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "one\n");
  EXPECT_EQ(r.headers["X-Corral-Next-Offset"], "9");
  req.query = {{"task", "x"}};
  r = ServeLog(dir.string(), auth, req);
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("task"), std::string::npos);
  req.query = {{"task", "4"}};
  EXPECT_EQ(ServeLog(dir.string(), auth, req).status, 404);
  req.query = {};
  // The join token, another run's grant, another node's, an expired one: refused, by type.
  auto refusal = [&](const std::string& bearer) {
    req.headers["authorization"] = "Bearer " + bearer;
    net::HttpResponse refused = ServeLog(dir.string(), auth, req);
    EXPECT_EQ(refused.body.find("task one"), std::string::npos);
    return std::make_pair(refused.status,
                          nlohmann::json::parse(refused.body)["error"]["code"].get<std::string>());
  };
  using P = std::pair<int, std::string>;
  EXPECT_EQ(refusal("join-secret"), (P{401, "missing"}));
  EXPECT_EQ(refusal(GrantFor("4.1")), (P{403, "other_run"}));
  EXPECT_EQ(refusal(GrantFor("3.1", "n2", 60000, "node-credential-n2")), (P{401, "bad_signature"}));
  EXPECT_EQ(refusal(GrantFor("3.1", "n1", -1)), (P{401, "expired"}));
  auth.SetCredential("rotated");  // a new registration: grants of the old key stop working
  EXPECT_EQ(refusal(GrantFor("3.1")), (P{401, "bad_signature"}));
  std::filesystem::remove_all(dir);
}

// A job replaces its stdout log with a named pipe and its owner asks for its logs: the read is
// refused at once (opened without blocking, not a regular file), and the node's other log
// reads, on the same single I/O thread, still answer within a second.
TEST(LogServer, AFifoInPlaceOfALogIsRefusedAndOtherReadsStillAnswer) {
  auto dir = std::filesystem::temp_directory_path() / ("agentnet-fifo-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir / "runs" / "5.1.0" / "logs");
  std::filesystem::create_directories(dir / "runs" / "6.1.0" / "logs");
  const std::string fifo = (dir / "runs" / "5.1.0" / "logs" / "stdout").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::ofstream(dir / "runs" / "6.1.0" / "logs" / "stdout") << "other run\n";
  AuthN1 auth;
  LogService service(dir.string(), &auth, "join", [] { return std::string("gpu 1\n"); });
  net::HttpServer server(
      [&](net::HttpRequest req, net::Responder r) { service.Handle(std::move(req), std::move(r)); },
      net::HttpServerOptions{.io_threads = 1});
  auto port = server.Listen("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  server.Start();
  const std::string url = "http://127.0.0.1:" + std::to_string(*port);
  auto fifo_read = std::async(std::launch::async, [&] {
    net::HttpClient c(url, GrantFor("5.1"));
    return c.Get("/v1/runs/5.1/logs", std::chrono::seconds(3));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the FIFO's read goes first
  net::HttpClient other(url, GrantFor("6.1"));
  auto t0 = std::chrono::steady_clock::now();
  auto r = other.Get("/v1/runs/6.1/logs", std::chrono::seconds(3));
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Whatever happened, unblock an open() still waiting for a writer, or the server could not
  // stop.
  int w = open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
  auto refused = fifo_read.get();
  if (w >= 0) close(w);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (r.ok()) {
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "other run\n");
  }
  EXPECT_LT(took, 1.0) << "another run's log read waited on the FIFO";
  EXPECT_TRUE(refused.ok()) << refused.status().ToString();
  if (refused.ok()) {
    EXPECT_EQ(refused->status, 400);
    EXPECT_NE(refused->body.find("not a regular file"), std::string::npos) << refused->body;
  }
  server.Stop();
  std::filesystem::remove_all(dir);
}

// `corral exec` on the agent: only a grant for this node and the run opens a session; without
// one, not even whether a session exists is told.
TEST(ExecServer, OpensOnlyWithAGrantForThisNodeAndTheRun) {
  AuthN1 auth;
  std::vector<std::string> looked_up;
  ExecServer exec(&auth, [&](const std::string& run, int32_t) -> Result<agent::ExecTarget> {
    looked_up.push_back(run);
    return NotFound("run " + run + " is not running on this node");
  });
  auto ask = [&](const std::string& method, const std::string& path, const std::string& bearer) {
    net::HttpRequest req;
    req.method = method;
    req.path = path;
    req.body = R"({"command":["true"]})";
    req.headers["authorization"] = "Bearer " + bearer;
    std::promise<net::HttpResponse> p;
    exec.Handle(req, [&](net::HttpResponse r) { p.set_value(std::move(r)); });
    net::HttpResponse r = p.get_future().get();
    nlohmann::json body = nlohmann::json::parse(r.body, nullptr, false);
    return std::make_pair(r.status, body.is_object() ? body["error"].value("code", "") : "");
  };
  using P = std::pair<int, std::string>;
  EXPECT_EQ(ask("POST", "/v1/runs/3.1/exec", "join-secret"), (P{401, "missing"}));
  EXPECT_EQ(ask("POST", "/v1/runs/3.1/exec", kCredential), (P{401, "missing"}));
  EXPECT_EQ(ask("POST", "/v1/runs/3.1/exec", GrantFor("4.1")), (P{403, "other_run"}));
  EXPECT_EQ(ask("POST", "/v1/runs/3.1/exec", GrantFor("3.1", "n1", -1)), (P{401, "expired"}));
  EXPECT_EQ(ask("POST", "/v1/runs/3.1/exec", GrantFor("3.1", "n2", 60000, "node-credential-n2")),
            (P{401, "bad_signature"}));
  EXPECT_TRUE(looked_up.empty()) << "nothing refused reached the node's runs";
  EXPECT_EQ(ask("POST", "/v1/runs/3.1/exec", GrantFor("3.1")), (P{404, "not_found"}));
  EXPECT_EQ(looked_up, std::vector<std::string>{"3.1"});
  // A session's paths: the join token learns nothing, a grant of this node's head learns that
  // there is no such session.
  EXPECT_EQ(ask("GET", "/v1/exec/abc/output", "join-secret"), (P{401, "missing"}));
  EXPECT_EQ(ask("GET", "/v1/exec/abc/output", GrantFor("3.1")), (P{404, "not_found"}));
}

// The samples are the cluster's operators': off the node, /metrics takes the join token.
TEST(LogServer, MetricsTakeTheJoinTokenFromOffTheNode) {
  AuthN1 auth;
  LogService service("/nonexistent", &auth, "secret", [] { return std::string("gpu 1\n"); });
  auto ask = [&](const std::string& remote, const std::string& bearer) {
    net::HttpRequest req;
    req.method = "GET";
    req.path = "/metrics";
    req.remote = remote;
    if (!bearer.empty()) req.headers["authorization"] = "Bearer " + bearer;
    std::promise<net::HttpResponse> p;
    service.Handle(req, [&](net::HttpResponse r) { p.set_value(std::move(r)); });
    return p.get_future().get();
  };
  EXPECT_EQ(ask("10.0.0.9:5000", "").status, 401);
  EXPECT_EQ(ask("10.0.0.9:5000", "wrong").status, 401);
  net::HttpResponse ok = ask("10.0.0.9:5000", "secret");
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, "gpu 1\n");
  EXPECT_EQ(ask("127.0.0.1:5000", "").status, 200) << "on the node itself, as nvidia-smi is";
}

}  // namespace
}  // namespace corral::agentnet
