// Resources of one replica or one node. GPUs are fixed-point (1000 = one GPU) so that
// fractional GPUs (DESIGN §6.8) fit later without changing the type.
#pragma once

#include <cstdint>

namespace corral {

constexpr int32_t kGpuMilli = 1000;

struct Resources {
  int32_t gpu_milli = 0;  // 1000 per whole GPU
  int32_t cpu_milli = 0;  // 1000 per core
  int64_t memory_mb = 0;

  int32_t WholeGpus() const { return gpu_milli / kGpuMilli; }
  bool operator==(const Resources&) const = default;
};

}  // namespace corral
