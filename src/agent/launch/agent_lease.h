// The agent's lease with the monitors of its interactive sessions and of its elastic replicas
// (monitor.h, RunOrder::elastic): a file in the
// state directory whose modification time the running agent renews, and that each session's
// monitor watches. A monitor that sees it unrenewed for the agent's lease (`corral agent
// --lease`) ends its session: an agent that is gone can no longer relay the session's terminal
// nor tell the head it runs, and the head frees its GPUs once it declares the node down (its
// --down-after, above the lease). An agent started again within the lease renews the same file,
// and recovers the session's run as any other. An elastic replica ends the same way: the head
// drops it from its run when it declares the node lost, and it must not train on unseen. Batch
// jobs get no lease: they outlive their agent.
//
// Why a file and not the monitor's socket to the agent: a monitor outlives the agent that
// started it, and must also see the next agent on the node, which has no socket to it; and a
// hung agent, whose sockets stay open, stops renewing too.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

namespace corral::agent {

// STATE/agent-lease.
std::string AgentLeasePath(const std::string& state_dir);

// How often the agent renews it: four times a lease, at least once a second, so that a monitor
// (which looks as often) never takes a live agent for a gone one.
constexpr int64_t AgentLeaseRenewMs(int64_t lease_ms) {
  return std::clamp<int64_t>(lease_ms / 4, 50, 1000);
}

// Sets the file's modification time to now, creating it (0600) where it is missing. False (with
// errno) where it cannot.
bool RenewAgentLease(const std::string& path);

}  // namespace corral::agent
