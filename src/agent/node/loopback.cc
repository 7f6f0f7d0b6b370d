#include "agent/node/loopback.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace corral::agent {

Result<OwnedFd> ConnectLoopback(int32_t port, int timeout_ms) {
  OwnedFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return Internal("socket: " + std::string(strerror(errno)));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 && errno != EINPROGRESS) {
    return Unavailable("connect to port " + std::to_string(port) + ": " + strerror(errno));
  }
  pollfd p{fd.get(), POLLOUT, 0};
  int err = 0;
  socklen_t len = sizeof(err);
  if (poll(&p, 1, timeout_ms) != 1 || getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0 ||
      err != 0) {
    return Unavailable("connect to port " + std::to_string(port) + ": " +
                       (err != 0 ? strerror(err) : "timed out"));
  }
  return fd;
}

}  // namespace corral::agent
