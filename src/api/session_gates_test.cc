// The notebooks' /s/ connections pass the API's gates (request_gates.h) before the head does any
// work for them: a flood without a working token is throttled per address (429, Retry-After,
// unaudited), a token past its rate gets 429, and refusals are audited with where they came
// from. Over a real head (in-memory store, an audit log on disk) and the real ApiService.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <future>

#include "api/api_service.h"
#include "testing/fakes.h"

namespace corral::api {
namespace {

using corral::testing::FakeClock;
using corral::testing::MemoryDisk;
using corral::testing::MemoryStore;

// A client connection as the head's HTTP server would hand it over: it records the answer.
class RecordedConnection final : public net::TakenConnection {
 public:
  bool Encrypted() const override { return false; }
  void Answer(net::HttpResponse r) override { answer_.set_value(std::move(r)); }
  void Splice(std::string base_url, std::shared_ptr<const net::TlsClientContext>, std::string,
              std::chrono::milliseconds) override {
    answer_.set_value(net::HttpResponse{.status = 0, .body = "spliced to " + base_url});
  }
  std::future<net::HttpResponse> Answered() { return answer_.get_future(); }

 private:
  std::promise<net::HttpResponse> answer_;
};

class SessionGates : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/corral-gates-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    head::HeadConfig config;
    config.state_dir = dir_;
    auto h = head::Head::Open(config, &clock_,
                              std::make_unique<MemoryStore>(std::make_shared<MemoryDisk>()));
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    head_ = std::move(*h);
    head_->Start();
    std::ifstream token_file(dir_ + "/admin.token");
    std::getline(token_file, admin_);
    // 5 requests a second per token (bursts of 10); 1 a second per address without a working
    // token (bursts of 10).
    api_ = std::make_unique<ApiService>(head_.get(), 5, AgentTls{}, 1);
  }
  void TearDown() override {
    head_->Stop();
    std::filesystem::remove_all(dir_);
  }

  net::HttpResponse Take(const std::string& target, const std::string& from,
                         const std::map<std::string, std::string>& headers = {}) {
    net::HttpRequest req;
    req.method = "GET";
    req.target = target;
    req.path = target.substr(0, target.find('?'));
    if (auto q = target.find("?token="); q != std::string::npos) {
      req.query["token"] = target.substr(q + 7);
    }
    req.headers = headers;
    req.remote = from + ":40000";
    auto conn = std::make_shared<RecordedConnection>();
    auto answered = conn->Answered();
    api_->TakeSession(std::move(req), conn);
    return answered.get();
  }
  std::vector<Json> Audited() {
    std::ifstream audit(dir_ + "/audit.log");
    std::vector<Json> lines;
    for (std::string line; std::getline(audit, line);) lines.push_back(Json::parse(line));
    return lines;
  }

  std::string dir_;
  std::string admin_;
  FakeClock clock_;
  std::unique_ptr<head::Head> head_;
  std::unique_ptr<ApiService> api_;
};

TEST_F(SessionGates, AFloodWithoutAWorkingTokenIsThrottledPerAddressAndNotAudited) {
  int refused = 0, throttled = 0;
  for (int i = 0; i < 40; ++i) {
    // No credential, a cookie naming no session, a made-up token: all the same to the gate.
    std::map<std::string, std::string> headers;
    std::string target = "/s/7/api/kernels";
    if (i % 3 == 1) headers["cookie"] = "corral_session=made-up-" + std::to_string(i);
    if (i % 3 == 2) target += "?token=guess-" + std::to_string(i);
    net::HttpResponse r = Take(target, "10.0.0.9", headers);
    if (r.status == 429) {
      ++throttled;
      EXPECT_EQ(r.headers["Retry-After"], "1");
      EXPECT_NE(r.body.find("without a working token from 10.0.0.9"), std::string::npos) << r.body;
    } else {
      ++refused;
      EXPECT_EQ(r.status, 401) << r.body;
    }
  }
  // The address's burst of 10 (and what refills while the test runs, one a second).
  EXPECT_GE(refused, 10);
  EXPECT_LE(refused, 12);
  EXPECT_EQ(throttled, 40 - refused);
  // Each refusal that got through is audited with its address; the throttled ones are not.
  std::vector<Json> lines = Audited();
  ASSERT_EQ(lines.size(), static_cast<size_t>(refused));
  EXPECT_EQ(lines[0]["from"], "10.0.0.9:40000");
  EXPECT_EQ(lines[0]["status"], 401);
  EXPECT_EQ(lines[0]["request"], "GET /s/7/api/kernels");
  // Another address has its own allowance; a working token passes the flooded one.
  EXPECT_EQ(Take("/s/7/api/kernels", "10.0.0.10").status, 401);
  net::HttpResponse known = Take("/s/7/tree?token=" + admin_, "10.0.0.9");
  EXPECT_EQ(known.status, 404) << known.body;  // past the gates: the head has no job 7
  EXPECT_NE(known.body.find("7"), std::string::npos) << known.body;
}

TEST_F(SessionGates, ATokenPastItsRateGets429OnSessionsAndTheApiAlike) {
  int passed = 0, limited = 0;
  for (int i = 0; i < 25; ++i) {
    net::HttpResponse r = Take("/s/7/tree?token=" + admin_, "10.0.0.9");
    if (r.status == 429) {
      ++limited;
      EXPECT_EQ(r.headers["Retry-After"], "1");
      EXPECT_NE(r.body.find("too many requests with this token"), std::string::npos) << r.body;
    } else {
      ++passed;
    }
  }
  EXPECT_GE(passed, 10) << "the token's burst";
  EXPECT_LE(passed, 13) << "and what refills while the test runs, five a second";
  EXPECT_EQ(limited, 25 - passed);
  // The token's bucket is one: its API calls are limited too, with the same Retry-After.
  net::HttpRequest req;
  req.method = "GET";
  req.target = req.path = "/v1/jobs";
  req.headers["authorization"] = "Bearer " + admin_;
  req.remote = "10.0.0.9:40001";
  std::promise<net::HttpResponse> p;
  api_->Handle(req, [&p](net::HttpResponse r) { p.set_value(std::move(r)); });
  net::HttpResponse r = p.get_future().get();
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.headers["Retry-After"], "1");
}

// A notebook URL's ticket stands for its user's token once, for its own job: spent at its
// first visit (which gets past the gates and authentication: the head then finds no job 7),
// refused after that, and refused for another job.
TEST_F(SessionGates, ATicketOpensItsJobsSessionOnce) {
  RequestGates gates(head_.get(), 0, 0);
  SessionProxy proxy(head_.get(), &gates, false, nullptr);
  auto take = [&](const std::string& path, const std::string& ticket) {
    net::HttpRequest req;
    req.method = "GET";
    req.path = path;
    req.target = path + "?ticket=" + ticket;
    req.query["ticket"] = ticket;
    req.remote = "10.0.0.9:40000";
    auto conn = std::make_shared<RecordedConnection>();
    auto answered = conn->Answered();
    proxy.Take(std::move(req), conn);
    return answered.get();
  };
  const std::string ticket = proxy.IssueTicket(admin_, 7);
  EXPECT_EQ(ticket.find(admin_), std::string::npos);
  net::HttpResponse first = take("/s/7/tree", ticket);
  EXPECT_EQ(first.status, 404) << first.body;  // authenticated as the admin: no job 7 here
  net::HttpResponse again = take("/s/7/tree", ticket);
  EXPECT_EQ(again.status, 401) << again.body;
  EXPECT_NE(again.body.find("ticket is spent"), std::string::npos) << again.body;
  EXPECT_EQ(take("/s/8/tree", proxy.IssueTicket(admin_, 7)).status, 401) << "another job's";
  EXPECT_EQ(take("/s/7/tree", "made-up").status, 401);
}

}  // namespace
}  // namespace corral::api
