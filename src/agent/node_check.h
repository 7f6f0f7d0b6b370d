// `corral agent --check`: what the agent would use on this node and whether each part works,
// found with the agent's own probes (the GPU probe, cgroup detection, the CDI resolver, the
// health program runner), so that the check and the agent cannot disagree. An operator runs it
// first on a new node; it exits non-zero when a part the agent needs has failed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "agent/gpus/gpu_probe.h"
#include "core/status.h"

namespace corral::agent {

// kFail: the agent would not start or would run jobs wrongly; kWarn: a feature is off (shares
// unenforced, no containers); kSkip: not asked for (no health program, --cgroups off).
enum class CheckVerdict { kOk, kWarn, kFail, kSkip };
const char* CheckVerdictName(CheckVerdict v);  // "ok", "warn", "FAIL", "skip"

struct CheckPart {
  std::string name;  // "NVML", "cgroups", ...
  CheckVerdict verdict = CheckVerdict::kOk;
  std::string summary;              // one line
  std::vector<std::string> detail;  // further lines (one per GPU, ...)
};

struct NodeCheckInputs {
  GpuProbe* probe = nullptr;           // what the agent would probe with
  const NvmlGpuProbe* nvml = nullptr;  // the same, where it is NVML (null: simulated GPUs)
  std::string nvidia_smi;              // its path ("" where it is not installed)
  bool cgroups = true;                 // --cgroups auto
  std::string cgroup_root = "/sys/fs/cgroup";
  std::string crun;  // the container runtime the agent would run
  std::vector<std::string> cdi_dirs;
  std::string cdi_kind;
  std::string gpushare_lib;  // the share shim the agent found ("" none)
  std::string mps_control;   // nvidia-cuda-mps-control ("" none)
  std::string health_program;
  int64_t health_limit_ms = 60000;
  // Whether the head answers and takes the join token: OK, or why not. Empty: no --head given.
  std::function<Status()> reach_head;
};

// Each part in a fixed order: NVML, nvidia-smi, cgroups, container runtime, CDI spec, share
// shim, MPS, health program, head.
std::vector<CheckPart> CheckNode(const NodeCheckInputs& in);

// The UUIDs `nvidia-smi -L` lists ("UUID: GPU-..." and "UUID: MIG-..."), in order.
std::vector<std::string> UuidsOfSmiList(const std::string& listing);

// The parts as text ("  ok    NVML  ..."), a last line naming the failed ones; the exit
// status: 1 when any part failed, else 0.
int RenderCheck(const std::vector<CheckPart>& parts, std::string* out);

}  // namespace corral::agent
