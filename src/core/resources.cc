#include "core/resources.h"

#include <algorithm>

namespace corral {

const char* GpuIsolationName(GpuIsolation g) {
  switch (g) {
    case GpuIsolation::kMemory:
      return "memory";
    case GpuIsolation::kMps:
      return "mps";
  }
  return "memory";
}

bool ParseGpuIsolation(const std::string& text, GpuIsolation* out) {
  for (GpuIsolation g : {GpuIsolation::kMemory, GpuIsolation::kMps}) {
    if (text == GpuIsolationName(g)) {
      *out = g;
      return true;
    }
  }
  return false;
}

int64_t GpuReserveMb(int64_t gpu_mb) { return std::max<int64_t>(256, (gpu_mb * 3 + 99) / 100); }

int64_t ShareMemoryMb(int32_t milli, int64_t memory_mb, int64_t gpu_mb) {
  if (memory_mb > 0) return memory_mb;
  return ShareableMemoryMb(gpu_mb) * std::max(0, milli) / kGpuMilli;
}

}  // namespace corral
