#include "net/async_http_client.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <vector>

#include "net/http_server.h"

namespace corral::net {
namespace {

using namespace std::chrono_literals;

// Collects the answers of the requests a test made.
struct Answers {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Result<HttpResponse>> got;
  AsyncHttpClient::Done Add() {
    return [this](Result<HttpResponse> r) {
      std::lock_guard lock(mu);
      got.push_back(std::move(r));
      cv.notify_all();
    };
  }
  bool WaitFor(size_t n) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, 10s, [&] { return got.size() >= n; });
  }
};

// A server that parks every request until the test answers them: 64 requests in flight at
// once on the client's one thread.
TEST(AsyncHttpClient, ManyRequestsInFlightOnOneThread) {
  std::mutex mu;
  std::vector<std::pair<std::string, Responder>> parked;
  HttpServer server(
      [&](HttpRequest req, Responder respond) {
        std::lock_guard lock(mu);
        parked.emplace_back(req.path + "?" + req.query["n"] + " " + req.BearerToken(),
                            std::move(respond));
      },
      2);
  auto port = server.Listen("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  server.Start();
  AsyncHttpClient client;
  Answers answers;
  const std::string base = "http://127.0.0.1:" + std::to_string(*port);
  for (int i = 0; i < 64; ++i) {
    client.Request(base, "tok", "GET", "/v1/x?n=" + std::to_string(i), 10s, answers.Add());
  }
  for (int i = 0; i < 500; ++i) {
    {
      std::lock_guard lock(mu);
      if (parked.size() == 64) break;
    }
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(client.InFlight(), 64);
  {
    std::lock_guard lock(mu);
    ASSERT_EQ(parked.size(), 64u);
    for (auto& [what, respond] : parked) {
      HttpResponse r;
      r.content_type = "text/plain";
      r.body = what;
      r.headers["X-Echo"] = "yes";
      respond(std::move(r));
    }
  }
  ASSERT_TRUE(answers.WaitFor(64));
  std::set<std::string> bodies;
  for (auto& r : answers.got) {
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->headers["x-echo"], "yes");
    bodies.insert(r->body);
  }
  EXPECT_EQ(bodies.size(), 64u);
  EXPECT_TRUE(bodies.count("/v1/x?7 tok"));
  for (int i = 0; i < 100 && client.InFlight() > 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(client.InFlight(), 0);
  server.Stop();
}

TEST(AsyncHttpClient, TimeoutRefusalAndBadUrlAreErrors) {
  std::vector<Responder> never;
  std::mutex mu;
  HttpServer server(
      [&](HttpRequest, Responder respond) {
        std::lock_guard lock(mu);
        never.push_back(std::move(respond));  // answered only when the server stops
      },
      1);
  auto port = server.Listen("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  server.Start();
  AsyncHttpClient client;
  Answers answers;
  client.Request("http://127.0.0.1:" + std::to_string(*port), "", "GET", "/slow", 200ms,
                 answers.Add());
  ASSERT_TRUE(answers.WaitFor(1));
  ASSERT_FALSE(answers.got[0].ok());
  EXPECT_EQ(answers.got[0].status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(answers.got[0].status().message().find("timed out"), std::string::npos);
  server.Stop();
  client.Request("http://127.0.0.1:" + std::to_string(*port), "", "GET", "/", 2s, answers.Add());
  ASSERT_TRUE(answers.WaitFor(2));
  EXPECT_EQ(answers.got[1].status().code(), ErrorCode::kUnavailable);
  client.Request("ftp://x", "", "GET", "/", 2s, answers.Add());
  ASSERT_TRUE(answers.WaitFor(3));
  EXPECT_FALSE(answers.got[2].ok());
}

}  // namespace
}  // namespace corral::net
