// The node's side of a share of a GPU (docs/gpu-sharing.md): where the share shim is, which
// share a replica's order holds, and what its tasks get for it in their environment (the
// names and units: gpushare/share_contract.h).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "agent/gpus/mps.h"
#include "core/agent_protocol.h"
#include "core/resources.h"

namespace corral::agent {

// The share shim libcorral_gpushare.so beside `program`, else where it is installed; empty if
// neither exists.
std::string GpuShareLibraryBeside(const std::string& program);

// The share of a GPU a replica's order holds, from the head's variables of the order (its
// isolation, read once as a GpuIsolation, and whether it has a memory limit).
struct GpuShareOrder {
  GpuIsolation isolation = GpuIsolation::kMemory;
  bool memory_limited = false;
};
// nullopt: the order holds no share (whole GPUs, or none), or one of an isolation this agent
// does not know.
std::optional<GpuShareOrder> ShareOfOrder(const RunOrder& order);

// What the node adds to every task of a replica holding `share`, decided by its isolation and
// rendered once for all of them: with isolation "memory" and a memory limit, `share_lib` for
// LD_PRELOAD (JobEnvironment puts it first), the replica's ledger `share_ledger` for the shim
// and CORRAL_GPU_SHARE_ENFORCED=1, or only CORRAL_GPU_SHARE_ENFORCED=0 without a shim; with
// isolation "mps" and the owner's server `mps`, its pipe and log directories and
// CORRAL_GPU_SHARE_ENFORCED=1. Nothing otherwise.
std::map<std::string, std::string> GpuShareEnv(const GpuShareOrder& share,
                                               const std::string& share_lib,
                                               const std::string& share_ledger,
                                               const MpsClient* mps);

}  // namespace corral::agent
