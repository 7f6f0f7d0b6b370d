#include "cmd/service_notifier.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace corral::cmd {

using std::chrono::microseconds;

ServiceNotifier::ServiceNotifier(std::string socket, microseconds watchdog)
    : socket_(std::move(socket)), watchdog_(watchdog) {}

ServiceNotifier ServiceNotifier::FromEnvironment() {
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v != nullptr ? v : "");
  };
  std::string socket = env("NOTIFY_SOCKET");
  int64_t usec = std::strtoll(env("WATCHDOG_USEC").c_str(), nullptr, 10);
  std::string pid = env("WATCHDOG_PID");
  if (usec < 0 || (!pid.empty() && pid != std::to_string(getpid()))) usec = 0;
  for (const char* name : {"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"}) unsetenv(name);
  return ServiceNotifier(std::move(socket), microseconds(usec));
}

Status ServiceNotifier::Notify(std::string_view message) const {
  if (socket_.empty()) return Status::Ok();
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if ((socket_[0] != '/' && socket_[0] != '@') || socket_.size() >= sizeof(addr.sun_path)) {
    return InvalidArgument("NOTIFY_SOCKET: got \"" + socket_ +
                           "\", want an absolute path or @ and an abstract name, under " +
                           std::to_string(sizeof(addr.sun_path)) + " bytes");
  }
  std::memcpy(addr.sun_path, socket_.data(), socket_.size());
  if (addr.sun_path[0] == '@') addr.sun_path[0] = '\0';  // abstract: no trailing NUL either
  auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + socket_.size());
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Internal(std::string("notify socket: ") + std::strerror(errno));
  ssize_t sent = ::sendto(fd, message.data(), message.size(), MSG_NOSIGNAL,
                          reinterpret_cast<const sockaddr*>(&addr), len);
  int err = errno;
  ::close(fd);
  if (sent != static_cast<ssize_t>(message.size())) {
    return Unavailable("notifying " + socket_ + ": " + std::strerror(err));
  }
  return Status::Ok();
}

Status ServiceNotifier::Ready(std::string_view status) const {
  std::string message = "READY=1";
  if (!status.empty()) message += "\nSTATUS=" + std::string(status);
  return Notify(message);
}

void ServiceNotifier::Alive() {
  if (socket_.empty() || watchdog_.count() <= 0) return;
  int64_t now =
      std::chrono::duration_cast<microseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count();
  int64_t last = last_alive_us_.load();
  if (now - last < watchdog_.count() / 4) return;
  // One of several threads calling at once sends.
  if (!last_alive_us_.compare_exchange_strong(last, now)) return;
  (void)Notify("WATCHDOG=1");  // a lost keep-alive shows as the watchdog's own timeout
}

}  // namespace corral::cmd
