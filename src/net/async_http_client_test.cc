#include "net/async_http_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
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

// Requests one after the other to one server share one connection (keep-alive); one the server
// closed while it was idle is not used again: the next request opens a new one.
TEST(AsyncHttpClient, KeepsConnectionsAliveUntilTheServerClosesThem) {
  std::mutex mu;
  std::vector<std::string> remotes;
  HttpServerOptions options;
  options.io_threads = 1;
  options.header_timeout = 300ms;  // an idle connection is closed after this
  HttpServer server(
      [&](HttpRequest req, Responder respond) {
        {
          std::lock_guard lock(mu);
          remotes.push_back(req.remote);
        }
        HttpResponse r;
        r.body = "ok";
        respond(std::move(r));
      },
      options);
  auto port = server.Listen("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  server.Start();
  AsyncHttpClient client;
  Answers answers;
  const std::string base = "http://127.0.0.1:" + std::to_string(*port);
  for (size_t i = 1; i <= 5; ++i) {
    client.Request(base, "", "POST", "/x", "body", 5s, answers.Add());
    ASSERT_TRUE(answers.WaitFor(i));
    ASSERT_TRUE(answers.got.back().ok()) << answers.got.back().status().ToString();
  }
  EXPECT_EQ(server.ConnectionCount(), 1u);
  std::this_thread::sleep_for(800ms);  // the server closes the idle connection
  client.Request(base, "", "GET", "/y", 5s, answers.Add());
  ASSERT_TRUE(answers.WaitFor(6));
  ASSERT_TRUE(answers.got.back().ok()) << answers.got.back().status().ToString();
  std::lock_guard lock(mu);
  ASSERT_EQ(remotes.size(), 6u);
  for (size_t i = 1; i < 5; ++i) EXPECT_EQ(remotes[i], remotes[0]) << "one connection";
  EXPECT_NE(remotes[5], remotes[0]) << "a new connection after the server closed the idle one";
}

// A kept connection the server closes as the next request goes out on it (it read the request
// and closed without a byte of answer): the request goes again on a new connection.
TEST(AsyncHttpClient, ARequestOnAKeptConnectionClosedUnderItGoesAgainOnANewOne) {
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len), 0);
  std::atomic<int> connections{0};
  std::atomic<bool> reused{false};  // the second request came on the first connection
  auto read_request = [](int fd) {
    std::string got;
    char buf[4096];
    while (got.find("\r\n\r\n") == std::string::npos) {
      ssize_t n = read(fd, buf, sizeof(buf));
      if (n <= 0) return false;
      got.append(buf, static_cast<size_t>(n));
    }
    return true;
  };
  std::thread server([&] {
    // First connection: one answer kept alive, then the next request read and dropped.
    int c = accept(listener, nullptr, nullptr);
    ++connections;
    const std::string ok = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst";
    if (read_request(c) && write(c, ok.data(), ok.size()) == static_cast<ssize_t>(ok.size())) {
      reused = read_request(c);
    }
    close(c);
    // Second: the request again, answered.
    c = accept(listener, nullptr, nullptr);
    ++connections;
    const std::string again =
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nagain";
    if (read_request(c)) (void)!write(c, again.data(), again.size());
    close(c);
  });
  AsyncHttpClient client;
  Answers answers;
  const std::string base = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  client.Request(base, "", "GET", "/1", 5s, answers.Add());
  ASSERT_TRUE(answers.WaitFor(1));
  client.Request(base, "", "GET", "/2", 5s, answers.Add());
  ASSERT_TRUE(answers.WaitFor(2));
  server.join();
  close(listener);
  ASSERT_TRUE(answers.got[0].ok()) << answers.got[0].status().ToString();
  EXPECT_EQ(answers.got[0]->body, "first");
  ASSERT_TRUE(answers.got[1].ok()) << answers.got[1].status().ToString();
  EXPECT_EQ(answers.got[1]->body, "again");
  EXPECT_TRUE(reused.load());
  EXPECT_EQ(connections.load(), 2);
}

}  // namespace
}  // namespace corral::net
