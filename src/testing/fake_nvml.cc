// A fake libnvidia-ml for tests of the agent's NVML probe. The GPUs come from the environment,
// read at nvmlInit_v2:
//   FAKE_NVML_GPUS="A100:40960,H100:81559:1"   NAME:MEMORY_MIB[:NUMA_NODE], comma separated
//   FAKE_NVML_INIT_ERROR=N                      nvmlInit_v2 returns N (e.g. 9: driver not loaded)
//   FAKE_NVML_USE="35:1024,0:0"                 UTIL_PERCENT:USED_MIB per GPU (default 0:0)
//   FAKE_NVML_LOST="1,3"                        these GPUs' memory and utilisation calls fail
//                                               with NVML_ERROR_GPU_IS_LOST (15), as after Xid 79
// Device names are reported as "NVIDIA <NAME>", UUIDs as "GPU-fake-<index>".
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr int kMaxGpus = 64;
struct FakeGpu {
  char name[64];
  unsigned long long memory_mib;
  unsigned numa;
  unsigned util;
  unsigned long long used_mib;
  bool lost;
};
FakeGpu g_gpus[kMaxGpus];
unsigned g_count = 0;
bool g_initialized = false;

struct Memory {
  unsigned long long total, free, used;
};

void Load() {
  g_count = 0;
  const char* spec = std::getenv("FAKE_NVML_GPUS");
  if (spec == nullptr) return;
  char buf[4096];
  std::snprintf(buf, sizeof(buf), "%s", spec);
  char* save = nullptr;
  for (char* item = strtok_r(buf, ",", &save); item != nullptr && g_count < kMaxGpus;
       item = strtok_r(nullptr, ",", &save)) {
    FakeGpu& g = g_gpus[g_count];
    char* mem = std::strchr(item, ':');
    if (mem != nullptr) *mem++ = '\0';
    char* numa = mem != nullptr ? std::strchr(mem, ':') : nullptr;
    if (numa != nullptr) *numa++ = '\0';
    std::snprintf(g.name, sizeof(g.name), "NVIDIA %s", item);
    g.memory_mib = mem != nullptr ? std::strtoull(mem, nullptr, 10) : 0;
    g.numa = numa != nullptr ? static_cast<unsigned>(std::strtoul(numa, nullptr, 10)) : 0;
    g.util = 0;
    g.used_mib = 0;
    g.lost = false;
    ++g_count;
  }
  if (const char* lost = std::getenv("FAKE_NVML_LOST")) {
    std::snprintf(buf, sizeof(buf), "%s", lost);
    for (char* item = strtok_r(buf, ",", &save); item != nullptr;
         item = strtok_r(nullptr, ",", &save)) {
      unsigned long i = std::strtoul(item, nullptr, 10);
      if (i < g_count) g_gpus[i].lost = true;
    }
  }
  const char* use = std::getenv("FAKE_NVML_USE");
  if (use == nullptr) return;
  std::snprintf(buf, sizeof(buf), "%s", use);
  unsigned i = 0;
  for (char* item = strtok_r(buf, ",", &save); item != nullptr && i < g_count;
       item = strtok_r(nullptr, ",", &save), ++i) {
    char* used = std::strchr(item, ':');
    if (used != nullptr) *used++ = '\0';
    g_gpus[i].util = static_cast<unsigned>(std::strtoul(item, nullptr, 10));
    g_gpus[i].used_mib = used != nullptr ? std::strtoull(used, nullptr, 10) : 0;
  }
}

// Handles are 1-based indices disguised as pointers.
bool Index(void* dev, unsigned* i) {
  auto v = reinterpret_cast<unsigned long>(dev);
  if (!g_initialized || v == 0 || v > g_count) return false;
  *i = static_cast<unsigned>(v - 1);
  return true;
}

constexpr int kSuccess = 0, kUninitialized = 1, kInvalidArgument = 2, kInsufficientSize = 7,
              kGpuIsLost = 15;

}  // namespace

extern "C" {

int nvmlInit_v2() {
  if (const char* e = std::getenv("FAKE_NVML_INIT_ERROR")) return std::atoi(e);
  Load();
  g_initialized = true;
  return kSuccess;
}

int nvmlShutdown() {
  g_initialized = false;
  return kSuccess;
}

const char* nvmlErrorString(int rc) {
  return rc == 9 ? "Driver Not Loaded" : rc == kGpuIsLost ? "GPU is lost" : "Fake NVML error";
}

int nvmlDeviceGetCount_v2(unsigned* count) {
  if (!g_initialized) return kUninitialized;
  *count = g_count;
  return kSuccess;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** device) {
  if (!g_initialized) return kUninitialized;
  if (index >= g_count) return kInvalidArgument;
  *device = reinterpret_cast<void*>(static_cast<unsigned long>(index) + 1);
  return kSuccess;
}

int nvmlDeviceGetName(void* device, char* name, unsigned length) {
  unsigned i = 0;
  if (!Index(device, &i)) return kInvalidArgument;
  if (std::strlen(g_gpus[i].name) + 1 > length) return kInsufficientSize;
  std::strcpy(name, g_gpus[i].name);
  return kSuccess;
}

int nvmlDeviceGetUUID(void* device, char* uuid, unsigned length) {
  unsigned i = 0;
  if (!Index(device, &i)) return kInvalidArgument;
  if (std::snprintf(uuid, length, "GPU-fake-%u", i) >= static_cast<int>(length))
    return kInsufficientSize;
  return kSuccess;
}

// Device minors counted down from 7, so that a caller taking the index for the minor is caught.
int nvmlDeviceGetMinorNumber(void* device, unsigned* minor) {
  unsigned i = 0;
  if (!Index(device, &i)) return kInvalidArgument;
  *minor = 7 - i;
  return kSuccess;
}

int nvmlDeviceGetMemoryInfo(void* device, Memory* memory) {
  unsigned i = 0;
  if (!Index(device, &i)) return kInvalidArgument;
  if (g_gpus[i].lost) return kGpuIsLost;
  memory->total = g_gpus[i].memory_mib * 1024ULL * 1024ULL;
  memory->used = g_gpus[i].used_mib * 1024ULL * 1024ULL;
  memory->free = memory->total - memory->used;
  return kSuccess;
}

struct Utilization {
  unsigned gpu, memory;
};

int nvmlDeviceGetUtilizationRates(void* device, Utilization* util) {
  unsigned i = 0;
  if (!Index(device, &i)) return kInvalidArgument;
  if (g_gpus[i].lost) return kGpuIsLost;
  util->gpu = g_gpus[i].util;
  util->memory = 0;
  return kSuccess;
}

int nvmlDeviceGetNumaNodeId(void* device, unsigned* node) {
  unsigned i = 0;
  if (!Index(device, &i)) return kInvalidArgument;
  *node = g_gpus[i].numa;
  return kSuccess;
}

}  // extern "C"
