// The HTTP server: what it answers, how it holds, limits and closes connections.
#include "net/http.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "net/http_test_util.h"

namespace corral::net {
namespace {

using namespace std::chrono_literals;
using namespace http_test;

TEST(HttpTest, BearerTokenParsing) {
  HttpRequest req;
  EXPECT_EQ(req.BearerToken(), "");
  req.headers["authorization"] = "Bearer abc.def";
  EXPECT_EQ(req.BearerToken(), "abc.def");
  req.headers["authorization"] = "  bearer \t tok  ";
  EXPECT_EQ(req.BearerToken(), "tok");
  req.headers["authorization"] = "BEARER x";
  EXPECT_EQ(req.BearerToken(), "x");
  req.headers["authorization"] = "Basic dXNlcjpwYXNz";
  EXPECT_EQ(req.BearerToken(), "");
  req.headers["authorization"] = "Bearer";
  EXPECT_EQ(req.BearerToken(), "");
  req.headers["authorization"] = "Bearerx y";
  EXPECT_EQ(req.BearerToken(), "");
}

TEST(HttpTest, JsonErrorShape) {
  auto e = JsonError(404, "not_found", "job \"7\" \xff not found");
  EXPECT_EQ(e.status, 404);
  EXPECT_EQ(e.content_type, "application/json");
  auto j = nlohmann::json::parse(e.body);
  EXPECT_EQ(j["error"]["code"], "not_found");
  EXPECT_NE(j["error"]["message"].get<std::string>().find("job \"7\""), std::string::npos);
}

TEST(HttpTest, HandlerErrorRepliesReachTheClient) {
  TestServer ts(EchoHandler());
  HttpClient client(ts.url(), "t");
  auto r = client.Get("/missing", kTimeout);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 404);
  auto j = nlohmann::json::parse(r->body);
  EXPECT_EQ(j["error"]["code"], "not_found");
  EXPECT_EQ(j["error"]["message"], "no such thing: /missing");
  // The connection survives an error reply.
  ASSERT_TRUE(client.Get("/ok", kTimeout).ok());
  EXPECT_EQ(client.connections_opened(), 1);
}

TEST(HttpTest, DroppedResponderAnswers500) {
  TestServer ts(EchoHandler());
  HttpClient client(ts.url(), "t");
  auto r = client.Get("/drop", kTimeout);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 500);
  EXPECT_EQ(nlohmann::json::parse(r->body)["error"]["code"], "internal");
}

TEST(HttpTest, ThrowingHandlerAnswers500) {
  TestServer ts([](HttpRequest, Responder) { throw std::runtime_error("boom"); });
  HttpClient client(ts.url(), "t");
  auto r = client.Get("/", kTimeout);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 500);
  EXPECT_NE(r->body.find("boom"), std::string::npos);
}

// A rendered body is made on the connection's I/O thread, not by whoever answered: the head's
// state machine hands over the value and moves on.
TEST(HttpTest, RenderedBodyIsMadeOnTheConnectionsThread) {
  std::atomic<std::thread::id> rendered_on{};
  std::thread::id answered_on;
  TestServer ts(
      [&](HttpRequest req, Responder respond) {
        answered_on = std::this_thread::get_id();
        if (req.path == "/fails") {
          HttpResponse r;
          r.render = []() -> std::string { throw std::runtime_error("cannot encode"); };
          return respond(std::move(r));
        }
        std::thread([&, respond = std::move(respond), path = req.path] {
          HttpResponse r;
          r.status = 201;
          r.render = [&rendered_on, path] {
            rendered_on = std::this_thread::get_id();
            return "{\"path\":\"" + path + "\"}";
          };
          respond(std::move(r));
        }).detach();
      },
      HttpServerOptions{.io_threads = 1});
  HttpClient client(ts.url(), "t");
  auto r = client.Get("/made-late", kTimeout);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 201);
  EXPECT_EQ(r->body, "{\"path\":\"/made-late\"}");
  // The answering thread was a detached one; the body was made on the server's one I/O
  // thread, the one the handler was called on.
  EXPECT_EQ(rendered_on.load(), answered_on);
  auto bad = client.Get("/fails", kTimeout);
  ASSERT_TRUE(bad.ok()) << bad.status().ToString();
  EXPECT_EQ(bad->status, 500);
  EXPECT_NE(bad->body.find("cannot encode"), std::string::npos) << bad->body;
}
TEST(HttpTest, LargeBodyRejectedWith413) {
  TestServer ts(EchoHandler());
  HttpClient client(ts.url(), "t");
  std::string big(9u << 20, 'x');  // default limit: 8 MiB
  auto r = client.Post("/v1/jobs", big, kTimeout);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(nlohmann::json::parse(r->body)["error"]["code"], "payload_too_large");
  // A body just under the limit passes, on a new connection.
  // (8 MiB each way through an echo: under ASan on a busy machine this outlasts kTimeout.)
  auto ok = client.Post("/v1/jobs", std::string(8u << 20, 'y'), std::chrono::seconds(60));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(nlohmann::json::parse(ok->body)["body"].get<std::string>().size(), 8u << 20);
}

TEST(HttpTest, OversizedHeaderRejectedWith431) {
  HttpServerOptions o;
  o.max_header_bytes = 1024;
  TestServer ts(EchoHandler(), o);
  HttpClient client(ts.url(), "t");
  auto r = client.Request("GET", "/", "", kTimeout, {{"X-Big", std::string(2000, 'h')}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 431);
}

TEST(HttpTest, MalformedRequestGets400) {
  TestServer ts(EchoHandler());
  RawConn c(ts.port);
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.Send("THIS IS NOT HTTP\r\n\r\n"));
  EXPECT_TRUE(c.ReadsEof());
  EXPECT_EQ(c.data().rfind("HTTP/1.1 400", 0), 0u) << c.data();
}

TEST(HttpTest, ResponderCalledLaterFromAnotherThread) {
  Held held;
  TestServer ts(EchoHandler(&held));
  std::thread answerer([&] {
    ASSERT_TRUE(held.WaitFor(1));
    std::this_thread::sleep_for(100ms);
    auto rs = held.Take();
    rs[0](Text(202, "later"));
    rs[0](Text(500, "twice"));  // a second call is ignored
  });
  HttpClient client(ts.url(), "t");
  const auto start = std::chrono::steady_clock::now();
  auto r = client.Get("/hold/1", kTimeout);
  answerer.join();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 202);
  EXPECT_EQ(r->body, "later");
  EXPECT_EQ(r->content_type, "text/plain");
  EXPECT_GE(std::chrono::steady_clock::now() - start, 100ms);
  // The connection carries on after a late answer.
  auto next = client.Get("/x", kTimeout);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->status, 200);
  EXPECT_EQ(client.connections_opened(), 1);
}

TEST(HttpTest, HeldRequestOutlivesTheReadTimeout) {
  HttpServerOptions o;
  o.read_timeout = 100ms;
  Held held;
  TestServer ts(EchoHandler(&held), o);
  std::thread answerer([&] {
    ASSERT_TRUE(held.WaitFor(1));
    std::this_thread::sleep_for(400ms);
    held.Take()[0](Text(200, "long-poll"));
  });
  HttpClient client(ts.url(), "t");
  auto r = client.Get("/hold/lp", kTimeout);
  answerer.join();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "long-poll");
}

TEST(HttpTest, SlowClientIsDisconnected) {
  HttpServerOptions o;
  o.read_timeout = 150ms;
  TestServer ts(EchoHandler(), o);
  RawConn c(ts.port);
  ASSERT_TRUE(c.Send("GET / HTTP/1.1\r\nHost: x\r\n"));  // never finishes the header
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(c.ReadsEof());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  EXPECT_TRUE(WaitUntil([&] { return ts.server.ConnectionCount() == 0; }));
}

// A header that trickles in, a byte at a time, is cut at the header deadline, however long
// the idle timeout.
TEST(HttpTest, AHeaderMustArriveWholeWithinTheHeaderDeadline) {
  HttpServerOptions o;
  o.header_timeout = 300ms;
  TestServer ts(EchoHandler(), o);
  RawConn c(ts.port);
  const auto start = std::chrono::steady_clock::now();
  bool cut = false;
  for (char ch : std::string("GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ") + std::string(100, 'a')) {
    if (!c.Send(std::string_view(&ch, 1))) {
      cut = true;
      break;
    }
    std::this_thread::sleep_for(20ms);
    if (ts.server.ConnectionCount() == 0) {
      cut = true;
      break;
    }
  }
  EXPECT_TRUE(cut) << "a header trickled in over 2 s was still being read";
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1500ms);
}

// One client's idle connections cannot use up the server's files: past the cap, its new
// connections are closed as they are accepted, and a client at another address is answered at
// once. The file limit is that of a head without the cap: room for the idle connections' own
// ends (in this process too) and a thousand more.
TEST(HttpTest, OneAddresssIdleConnectionsLeaveAnotherAddressAnswered) {
  constexpr int kIdle = 10000;
  rlimit old_limit{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &old_limit), 0);
  rlimit limit = old_limit;
  limit.rlim_cur = kIdle + 1000;
  if (limit.rlim_max < limit.rlim_cur) GTEST_SKIP() << "file limit under " << limit.rlim_cur;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &limit), 0);
  {
    HttpServerOptions o;
    o.max_connections_per_address = 256;
    TestServer ts(EchoHandler(), o);
    sockaddr_in server{};
    server.sin_family = AF_INET;
    server.sin_port = htons(static_cast<uint16_t>(ts.port));
    server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    // The other client's socket exists before the flood (the flood may use up the files).
    int other = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(other, 0);
    sockaddr_in from{};
    from.sin_family = AF_INET;
    from.sin_addr.s_addr = htonl(0x7f000002);  // 127.0.0.2
    ASSERT_EQ(::bind(other, reinterpret_cast<sockaddr*>(&from), sizeof from), 0);
    std::vector<int> idle;
    for (int i = 0; i < kIdle; ++i) {
      int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
      if (fd < 0) break;
      (void)::connect(fd, reinterpret_cast<sockaddr*>(&server), sizeof server);  // in progress
      idle.push_back(fd);
    }
    EXPECT_EQ(idle.size(), static_cast<size_t>(kIdle));
    // Let the server take them all (the cap's refusals free their files as they come).
    std::this_thread::sleep_for(2s);
    timeval tv{.tv_sec = 1, .tv_usec = 0};
    ::setsockopt(other, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const auto start = std::chrono::steady_clock::now();
    ASSERT_EQ(::connect(other, reinterpret_cast<sockaddr*>(&server), sizeof server), 0);
    const std::string req = "GET /other HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    ASSERT_EQ(::send(other, req.data(), req.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(req.size()));
    std::string got;
    char buf[4096];
    for (ssize_t n; (n = ::recv(other, buf, sizeof buf, 0)) > 0;) got.append(buf, n);
    const auto took = std::chrono::steady_clock::now() - start;
    std::printf(
        "127.0.0.2 answered in %.1f ms beside %zu idle connections from 127.0.0.1; the "
        "server holds %zu\n",
        std::chrono::duration<double, std::milli>(took).count(), idle.size(),
        ts.server.ConnectionCount());
    EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got;
    EXPECT_LT(took, 1s);
    EXPECT_LE(ts.server.ConnectionCount(), 257u);
    ::close(other);
    for (int fd : idle) ::close(fd);
  }
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &old_limit), 0);
}

TEST(HttpTest, ResponderAfterClientWentAwayIsANoOp) {
  Held held;
  TestServer ts(EchoHandler(&held));
  {
    RawConn c(ts.port);
    ASSERT_TRUE(c.Send("GET /hold/gone HTTP/1.1\r\nHost: x\r\n\r\n"));
    ASSERT_TRUE(held.WaitFor(1));
    EXPECT_EQ(ts.server.ConnectionCount(), 1u);
  }  // the client closes
  // The server notices the disconnect while the request is still held.
  EXPECT_TRUE(WaitUntil([&] { return ts.server.ConnectionCount() == 0; }));
  auto rs = held.Take();
  std::thread t([&] { rs[0](Text(200, "nobody listens")); });
  t.join();
  rs.clear();
  // The server still serves.
  HttpClient client(ts.url(), "t");
  auto r = client.Get("/x", kTimeout);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
}

TEST(HttpTest, ResponderAfterStopIsANoOp) {
  Held held;
  std::vector<Responder> rs;
  {
    TestServer ts(EchoHandler(&held));
    RawConn c(ts.port);
    ASSERT_TRUE(c.Send("GET /hold/stop HTTP/1.1\r\nHost: x\r\n\r\n"));
    ASSERT_TRUE(held.WaitFor(1));
    const auto start = std::chrono::steady_clock::now();
    ts.server.Stop();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
    EXPECT_TRUE(c.ReadsEof());  // the held connection was closed
    rs = held.Take();
    rs[0](Text(200, "after stop"));
  }                                    // server destroyed
  std::thread t([&] { rs.clear(); });  // dropping it after destruction: no 500 attempt crashes
  t.join();
}

TEST(HttpTest, PipelinedRequestsAnsweredInOrder) {
  Held held;
  TestServer ts(EchoHandler(&held));
  RawConn c(ts.port);
  ASSERT_TRUE(
      c.Send("GET /hold/1 HTTP/1.1\r\nHost: x\r\n\r\nGET /second HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_TRUE(held.WaitFor(1));
  std::this_thread::sleep_for(50ms);  // the second request sits buffered meanwhile
  held.Take()[0](Text(200, "first"));
  const std::string got = c.ReadUntil("HTTP/1.1 200", 2);
  ASSERT_NE(got.find("first"), std::string::npos) << got;
  const auto second = got.find("/second");
  ASSERT_NE(second, std::string::npos) << got;
  EXPECT_LT(got.find("first"), second);
}

TEST(HttpTest, ExpectContinue) {
  TestServer ts(EchoHandler());
  RawConn c(ts.port);
  ASSERT_TRUE(
      c.Send("POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"));
  ASSERT_NE(c.ReadUntil("\r\n\r\n").find("HTTP/1.1 100 Continue"), std::string::npos) << c.data();
  ASSERT_TRUE(c.Send("hello"));
  const std::string got = c.ReadUntil("HTTP/1.1 200");
  EXPECT_NE(got.find("HTTP/1.1 200"), std::string::npos) << got;
}

TEST(HttpTest, HttpTenCloseAfterResponse) {
  TestServer ts(EchoHandler());
  RawConn c(ts.port);
  ASSERT_TRUE(c.Send("GET /old HTTP/1.0\r\n\r\n"));
  EXPECT_TRUE(c.ReadsEof());
  EXPECT_EQ(c.data().rfind("HTTP/1.0 200", 0), 0u) << c.data();
  EXPECT_NE(c.data().find("/old"), std::string::npos);
}

TEST(HttpTest, HalfClosingClientStillGetsAnImmediateAnswer) {
  TestServer ts(EchoHandler());
  RawConn c(ts.port);
  ASSERT_TRUE(c.Send("GET /half HTTP/1.1\r\nHost: x\r\n\r\n"));
  c.ShutdownWrite();  // as `nc -N` does
  EXPECT_TRUE(c.ReadsEof());
  EXPECT_EQ(c.data().rfind("HTTP/1.1 200", 0), 0u) << c.data();
  EXPECT_NE(c.data().find("/half"), std::string::npos);
}

TEST(HttpTest, InvalidStatusAndInjectedHeadersAreSanitized) {
  TestServer ts([](HttpRequest req, Responder respond) {
    HttpResponse r;
    r.status = req.path == "/interim" ? 100 : 204;
    r.body = "dropped for 204";
    r.headers["X-Evil"] = "a\r\nSet-Cookie: x=1";
    r.headers["Content-Length"] = "999";
    respond(std::move(r));
  });
  HttpClient client(ts.url(), "t");
  auto a = client.Get("/interim", kTimeout);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->status, 500);
  auto b = client.Get("/empty", kTimeout);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->status, 204);
  EXPECT_EQ(b->body, "");
  EXPECT_EQ(b->headers.count("x-evil"), 0u);
  EXPECT_EQ(b->headers.count("set-cookie"), 0u);
  EXPECT_EQ(client.connections_opened(), 1);
}

TEST(HttpTest, HeadGetsLengthWithoutBody) {
  TestServer ts([](HttpRequest, Responder respond) { respond(Text(200, "0123456789")); });
  HttpClient client(ts.url(), "t");
  auto r = client.Request("HEAD", "/h", "", kTimeout);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->headers["content-length"], "10");
  EXPECT_EQ(r->body, "");
  // The framing stayed right: the next request on the same connection works.
  auto g = client.Get("/g", kTimeout);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->body, "0123456789");
  EXPECT_EQ(client.connections_opened(), 1);
}

TEST(HttpTest, ListenErrors) {
  HttpServer a(EchoHandler());
  auto p = a.Listen("127.0.0.1", 0);
  ASSERT_TRUE(p.ok());
  HttpServer b(EchoHandler());
  auto again = b.Listen("127.0.0.1", *p);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("127.0.0.1:" + std::to_string(*p)), std::string::npos);
  EXPECT_FALSE(b.Listen("127.0.0.1", 70000).ok());
  auto local = b.Listen("localhost", 0);
  EXPECT_TRUE(local.ok()) << local.status().ToString();
}

}  // namespace
}  // namespace corral::net
