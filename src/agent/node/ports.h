// Which TCP ports of the node's port range (MASTER_PORT, services' PORT) a socket on this node
// already holds, listening or connected, so the head never hands a run a port its bind() would
// be refused (DESIGN §8).
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
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

// The ports PortsInUse says, asked again only once `every_ms` have passed since the last ask.
// A dump of the kernel's TCP sockets walks every bucket of its established-connection table,
// whatever few sockets it holds (one for IPv4, one for IPv6), and an agent syncs a few times a
// job: at every sync that was a sixth of the agents' CPU on a node starting 1,000 short jobs
// (docs/benchmarks.md). The head's view was already as old as the last sync, which waits up to
// the long poll; a port taken in between is seen at the next ask. Thread-safe: the agent's sync
// loop and its report-at-once loop both sync.
class BusyPortsProbe {
 public:
  using Probe = std::function<std::vector<int32_t>(int32_t lo, int32_t hi)>;
  BusyPortsProbe(int32_t lo, int32_t hi, int64_t every_ms, Probe probe = PortsInUse);
  // The ports at `now_ms` (a steady clock's milliseconds).
  std::vector<int32_t> At(int64_t now_ms);

 private:
  const int32_t lo_;
  const int32_t hi_;
  const int64_t every_ms_;
  Probe probe_;
  std::mutex mu_;
  std::optional<int64_t> asked_at_;
  std::vector<int32_t> ports_;
};

}  // namespace corral::agent
