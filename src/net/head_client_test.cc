// HeadClient against real servers on loopback: a dead address, a standby that redirects,
// a standby with no leader yet, and which requests it may send twice.
#include "net/head_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "net/http.h"
#include "net/http_server.h"

namespace corral::net {
namespace {

using namespace std::chrono_literals;

// A server on an ephemeral port whose answer a test chooses; counts what it was asked.
class Server {
 public:
  explicit Server(std::function<HttpResponse(const HttpRequest&)> answer)
      : server_([this, answer](HttpRequest req, Responder r) {
          ++requests_;
          r(answer(req));
        }) {
    port_ = *server_.Listen("127.0.0.1", 0);
    server_.Start();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int requests() const { return requests_.load(); }
  void Stop() { server_.Stop(); }

 private:
  std::atomic<int> requests_{0};
  HttpServer server_;
  int port_ = 0;
};

HttpResponse Ok(std::string body) {
  HttpResponse r;
  r.body = std::move(body);
  return r;
}

std::string DeadUrl() {
  Server s([](const HttpRequest&) { return Ok(""); });
  std::string url = s.url();
  s.Stop();
  return url;  // nothing listens there any more
}

HeadClientOptions Quick() {
  HeadClientOptions o;
  o.failover_window = 3s;
  o.pause_between_rounds = 20ms;
  return o;
}

TEST(HeadList, ParsesTrimsAndNamesTheBadEntry) {
  auto l = ParseHeadList(" http://a:1 ,http://b:2/,");
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(*l, (std::vector<std::string>{"http://a:1", "http://b:2"}));
  auto bad = ParseHeadList("http://a:1,ftp://b");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("ftp://b"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(ParseHeadList(" , ").ok());
}

TEST(HeadList, BaseOfLocationDropsThePath) {
  EXPECT_EQ(BaseOfLocation("http://10.0.0.2:7070/v1/jobs?x=1"), "http://10.0.0.2:7070");
  EXPECT_EQ(BaseOfLocation("http://h:1"), "http://h:1");
  EXPECT_EQ(BaseOfLocation("/v1/jobs"), "");
}

TEST(HeadClient, SkipsAHeadThatCannotBeReached) {
  Server leader([](const HttpRequest&) { return Ok("leader"); });
  HeadClient c({DeadUrl(), leader.url()}, "t", Quick());
  auto r = c.Request("POST", "/v1/jobs", "{}", 2s, /*idempotent=*/false);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "leader");
  EXPECT_EQ(c.current(), leader.url());  // and stays there
  EXPECT_EQ(leader.requests(), 1);
}

// One head configured and nothing listening: a CLI hears at once, not after the window; with
// the option's default (an agent's) the window is waited through.
TEST(HeadClient, ALoneHeadThatRefusesFailsAtOnceWhenAsked) {
  HeadClientOptions cli;
  cli.failover_window = 30s;
  cli.retry_lone_head_refusal = false;
  HeadClient c({DeadUrl()}, "t", cli);
  auto start = std::chrono::steady_clock::now();
  auto r = c.Request("GET", "/v1/jobs", "", 2s, true);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cannot connect to "), std::string::npos)
      << r.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);  // the window is 30 s

  HeadClientOptions agent = Quick();
  agent.failover_window = 500ms;
  HeadClient d({DeadUrl()}, "t", agent);
  start = std::chrono::steady_clock::now();
  EXPECT_FALSE(d.Request("GET", "/v1/jobs", "", 2s, true).ok());
  EXPECT_GE(std::chrono::steady_clock::now() - start, 500ms);
}

TEST(HeadClient, FollowsAStandbysRedirectToTheLeader) {
  Server leader([](const HttpRequest& req) { return Ok("leader saw " + req.target); });
  std::string to = leader.url();
  Server standby([to](const HttpRequest& req) {
    HttpResponse r = JsonError(307, "not_leader", "this head is a standby");
    r.headers["Location"] = to + req.target;
    return r;
  });
  HeadClient c({standby.url()}, "t", Quick());
  auto r = c.Request("GET", "/v1/jobs?state=running", "", 2s, true);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "leader saw /v1/jobs?state=running");
  EXPECT_EQ(standby.requests(), 1);
  EXPECT_EQ(c.current(), leader.url());
}

TEST(HeadClient, WaitsThroughNoLeaderAnswersAndGivesUpAfterTheWindow) {
  std::atomic<int> left{3};
  Server head([&left](const HttpRequest&) {
    if (left.fetch_sub(1) > 0) return JsonError(503, "no_leader", "no head leads yet");
    return Ok("elected");
  });
  HeadClient c({head.url()}, "t", Quick());
  auto r = c.Request("POST", "/v1/jobs", "{}", 2s, false);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->body, "elected");
  EXPECT_EQ(head.requests(), 4);

  HeadClientOptions short_window = Quick();
  short_window.failover_window = 200ms;
  Server never([](const HttpRequest&) { return JsonError(503, "no_leader", "no head leads"); });
  HeadClient d({never.url()}, "t", short_window);
  auto last = d.Request("GET", "/v1/jobs", "", 1s, true);
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->status, 503);  // the last answer, once the window is over
}

TEST(HeadClient, ARequestThatMayHaveArrivedIsRepeatedOnlyWhenIdempotent) {
  std::mutex mu;
  std::vector<Responder> silent;  // a head that took the request and died before answering
  HttpServer hung([&](HttpRequest, Responder r) {
    std::lock_guard lock(mu);
    silent.push_back(std::move(r));
  });
  int port = *hung.Listen("127.0.0.1", 0);
  hung.Start();
  Server other([](const HttpRequest&) { return Ok("other"); });
  std::string hung_url = "http://127.0.0.1:" + std::to_string(port);

  HeadClient once({hung_url, other.url()}, "t", Quick());
  auto r = once.Request("POST", "/v1/tokens", "{}", 200ms, /*idempotent=*/false);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(other.requests(), 0);

  HeadClient again({hung_url, other.url()}, "t", Quick());
  auto r2 = again.Request("POST", "/v1/jobs", "{}", 200ms, /*idempotent=*/true);
  ASSERT_TRUE(r2.ok()) << r2.status().ToString();
  EXPECT_EQ(r2->body, "other");
  hung.Stop();
}

TEST(HeadClient, ARedirectLoopEnds) {
  std::string self;
  Server loop([&self](const HttpRequest& req) {
    HttpResponse r = JsonError(307, "not_leader", "standby");
    r.headers["Location"] = self + req.target;
    return r;
  });
  self = loop.url();
  HeadClient c({loop.url()}, "t", Quick());
  auto r = c.Request("GET", "/v1/jobs", "", 1s, true);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 307);
  EXPECT_EQ(loop.requests(), Quick().max_redirects + 1);
}

}  // namespace
}  // namespace corral::net
