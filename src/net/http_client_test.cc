// The HTTP client: requests, retries, keep-alive, timeouts and errors, against a real server.
#include "net/http_client.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "net/http_test_util.h"

namespace corral::net {
namespace {

using namespace std::chrono_literals;
using namespace http_test;

TEST(HttpClientTest, RetriesOnceWhenAKeptConnectionDiesUnanswered) {
  ScriptedServer server([](int conn, int fd) {
    if (conn == 0) {
      if (!ScriptedServer::ReadRequest(fd)) return;
      ScriptedServer::Send(fd, ScriptedServer::Ok("first"));
      ScriptedServer::ReadRequest(fd);  // the second request: dropped unanswered
      return;
    }
    while (ScriptedServer::ReadRequest(fd)) ScriptedServer::Send(fd, ScriptedServer::Ok("again"));
  });
  HttpClient client(server.url(), "");
  auto a = client.Get("/1", kTimeout);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->body, "first");
  auto b = client.Get("/2", kTimeout);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->body, "again");
  EXPECT_EQ(client.connections_opened(), 2);
}

TEST(HttpClientTest, NoRetryOnAFreshConnection) {
  ScriptedServer server([](int, int fd) { ScriptedServer::ReadRequest(fd); });  // never answers
  HttpClient client(server.url(), "");
  auto r = client.Post("/submit", "{}", kTimeout);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(r.status().message().find("POST " + server.url() + "/submit"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(client.connections_opened(), 1);
}

TEST(HttpClientTest, NoRetryOncePartOfTheAnswerArrived) {
  ScriptedServer server([](int conn, int fd) {
    if (conn > 0) {
      while (ScriptedServer::ReadRequest(fd))
        ScriptedServer::Send(fd, ScriptedServer::Ok("retried!"));
      return;
    }
    if (!ScriptedServer::ReadRequest(fd)) return;
    ScriptedServer::Send(fd, ScriptedServer::Ok("first"));
    if (!ScriptedServer::ReadRequest(fd)) return;
    ScriptedServer::Send(fd, "HTTP/1.1 200 OK\r\nContent-Le");  // and dies
  });
  HttpClient client(server.url(), "");
  ASSERT_TRUE(client.Get("/1", kTimeout).ok());
  auto r = client.Post("/2", "{}", kTimeout);
  ASSERT_FALSE(r.ok()) << r->body;
  EXPECT_EQ(r.status().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(client.connections_opened(), 1);
}

TEST(HttpTest, RoundTripMethodPathQueryHeadersBody) {
  TestServer ts(EchoHandler());
  HttpClient client(ts.url(), "s3cret-token");
  auto r = client.Request("PUT", "/v1/jobs/a%20b?state=running&owner=al+ice&x=%26", R"({"k":1})",
                          kTimeout, {{"X-Extra", "42"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->content_type, "application/json");
  EXPECT_EQ(r->headers["x-corral-test"], "yes");
  EXPECT_EQ(r->headers["server"], "corral");
  auto j = nlohmann::json::parse(r->body);
  EXPECT_EQ(j["method"], "PUT");
  EXPECT_EQ(j["target"], "/v1/jobs/a%20b?state=running&owner=al+ice&x=%26");
  EXPECT_EQ(j["path"], "/v1/jobs/a b");
  EXPECT_EQ(j["query"]["state"], "running");
  EXPECT_EQ(j["query"]["owner"], "al ice");
  EXPECT_EQ(j["query"]["x"], "&");
  EXPECT_EQ(j["headers"]["x-extra"], "42");
  EXPECT_EQ(j["headers"]["content-type"], "application/json");
  EXPECT_EQ(j["headers"]["authorization"], "Bearer s3cret-token");
  EXPECT_EQ(j["token"], "s3cret-token");
  EXPECT_EQ(j["body"], R"({"k":1})");
  EXPECT_EQ(j["remote"].get<std::string>().rfind("127.0.0.1:", 0), 0u);
}

TEST(HttpTest, BaseUrlPathPrefixAndNoToken) {
  TestServer ts(EchoHandler());
  HttpClient client(ts.url() + "/corral/", "");
  auto r = client.Get("v1/x", kTimeout);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto j = nlohmann::json::parse(r->body);
  EXPECT_EQ(j["path"], "/corral/v1/x");
  EXPECT_FALSE(j["headers"].contains("authorization"));
  EXPECT_EQ(j["token"], "");
}

TEST(HttpTest, KeepAliveReusesOneConnection) {
  TestServer ts(EchoHandler());
  HttpClient client(ts.url(), "t");
  std::set<std::string> remotes;
  for (int i = 0; i < 10; ++i) {
    auto r = client.Post("/n?i=" + std::to_string(i), "{}", kTimeout);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    auto j = nlohmann::json::parse(r->body);
    EXPECT_EQ(j["query"]["i"], std::to_string(i));
    remotes.insert(j["remote"].get<std::string>());
  }
  EXPECT_EQ(client.connections_opened(), 1);
  EXPECT_EQ(remotes.size(), 1u);  // the server saw one client port
  EXPECT_EQ(ts.server.ConnectionCount(), 1u);
}

TEST(HttpTest, ReconnectsWhenServerClosedIdleConnection) {
  HttpServerOptions o;
  o.read_timeout = 150ms;  // the server drops idle keep-alive connections after this
  TestServer ts(EchoHandler(), o);
  HttpClient client(ts.url(), "t");
  ASSERT_TRUE(client.Get("/a", kTimeout).ok());
  ASSERT_TRUE(WaitUntil([&] { return ts.server.ConnectionCount() == 0; }));
  auto r = client.Get("/b", kTimeout);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(client.connections_opened(), 2);
}

TEST(HttpTest, ClientTimeoutIsUnavailable) {
  Held held;
  TestServer ts(EchoHandler(&held));
  HttpClient client(ts.url(), "t");
  const auto start = std::chrono::steady_clock::now();
  auto r = client.Get("/hold/never", 200ms);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(r.status().message().find(ts.url() + "/hold/never"), std::string::npos)
      << r.status().message();
  EXPECT_GE(took, 200ms);
  EXPECT_LT(took, 2s);
  // The client recovers on a fresh connection.
  auto ok = client.Get("/fine", kTimeout);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->status, 200);
}

TEST(HttpTest, ConnectionRefusedIsUnavailable) {
  int port = 0;
  {
    HttpServer s(EchoHandler());
    port = *s.Listen("127.0.0.1", 0);
  }  // closed: nothing listens there now
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  HttpClient client(url, "t");
  auto r = client.Get("/x", kTimeout);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(r.status().message().find(url), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("refused"), std::string::npos) << r.status().message();
}

TEST(HttpTest, ClientResolvesHostNames) {
  TestServer ts(EchoHandler());
  HttpClient client("http://localhost:" + std::to_string(ts.port), "t");
  auto r = client.Get("/named", kTimeout);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
}

TEST(HttpTest, BadUrlAndHttps) {
  HttpClient bad("localhost:80", "t");
  auto r = bad.Get("/", kTimeout);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  // https is served (tls_http_test.cc); nothing listens here.
  HttpClient tls("https://127.0.0.1:1", "t");
  auto t = tls.Get("/", kTimeout);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), ErrorCode::kUnavailable);
}

TEST(HttpTest, ConcurrentClientsOnSeveralThreads) {
  TestServer ts(EchoHandler(), HttpServerOptions{.io_threads = 2});
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      HttpClient client(ts.url(), "t");
      for (int i = 0; i < 50; ++i) {
        auto r = client.Post("/c?t=" + std::to_string(t), std::to_string(i), kTimeout);
        if (r.ok() && r->status == 200 &&
            nlohmann::json::parse(r->body)["body"] == std::to_string(i))
          ++ok;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 8 * 50);
}

}  // namespace
}  // namespace corral::net
