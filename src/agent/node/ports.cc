#include "agent/node/ports.h"

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>

#include "agent/node/owned_fd.h"

namespace corral::agent {
namespace {

// Every TCP state but TIME_WAIT: a listener, and as much a connected socket's local port (an
// outgoing connection's ephemeral port can fall in the range), make another bind() fail with
// EADDRINUSE; a TIME_WAIT socket does not stop one with SO_REUSEADDR (Python's http.server,
// PyTorch's TCPStore), and TIME_WAIT sockets are most of a busy node's.
constexpr uint32_t kStatesHoldingAPort = ((1u << (TCP_CLOSING + 1)) - 1) & ~(1u << TCP_TIME_WAIT);

void SortUnique(std::vector<int32_t>* v) {
  std::sort(v->begin(), v->end());
  v->erase(std::unique(v->begin(), v->end()), v->end());
}

// One family's sockets that hold their port over NETLINK_SOCK_DIAG; false if the kernel would
// not say.
bool AppendDiagPortsInUse(int fd, uint8_t family, int32_t lo, int32_t hi,
                          std::vector<int32_t>* out) {
  struct {
    nlmsghdr nlh;
    inet_diag_req_v2 req;
  } msg{};
  msg.nlh.nlmsg_len = sizeof(msg);
  msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  msg.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  msg.req.sdiag_family = family;
  msg.req.sdiag_protocol = IPPROTO_TCP;
  msg.req.idiag_states = kStatesHoldingAPort;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (sendto(fd, &msg, sizeof(msg), 0, reinterpret_cast<sockaddr*>(&kernel), sizeof(kernel)) !=
      static_cast<ssize_t>(sizeof(msg))) {
    return false;
  }
  alignas(nlmsghdr) char buf[16384];
  while (true) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    int len = static_cast<int>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
      if (h->nlmsg_type == NLMSG_DONE) return true;
      if (h->nlmsg_type == NLMSG_ERROR) return false;
      if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY) continue;
      const auto* d = static_cast<const inet_diag_msg*>(NLMSG_DATA(h));
      int32_t port = ntohs(d->id.idiag_sport);
      if (port >= lo && port <= hi) out->push_back(port);
    }
  }
}

}  // namespace

std::vector<int32_t> ParsePortsInUse(const std::string& text, int32_t lo, int32_t hi) {
  // "  sl  local_address rem_address   st ...": local_address is HEXIP:HEXPORT, st 06 TIME_WAIT.
  std::vector<int32_t> out;
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string slot, local, remote, state;
    if (!(f >> slot >> local >> remote >> state) || state == "06") continue;
    auto colon = local.rfind(':');
    if (colon == std::string::npos) continue;
    int32_t port = 0;
    try {
      port = static_cast<int32_t>(std::stol(local.substr(colon + 1), nullptr, 16));
    } catch (...) {
      continue;
    }
    if (port >= lo && port <= hi) out.push_back(port);
  }
  SortUnique(&out);
  return out;
}

std::optional<std::vector<int32_t>> DiagPortsInUse(int32_t lo, int32_t hi) {
  OwnedFd s(socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
  if (!s.valid()) return std::nullopt;
  std::vector<int32_t> out;
  for (uint8_t family : {AF_INET, AF_INET6}) {
    if (!AppendDiagPortsInUse(s.get(), family, lo, hi, &out)) return std::nullopt;
  }
  SortUnique(&out);
  return out;
}

std::vector<int32_t> ProcPortsInUse(int32_t lo, int32_t hi) {
  std::vector<int32_t> out;
  for (const char* path : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    for (int32_t p : ParsePortsInUse(text.str(), lo, hi)) out.push_back(p);
  }
  SortUnique(&out);
  return out;
}

std::vector<int32_t> PortsInUse(int32_t lo, int32_t hi) {
  if (auto ports = DiagPortsInUse(lo, hi)) return *ports;
  return ProcPortsInUse(lo, hi);
}

BusyPortsProbe::BusyPortsProbe(int32_t lo, int32_t hi, int64_t every_ms, Probe probe)
    : lo_(lo), hi_(hi), every_ms_(every_ms), probe_(std::move(probe)) {}

std::vector<int32_t> BusyPortsProbe::At(int64_t now_ms) {
  std::lock_guard lock(mu_);
  if (!asked_at_ || now_ms - *asked_at_ >= every_ms_ || now_ms < *asked_at_) {
    ports_ = probe_(lo_, hi_);
    asked_at_ = now_ms;
  }
  return ports_;
}

}  // namespace corral::agent
