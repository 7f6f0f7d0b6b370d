#include "agent/node/ports.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace corral::agent {
namespace {

TEST(Ports, ParsesSocketsHoldingAPortInRange) {
  const std::string text =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid\n"
      "   0: 0100007F:7530 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0\n"
      "   1: 00000000:7531 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0\n"
      "   2: 0100007F:7532 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0\n"
      "   3: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0\n"
      "   4: 0100007F:7530 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0\n"
      "   5: 0100007F:7533 0100007F:9C40 06 00000000:00000000 00:00000000 00000000     0\n";
  // 0x7530 = 30000 and 0x7531 listen; 0x7532 is an established connection, whose port a bind()
  // is refused as well; 0x7533 is in TIME_WAIT; 22 is outside.
  EXPECT_EQ(ParsePortsInUse(text, 29500, 30999), (std::vector<int32_t>{30000, 30001, 30002}));
  EXPECT_TRUE(ParsePortsInUse(text, 1, 21).empty());
}

// A socket listening on an ephemeral port of 127.0.0.1; fd -1 on failure.
int ListenOnLoopback(sockaddr_in* a) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  *a = {};
  a->sin_family = AF_INET;
  a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(*a);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(a), sizeof(*a)) != 0 || listen(fd, 1) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(a), &len) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

TEST(Ports, SeesAPortThisProcessListensOn) {
  sockaddr_in a;
  int fd = ListenOnLoopback(&a);
  ASSERT_GE(fd, 0);
  int32_t port = ntohs(a.sin_port);
  auto ports = PortsInUse(port, port);
  close(fd);
  EXPECT_EQ(ports, std::vector<int32_t>{port});
  EXPECT_TRUE(PortsInUse(port, port).empty());
}

// The socket-diagnostics dump and /proc agree, over IPv4 and IPv6 listeners and a connected
// socket's local port (an outgoing connection's ephemeral port, which a replica's bind() would
// find taken: both count it).
TEST(Ports, SocketDiagnosticsAndProcAgree) {
  sockaddr_in a;
  int v4 = ListenOnLoopback(&a);
  int v6 = socket(AF_INET6, SOCK_STREAM, 0);
  ASSERT_GE(v4, 0);
  ASSERT_GE(v6, 0);
  sockaddr_in6 b{};
  b.sin6_family = AF_INET6;
  b.sin6_addr = in6addr_loopback;
  bool have_v6 = bind(v6, reinterpret_cast<sockaddr*>(&b), sizeof(b)) == 0 && listen(v6, 1) == 0;
  socklen_t len = sizeof(b);
  if (have_v6) {
    ASSERT_EQ(getsockname(v6, reinterpret_cast<sockaddr*>(&b), &len), 0);
  }
  // A connection to the IPv4 listener: its client end holds its port too.
  int client = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(connect(client, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  sockaddr_in c{};
  len = sizeof(c);
  ASSERT_EQ(getsockname(client, reinterpret_cast<sockaddr*>(&c), &len), 0);
  int32_t p4 = ntohs(a.sin_port), p6 = have_v6 ? ntohs(b.sin6_port) : p4, pc = ntohs(c.sin_port);
  // Why it counts: a server's bind() to it is refused even with SO_REUSEADDR.
  int server = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ASSERT_EQ(setsockopt(server, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), 0);
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_port = c.sin_port;
  EXPECT_NE(bind(server, reinterpret_cast<sockaddr*>(&any), sizeof(any)), 0);
  EXPECT_EQ(errno, EADDRINUSE);
  close(server);
  // One port at a time: a range between them could hold other listeners of this machine.
  for (int32_t port : {p4, p6, pc}) {
    const std::vector<int32_t> want{port};
    auto diag = DiagPortsInUse(port, port);
    ASSERT_TRUE(diag.has_value()) << "NETLINK_SOCK_DIAG refused";
    EXPECT_EQ(*diag, want) << "port " << port;
    EXPECT_EQ(ProcPortsInUse(port, port), want) << "port " << port;
  }
  close(client);
  close(v4);
  close(v6);
}

TEST(BusyPortsProbe, AsksAgainOnlyOnceTheIntervalHasPassed) {
  int asks = 0;
  std::vector<int32_t> held{29501};
  BusyPortsProbe probe(29500, 29999, 1000, [&](int32_t lo, int32_t hi) {
    ++asks;
    EXPECT_EQ(lo, 29500);
    EXPECT_EQ(hi, 29999);
    return held;
  });
  EXPECT_EQ(probe.At(5000), (std::vector<int32_t>{29501}));
  held = {29501, 29502};
  EXPECT_EQ(probe.At(5999), (std::vector<int32_t>{29501})) << "asked again within the interval";
  EXPECT_EQ(asks, 1);
  EXPECT_EQ(probe.At(6000), (std::vector<int32_t>{29501, 29502}));
  EXPECT_EQ(asks, 2);
  EXPECT_EQ(probe.At(6001), (std::vector<int32_t>{29501, 29502}));
  EXPECT_EQ(asks, 2);
}

TEST(BusyPortsProbe, AZeroIntervalAsksEveryTime) {
  int asks = 0;
  BusyPortsProbe probe(1, 2, 0, [&](int32_t, int32_t) {
    ++asks;
    return std::vector<int32_t>{};
  });
  probe.At(10);
  probe.At(10);
  EXPECT_EQ(asks, 2);
}

}  // namespace
}  // namespace corral::agent
