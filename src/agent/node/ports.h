// Which TCP ports of the MASTER_PORT range something on this node already listens on, so the
// head never hands a run a rendezvous port that another process holds (DESIGN §8).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace corral::agent {

// The local ports in [lo, hi] of the LISTEN sockets in a /proc/net/tcp or /proc/net/tcp6 text,
// sorted and unique.
std::vector<int32_t> ParseListeningPorts(const std::string& proc_net_tcp, int32_t lo, int32_t hi);

// Those of this network namespace (IPv4 and IPv6): from the kernel's socket diagnostics
// (NETLINK_SOCK_DIAG), which walk only the listening sockets, else from /proc/net/tcp{,6}.
// The agent asks at every sync, and reading /proc walks every socket of the namespace, every
// TIME_WAIT included: it was a sixth of all CPU on a node starting 1,000 short jobs.
std::vector<int32_t> ListeningPorts(int32_t lo, int32_t hi);
// The two ways, for tests: nullopt where the kernel refuses the netlink dump.
std::optional<std::vector<int32_t>> DiagListeningPorts(int32_t lo, int32_t hi);
std::vector<int32_t> ProcListeningPorts(int32_t lo, int32_t hi);

}  // namespace corral::agent
