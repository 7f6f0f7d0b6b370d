// The head's relays to an agent that dies (exec sessions, logs): over a real head, the real
// ApiService behind a real HTTP server, a real "agent" server on loopback that is stopped while
// a relayed long poll is held, and the CLI's own HeadClient. The relay answers 502 at once,
// and the client does not take it for a head without a leader (a 503 it retries on every
// head for its failover window, 20 s).
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>

#include "api/api_service.h"
#include "api/test_head.h"
#include "core/codec.h"
#include "net/head_client.h"
#include "net/http_server.h"

namespace corral::api {
namespace {

using namespace std::chrono_literals;
using corral::testing::CountingRandom;
using corral::testing::FakeClock;
using test::kAdmin;
using test::kJoin;
using Clock = std::chrono::steady_clock;

// An agent's exec endpoint: opens session "a1", holds every output poll until it is stopped.
class FakeAgent {
 public:
  FakeAgent()
      : server_([this](net::HttpRequest req, net::Responder respond) {
          std::lock_guard lock(mu_);
          if (req.method == "POST" && req.path.ends_with("/exec")) {
            return respond(net::HttpResponse{.status = 201, .body = R"({"session":"a1"})"});
          }
          held_.push_back(std::move(respond));
        }) {
    port_ = *server_.Listen("127.0.0.1", 0);
    server_.Start();
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  size_t Held() {
    std::lock_guard lock(mu_);
    return held_.size();
  }
  // As its process dies: the listener and every connection close, nothing is answered.
  void Die() { server_.Stop(); }

 private:
  std::mutex mu_;
  std::vector<net::Responder> held_;
  net::HttpServer server_;
  int port_ = 0;
};

class RelayFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    auto h = test::StartTestHead(&clock_, &random_);
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    head_ = std::move(*h);
    api_ = std::make_unique<ApiService>(head_.get());
    server_ =
        std::make_unique<net::HttpServer>([this](net::HttpRequest req, net::Responder respond) {
          api_->Handle(std::move(req), std::move(respond));
        });
    auto port = server_->Listen("127.0.0.1", 0);
    ASSERT_TRUE(port.ok());
    server_->Start();
    head_url_ = "http://127.0.0.1:" + std::to_string(*port);
  }
  void TearDown() override {
    server_->Stop();
    head_->Stop();
  }

  Result<net::HttpResponse> Call(const std::string& method, const std::string& target,
                                 const std::string& body = "", const std::string& bearer = kAdmin) {
    net::HeadClient client({head_url_}, bearer);  // as the CLI's transport calls the head
    return client.Request(method, target, body, 30s, method == "GET");
  }

  // Node n1 at `address` runs job 1 (one GPU), as its agent reports.
  void RunJobOn(const std::string& address) {
    RegisterRequest reg;
    reg.name = "n1";
    reg.address = address;
    reg.cpu_milli = 8000;
    reg.memory_mb = 16000;
    reg.gpus = {Gpu{.index = 0, .uuid = "n1-0", .model = "Sim"}};
    auto registered = Call("POST", "/v1/agent/register", ToJson(reg).dump(), kJoin);
    ASSERT_TRUE(registered.ok() && registered->status == 200) << registered->body;
    auto creds = RegisterResponseFromJson(Json::parse(registered->body));
    ASSERT_TRUE(creds.ok());
    auto submitted = Call("POST", "/v1/jobs", R"({"spec":{"command":["sleep","600"],"gpus":1}})");
    ASSERT_TRUE(submitted.ok() && submitted->status == 201) << submitted->body;
    SyncRequest sync;
    sync.node = "n1";
    sync.agent_epoch = creds->agent_epoch;
    auto orders = Call("POST", "/v1/agent/sync", ToJson(sync).dump(), creds->node_token);
    ASSERT_TRUE(orders.ok() && orders->status == 200) << orders->body;
    auto answer = SyncResponseFromJson(Json::parse(orders->body));
    ASSERT_TRUE(answer.ok() && answer->runs.size() == 1) << orders->body;
    RunReport running;
    running.run_id = answer->runs[0].run_id;
    running.running = true;
    running.started_at = clock_.Now();
    sync.runs = {running};
    sync.desired_version = answer->desired_version;
    auto reported = Call("POST", "/v1/agent/sync", ToJson(sync).dump(), creds->node_token);
    ASSERT_TRUE(reported.ok() && reported->status == 200) << reported->body;
    auto job = Call("GET", "/v1/jobs/1");
    ASSERT_TRUE(job.ok());
    ASSERT_EQ(Json::parse(job->body)["job"].value("state", ""), "running") << job->body;
  }

  static std::string ErrorCode(const net::HttpResponse& r) {
    Json j = Json::parse(r.body, nullptr, false);
    return j.is_object() && j.contains("error") ? j["error"].value("code", "") : "";
  }
  static std::string ErrorMessage(const net::HttpResponse& r) {
    Json j = Json::parse(r.body, nullptr, false);
    return j.is_object() && j.contains("error") ? j["error"].value("message", "") : "";
  }
  static double Since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
  }

  FakeClock clock_;
  CountingRandom random_;
  std::unique_ptr<head::Head> head_;
  std::unique_ptr<ApiService> api_;
  std::unique_ptr<net::HttpServer> server_;
  std::string head_url_;
};

// The agent dies while the head relays an exec session's output poll to it (held on a kept
// connection to the agent): the poll's caller learns it at once, as it does on its next poll,
// a new session's opening and a log read.
TEST_F(RelayFaults, ARelayToAnAgentThatDiedFailsAtOnceWith502) {
  FakeAgent agent;
  RunJobOn(agent.address());
  auto opened = Call("POST", "/v1/jobs/1/exec", R"({"command":["sh"]})");
  ASSERT_TRUE(opened.ok() && opened->status == 201) << opened->body;
  const std::string session = Json::parse(opened->body)["session"];

  Result<net::HttpResponse> polled = Internal("not answered");
  Clock::time_point answered;
  std::thread poll([&] {
    polled = Call("GET", "/v1/exec/" + session + "/output?stream=stdout&offset=0&wait_ms=10000");
    answered = Clock::now();
  });
  for (int i = 0; i < 500 && agent.Held() == 0; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(agent.Held(), 1u);
  const auto died = Clock::now();
  agent.Die();
  poll.join();
  ASSERT_TRUE(polled.ok()) << polled.status().ToString();
  const double after = std::chrono::duration<double>(answered - died).count();
  EXPECT_LT(after, 3.0) << "the held poll answered " << after << " s after the agent died";
  EXPECT_EQ(polled->status, 502) << polled->body;
  EXPECT_EQ(ErrorCode(*polled), "unavailable");
  EXPECT_NE(ErrorMessage(*polled).find("node n1: GET http://" + agent.address()), std::string::npos)
      << polled->body;

  auto t0 = Clock::now();
  auto again = Call("GET", "/v1/exec/" + session + "/output?stream=stdout&offset=0&wait_ms=10000");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->status, 502) << again->body;
  EXPECT_NE(ErrorMessage(*again).find("connect"), std::string::npos) << again->body;
  EXPECT_LT(Since(t0), 3.0);

  t0 = Clock::now();
  auto reopened = Call("POST", "/v1/jobs/1/exec", R"({"command":["sh"]})");
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ(reopened->status, 502) << reopened->body;
  EXPECT_NE(ErrorMessage(*reopened).find("node n1 (" + agent.address() + ")"), std::string::npos)
      << reopened->body;
  EXPECT_LT(Since(t0), 3.0);

  t0 = Clock::now();
  auto logs = Call("GET", "/v1/jobs/1/logs?stream=stdout&offset=0");
  ASSERT_TRUE(logs.ok());
  EXPECT_EQ(logs->status, 502) << logs->body;
  EXPECT_EQ(ErrorCode(*logs), "unavailable");
  EXPECT_LT(Since(t0), 3.0);
}

// A job on a node the head cannot reach (here: one that registered no address): opening a
// session in it, or reading its logs, is refused at once, naming the node, not retried as a
// head without a leader.
TEST_F(RelayFaults, ExecAndLogsOfAJobWhoseNodeHasNoAddressAreRefusedAtOnce) {
  RunJobOn("");
  const auto t0 = Clock::now();
  auto opened = Call("POST", "/v1/jobs/1/exec", R"({"command":["sh"]})");
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ(opened->status, 409) << opened->body;
  EXPECT_NE(ErrorMessage(*opened).find("node n1 has no address"), std::string::npos)
      << opened->body;
  EXPECT_LT(Since(t0), 3.0);

  const auto logs_t0 = Clock::now();
  auto logs = Call("GET", "/v1/jobs/1/logs?stream=stdout&offset=0");
  ASSERT_TRUE(logs.ok()) << logs.status().ToString();
  EXPECT_EQ(logs->status, 409) << logs->body;
  EXPECT_NE(ErrorMessage(*logs).find("node n1 has no address"), std::string::npos) << logs->body;
  EXPECT_LT(Since(logs_t0), 3.0);
}

}  // namespace
}  // namespace corral::api
