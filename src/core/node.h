// Nodes and their GPUs (DESIGN §4).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/gpu_health.h"
#include "core/time.h"

namespace corral {

// A node's state is two facts that change for different reasons and must not overwrite each
// other: whether its agent is heard from (liveness, set by syncs and their absence) and whether
// an operator took it out (drain, set only by drain and undrain). A drained node that goes
// silent and comes back is still drained.
enum class Liveness { kAlive, kUnreachable, kDown };
const char* LivenessName(Liveness l);
bool ParseLiveness(const std::string& text, Liveness* out);
enum class Drain { kNone, kDraining, kDrained };
const char* DrainName(Drain d);
bool ParseDrain(const std::string& text, Drain* out);

// The one word shown for a node (the API's "state", sinfo, metrics): a node not heard from is
// unreachable or down whatever its drain; otherwise its drain, or ready.
enum class NodeState { kReady, kDraining, kDrained, kUnreachable, kDown };
const char* NodeStateName(NodeState s);
bool ParseNodeState(const std::string& text, NodeState* out);

struct Gpu {
  int32_t index = 0;
  std::string uuid;
  std::string model;
  int64_t memory_mb = 0;
  int32_t group = 0;  // NVLink/NUMA group: GPUs in one group talk fastest
  bool healthy = true;
  bool operator==(const Gpu&) const = default;
};

struct Node {
  std::string name;
  std::string address;
  std::map<std::string, std::string> labels;  // rack, zone, gpu_model, ...
  Liveness liveness = Liveness::kAlive;
  Drain drain = Drain::kNone;
  std::string drain_reason;  // with a drain: who drained it and why ("drained by ana: fan")
  // Non-empty: some GPU failed its probe (why, per GPU); the node gets no new runs until its
  // agent reports every GPU healthy again. Independent of `drain` (an admin's).
  std::string unhealthy;
  // GPUs out of service, by index: drained by an operator or by the health checks. The node's
  // other GPUs stay schedulable; a run already on a drained GPU is the drainer's business
  // (health: requeued; admin: let finish). Kept across agent registrations.
  std::map<int32_t, GpuDrain> gpu_drains;
  int32_t cpu_milli = 0;
  int64_t memory_mb = 0;
  std::vector<Gpu> gpus;
  uint64_t agent_epoch = 0;  // bumps on every agent (re)registration
  TimeMs last_heartbeat = 0;
  TimeMs registered_at = 0;
  int32_t port_lo = 0;  // the agent's MASTER_PORT range; 0: the head's default
  int32_t port_hi = 0;

  NodeState state() const;
  // Alive, not drained, every GPU healthy: the scheduler may place new runs here.
  bool Schedulable() const {
    return liveness == Liveness::kAlive && drain == Drain::kNone && unhealthy.empty();
  }
};

struct QueueConfig {
  std::string name;         // hierarchical: "org/team"
  int32_t quota_gpus = 0;   // guaranteed
  int32_t limit_gpus = -1;  // -1: no limit
  double weight = 1.0;
  int32_t max_pending_per_user = 0;  // a user's jobs waiting in the queue at most; 0: no limit
  // The longest grace_period a job here may ask for (and its sub-queues'): a preempted run
  // keeps its GPUs that long, so a long one delays whoever preempts it. 0: no limit.
  DurationMs max_grace_ms = 0;
  // Who may submit here, and to its sub-queues: these users and the members of these groups.
  // Both empty: everyone. A sub-queue's own lists narrow its parents', never widen them.
  std::vector<std::string> allowed_users;
  std::vector<std::string> allowed_groups;
  // Whether its jobs may ask for a share of a GPU (gpus below 1, gpu_memory).
  bool gpu_sharing = true;
  // Interactive sessions here end after this long with no terminal input and their GPUs (if
  // any) under the head's idle threshold, after a warning (docs/interactive.md). 0: never.
  DurationMs idle_timeout_ms = 0;
  // Age bound (the scheduler's no-starvation guarantee): a job here that has waited this long
  // in all (time since submit not spent running) goes ahead of every job that has not, oldest
  // first, gets the reservation that backfill must not delay, and is not displaced by
  // attained-service (LAS) preemption once it runs. 0: its parent's, else the scheduler's
  // default (CorralConfig::max_wait_ms).
  DurationMs max_wait_ms = 0;
  // GPUs a user's interactive sessions (shells, notebooks) may hold in this queue at once; a
  // session past it waits (kQueueLimit), batch jobs are not counted. 0: no limit.
  int32_t max_interactive_gpus_per_user = 0;
  bool operator==(const QueueConfig&) const = default;
};

}  // namespace corral
