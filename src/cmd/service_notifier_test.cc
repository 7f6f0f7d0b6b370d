#include "cmd/service_notifier.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

namespace corral::cmd {
namespace {

using std::chrono::microseconds;
using namespace std::chrono_literals;

// A datagram socket standing in for systemd's notify socket: `name` is a path, or '@' and an
// abstract name.
class FakeManager {
 public:
  explicit FakeManager(const std::string& name) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, name.data(), name.size());
    if (name[0] == '@') addr.sun_path[0] = '\0';
    auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len), 0) << std::strerror(errno);
  }
  ~FakeManager() { ::close(fd_); }

  // The next datagram within `timeout_ms`, or "" if none came.
  std::string Next(int timeout_ms = 2000) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) != 1) return "";
    char buf[4096];
    ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    return n > 0 ? std::string(buf, n) : "";
  }

 private:
  int fd_ = -1;
};

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("corral-notify-" + name + "-" + std::to_string(getpid())))
      .string();
}

TEST(ServiceNotifier, ReadyWithStatusReachesAPathSocket) {
  std::string path = TempPath("path");
  std::filesystem::remove(path);
  FakeManager manager(path);
  ServiceNotifier n(path, 0us);
  ASSERT_TRUE(n.Ready("leading").ok());
  EXPECT_EQ(manager.Next(), "READY=1\nSTATUS=leading");
  std::filesystem::remove(path);
}

TEST(ServiceNotifier, AnAtNamesAnAbstractSocket) {
  std::string name = "@corral-notify-test-" + std::to_string(getpid());
  FakeManager manager(name);
  ServiceNotifier n(name, 0us);
  ASSERT_TRUE(n.Stopping().ok());
  EXPECT_EQ(manager.Next(), "STOPPING=1");
}

TEST(ServiceNotifier, WithoutASocketNothingIsSentAndNothingFails) {
  ServiceNotifier n("", 1s);
  EXPECT_FALSE(n.enabled());
  EXPECT_TRUE(n.Ready("").ok());
  n.Alive();
}

TEST(ServiceNotifier, BadOrDeadSocketsAreErrors) {
  EXPECT_EQ(ServiceNotifier("relative/path", 0us).Ready("").code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ServiceNotifier(TempPath("nobody"), 0us).Ready("").code(), ErrorCode::kUnavailable);
}

TEST(ServiceNotifier, AliveSendsAtMostOnceAQuarterOfTheWatchdog) {
  std::string name = "@corral-notify-alive-" + std::to_string(getpid());
  FakeManager manager(name);
  ServiceNotifier n(name, 200ms);
  n.Alive();
  n.Alive();
  EXPECT_EQ(manager.Next(), "WATCHDOG=1");
  EXPECT_EQ(manager.Next(20), "") << "a second keep-alive within 50 ms";
  std::this_thread::sleep_for(60ms);
  n.Alive();
  EXPECT_EQ(manager.Next(), "WATCHDOG=1");

  ServiceNotifier no_watchdog(name, 0us);
  no_watchdog.Alive();
  EXPECT_EQ(manager.Next(20), "");
}

TEST(ServiceNotifier, FromEnvironmentTakesTheVariablesAndClearsThem) {
  setenv("NOTIFY_SOCKET", "@somewhere", 1);
  setenv("WATCHDOG_USEC", "3000000", 1);
  setenv("WATCHDOG_PID", std::to_string(getpid()).c_str(), 1);
  ServiceNotifier n = ServiceNotifier::FromEnvironment();
  EXPECT_TRUE(n.enabled());
  EXPECT_EQ(n.watchdog(), 3s);
  for (const char* name : {"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"}) {
    EXPECT_EQ(std::getenv(name), nullptr) << name;
  }
  // A watchdog meant for another process (our parent's) is not ours to feed.
  setenv("NOTIFY_SOCKET", "@somewhere", 1);
  setenv("WATCHDOG_USEC", "3000000", 1);
  setenv("WATCHDOG_PID", std::to_string(getpid() + 1).c_str(), 1);
  EXPECT_EQ(ServiceNotifier::FromEnvironment().watchdog(), 0us);
  EXPECT_FALSE(ServiceNotifier::FromEnvironment().enabled());
}

}  // namespace
}  // namespace corral::cmd
