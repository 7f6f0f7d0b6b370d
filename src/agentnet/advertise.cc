#include "agentnet/advertise.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstring>

namespace corral::agentnet {

Result<std::string> LocalAddressToward(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return InvalidArgument("cannot resolve the head's host \"" + host + "\": " + gai_strerror(rc));
  }
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    int fd = socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    bool ok = connect(fd, a->ai_addr, a->ai_addrlen) == 0 &&
              getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0;
    if (!ok) error = std::strerror(errno);
    close(fd);
    if (!ok) continue;
    char text[INET6_ADDRSTRLEN] = {};
    const void* addr =
        local.ss_family == AF_INET6
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr)
            : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr);
    if (inet_ntop(local.ss_family, addr, text, sizeof(text)) == nullptr) continue;
    freeaddrinfo(found);
    return std::string(text);
  }
  freeaddrinfo(found);
  return Unavailable("no route toward the head at " + host + ": " + error);
}

std::string InterfaceOf(const std::string& address) {
  ifaddrs* all = nullptr;
  if (getifaddrs(&all) != 0) return "";
  std::string found;
  for (ifaddrs* i = all; i != nullptr && found.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    int family = i->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    char text[INET6_ADDRSTRLEN] = {};
    const void* addr =
        family == AF_INET6
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr)
            : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr);
    if (inet_ntop(family, addr, text, sizeof(text)) != nullptr && address == text) {
      found = i->ifa_name;
    }
  }
  freeifaddrs(all);
  return found;
}

Result<std::string> AdvertiseAddress(const std::string& flag, const std::string& head_host,
                                     int head_port) {
  if (flag.empty()) return LocalAddressToward(head_host, head_port);
  bool ok = flag.size() <= 253;
  for (char c : flag) {
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':');
  }
  in6_addr v6{};
  bool is_v6 = inet_pton(AF_INET6, flag.c_str(), &v6) == 1;
  if (!ok || (!is_v6 && flag.find(':') != std::string::npos)) {
    return InvalidArgument("flag '--advertise-addr': \"" + flag +
                           "\" is not an IP address or host name (no port: the log port comes "
                           "from --listen)");
  }
  return flag;
}

}  // namespace corral::agentnet
