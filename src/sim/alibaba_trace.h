// Reader of the Alibaba GPU-sharing trace of 2023 ("openb", the data of the ATC'23 paper
// "Beware of Fragmentation"): its node list and its task (pod) list, as CSV.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace corral::sim {

struct AlibabaNode {
  std::string name;
  int32_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t gpus = 0;
  std::string model;
};

struct AlibabaTask {
  std::string name;
  int32_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t num_gpu = 0;    // GPUs; 1 with gpu_milli < 1000: a share of one GPU
  int32_t gpu_milli = 0;  // per GPU
  std::string gpu_spec;   // allowed GPU models ("A|B"); empty: any

  bool IsShare() const { return num_gpu == 1 && gpu_milli > 0 && gpu_milli < 1000; }
  // GPUs it asks for in milli-GPUs.
  int64_t GpuMilli() const { return IsShare() ? gpu_milli : int64_t{num_gpu} * 1000; }
};

// `sn,cpu_milli,memory_mib,gpu,model`. Errors name the file, line and column.
Result<std::vector<AlibabaNode>> ReadAlibabaNodes(const std::string& path);
// `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,...` (later columns ignored).
Result<std::vector<AlibabaTask>> ReadAlibabaTasks(const std::string& path);

// Device memory of the trace's GPU models in MiB (its node list has none): the public
// figures for P100, T4, V100M16, V100M32 and A10; G2 and G3 (unnamed) are taken as 32 GiB.
int64_t AlibabaGpuMemoryMib(const std::string& model);

}  // namespace corral::sim
