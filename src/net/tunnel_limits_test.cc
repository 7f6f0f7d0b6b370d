// What a spliced connection (tunnel.h) is held to: its place under its address's connection cap
// while it lasts, and its idle time, after which both of its sockets are closed.
#include <dirent.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "net/http_server.h"
#include "net/http_test_util.h"
#include "net/tunnel.h"

namespace corral::net {
namespace {

using namespace std::chrono_literals;
using namespace http_test;

// An upstream that takes each connection's request as a WebSocket's opening (101), then echoes
// whatever comes until its peer closes; counts the connections that ended.
class EchoUpstream {
 public:
  EchoUpstream()
      : server_([this](int, int fd) {
          if (!ScriptedServer::ReadRequest(fd)) return;
          ScriptedServer::Send(fd,
                               "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n");
          char buf[4096];
          for (;;) {
            const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
            if (n <= 0) break;
            ScriptedServer::Send(fd, std::string_view(buf, static_cast<size_t>(n)));
          }
          ++ended_;
        }) {}
  std::string url() const { return server_.url(); }
  int ended() const { return ended_; }

 private:
  std::atomic<int> ended_{0};
  ScriptedServer server_;  // one connection at a time: its thread runs each to its end
};

int OpenFiles() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  while (::readdir(d) != nullptr) ++n;
  ::closedir(d);
  return n;
}

HttpServerOptions Splicing(const std::string& upstream, std::chrono::milliseconds idle,
                           size_t cap) {
  HttpServerOptions o;
  o.io_threads = 1;
  o.max_connections_per_address = cap;
  o.takeover_prefix = "/s/";
  o.takeover = [upstream, idle](HttpRequest req, std::shared_ptr<TakenConnection> conn) {
    conn->Splice(upstream, nullptr, SerializeRequest(req.method, req.target, req.headers, ""),
                 idle);
  };
  return o;
}

constexpr char kUpgrade[] =
    "GET /s/1/api/kernels/k/channels HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
    "Upgrade: websocket\r\n\r\n";

// Opens a WebSocket through `port` and checks one echo; false if the server closed it.
bool OpenAndEcho(RawConn& c) {
  if (!c.connected() || !c.Send(kUpgrade)) return false;
  if (c.ReadUntil("\r\n\r\n").find(" 101 ") == std::string::npos) return false;
  return c.Send("ping") && c.ReadUntil("ping").ends_with("ping");
}

TEST(TunnelLimits, SplicedConnectionsKeepTheirPlaceUnderTheAddresssCap) {
  EchoUpstream upstream;
  // The upstream serves one connection at a time; its cap here is what the front holds.
  TestServer front(EchoHandler(), Splicing(upstream.url(), 10s, /*cap=*/1));
  RawConn first(front.port);
  ASSERT_TRUE(OpenAndEcho(first));
  EXPECT_EQ(front.server.ConnectionCount(), 0u) << "it left the server";
  // The address has its one connection open, spliced: another is closed unanswered.
  RawConn second(front.port);
  ASSERT_TRUE(second.connected());
  second.Send(kUpgrade);
  EXPECT_TRUE(second.ReadsEof());
  EXPECT_EQ(second.data(), "") << "closed unanswered";
  // Once the first closes, its place is free again.
  first.Close();
  ASSERT_TRUE(WaitUntil([&] { return upstream.ended() == 1; }));
  bool served = false;
  for (int i = 0; i < 50 && !served; ++i) {
    RawConn third(front.port);
    served = OpenAndEcho(third);
    if (!served) std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(served);
}

TEST(TunnelLimits, ASilentSplicedConnectionIsClosedAfterItsIdleTimeAndItsFilesReleased) {
  EchoUpstream upstream;
  TestServer front(EchoHandler(), Splicing(upstream.url(), 400ms, /*cap=*/1));
  const int files_before = OpenFiles();
  {
    RawConn c(front.port);
    ASSERT_TRUE(OpenAndEcho(c));
    // Traffic keeps it open well past its idle time.
    for (int i = 0; i < 8; ++i) {
      std::this_thread::sleep_for(100ms);
      ASSERT_TRUE(c.Send("x" + std::to_string(i)));
      ASSERT_NE(c.ReadUntil("x" + std::to_string(i)).find("x" + std::to_string(i)),
                std::string::npos)
          << "closed while in use, after " << (i + 1) * 100 << " ms";
    }
    // Then silence: both ends are closed after the idle time, not before.
    const auto silent_from = std::chrono::steady_clock::now();
    EXPECT_TRUE(c.ReadsEof());
    const auto waited = std::chrono::steady_clock::now() - silent_from;
    EXPECT_GE(waited, 350ms);
    EXPECT_LT(waited, 3s);
    EXPECT_TRUE(WaitUntil([&] { return upstream.ended() == 1; })) << "the upstream's end too";
  }
  // Every socket of the splice is closed, and the address may connect again.
  EXPECT_TRUE(WaitUntil([&] { return OpenFiles() <= files_before; }))
      << OpenFiles() << " files open, " << files_before << " before";
  RawConn again(front.port);
  EXPECT_TRUE(OpenAndEcho(again));
}

}  // namespace
}  // namespace corral::net
