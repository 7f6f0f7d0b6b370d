// Resources of one replica or one node. GPUs are fixed-point (1000 = one GPU): a replica asks
// for whole GPUs (a multiple of 1000, exclusive) or for a share of one GPU (below 1000 and/or a
// GPU memory size), which the scheduler packs with other shares onto one device.
#pragma once

#include <cstdint>
#include <string>

namespace corral {

constexpr int32_t kGpuMilli = 1000;

// How a share of a GPU is isolated from the other shares on the device. Shares of different
// modes never meet on one GPU (an MPS server and plain CUDA contexts time-slice badly).
//  - kMemory: the agent injects the shim (libcorral_gpushare.so) that caps the job's device
//    memory across its processes; compute is time-sliced by the driver.
//  - kMps: an NVIDIA MPS daemon's per-client limits (one Unix user per server).
enum class GpuIsolation : uint8_t { kMemory, kMps };
const char* GpuIsolationName(GpuIsolation g);
bool ParseGpuIsolation(const std::string& text, GpuIsolation* out);

struct Resources {
  int32_t gpu_milli = 0;  // 1000 per whole GPU; below 1000 (or gpu_memory_mb > 0): a share
  int32_t cpu_milli = 0;  // 1000 per core
  int64_t memory_mb = 0;
  int64_t gpu_memory_mb = 0;  // a share's device memory; 0: gpu_milli of the GPU's memory
  GpuIsolation gpu_isolation = GpuIsolation::kMemory;  // shares only

  int32_t WholeGpus() const { return gpu_milli / kGpuMilli; }
  // A share of one GPU rather than whole GPUs.
  bool IsShare() const { return gpu_milli < kGpuMilli && (gpu_milli > 0 || gpu_memory_mb > 0); }
  bool operator==(const Resources&) const = default;
};

// The device memory a share of `milli` with `memory_mb` asked may use on a GPU of `gpu_mb`:
// what it asked, else its fraction of the memory left after the driver's reserve.
int64_t ShareMemoryMb(int32_t milli, int64_t memory_mb, int64_t gpu_mb);
// The part of a shared GPU's memory no share may take: max(3%, 256 MiB) for the driver and
// contexts.
int64_t GpuReserveMb(int64_t gpu_mb);
inline int64_t ShareableMemoryMb(int64_t gpu_mb) {
  return gpu_mb > GpuReserveMb(gpu_mb) ? gpu_mb - GpuReserveMb(gpu_mb) : 0;
}

}  // namespace corral
