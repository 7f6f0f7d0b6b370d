// The node's side of a share of a GPU (docs/gpu-sharing.md): where the share shim is, and
// what a task holding a share gets in its environment.
#pragma once

#include <map>
#include <string>

namespace corral::agent {

// The share shim libcorral_gpushare.so beside `program`, else where it is installed; empty if
// neither exists.
std::string GpuShareLibraryBeside(const std::string& program);

// A task holding a share with isolation "memory" (CORRAL_GPU_ISOLATION and
// CORRAL_GPU_MEMORY_LIMIT from the head's layout) gets `share_lib` first in LD_PRELOAD and the
// replica's ledger `share_ledger` in CORRAL_GPU_SHARE_FILE, and CORRAL_GPU_SHARE_ENFORCED=1;
// without a shim, CORRAL_GPU_SHARE_ENFORCED=0. Other tasks are left as they are.
void AddGpuShareEnv(std::map<std::string, std::string>* env, const std::string& share_lib,
                    const std::string& share_ledger);

}  // namespace corral::agent
