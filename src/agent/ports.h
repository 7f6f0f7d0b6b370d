// Which TCP ports of the MASTER_PORT range something on this node already listens on, so the
// head never hands a run a rendezvous port that another process holds (DESIGN §8).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace corral::agent {

// The local ports in [lo, hi] of the LISTEN sockets in a /proc/net/tcp or /proc/net/tcp6 text,
// sorted and unique.
std::vector<int32_t> ParseListeningPorts(const std::string& proc_net_tcp, int32_t lo, int32_t hi);

// Those of this network namespace (IPv4 and IPv6).
std::vector<int32_t> ListeningPorts(int32_t lo, int32_t hi);

}  // namespace corral::agent
