#include "agent/ports.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace corral::agent {
namespace {

TEST(Ports, ParsesListenSocketsInRange) {
  const std::string text =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid\n"
      "   0: 0100007F:7530 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0\n"
      "   1: 00000000:7531 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0\n"
      "   2: 0100007F:7532 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0\n"
      "   3: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0\n"
      "   4: 0100007F:7530 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0\n";
  // 0x7530 = 30000 and 0x7531 listen; 0x7532 is an established connection; 22 is outside.
  EXPECT_EQ(ParseListeningPorts(text, 29500, 30999), (std::vector<int32_t>{30000, 30001}));
  EXPECT_TRUE(ParseListeningPorts(text, 1, 21).empty());
}

TEST(Ports, SeesAPortThisProcessListensOn) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof(a);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  int32_t port = ntohs(a.sin_port);
  auto ports = ListeningPorts(port, port);
  close(fd);
  EXPECT_EQ(ports, std::vector<int32_t>{port});
  EXPECT_TRUE(ListeningPorts(port, port).empty());
}

}  // namespace
}  // namespace corral::agent
