// Which TCP ports of the node's port range (MASTER_PORT, services' PORT) a socket on this node
// already holds, listening or connected, so the head never hands a run a port its bind() would
// be refused (DESIGN §8).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace corral::agent {

// The local ports in [lo, hi] of the sockets but TIME_WAIT ones in a /proc/net/tcp or
// /proc/net/tcp6 text, sorted and unique.
std::vector<int32_t> ParsePortsInUse(const std::string& proc_net_tcp, int32_t lo, int32_t hi);

// Those of this network namespace (IPv4 and IPv6): from the kernel's socket diagnostics
// (NETLINK_SOCK_DIAG), which skip the TIME_WAIT sockets, else from /proc/net/tcp{,6}.
// The agent asks at every sync, and reading /proc walks every socket of the namespace, every
// TIME_WAIT included: it was a sixth of all CPU on a node starting 1,000 short jobs.
std::vector<int32_t> PortsInUse(int32_t lo, int32_t hi);
// The two ways, for tests: nullopt where the kernel refuses the netlink dump.
std::optional<std::vector<int32_t>> DiagPortsInUse(int32_t lo, int32_t hi);
std::vector<int32_t> ProcPortsInUse(int32_t lo, int32_t hi);

}  // namespace corral::agent
