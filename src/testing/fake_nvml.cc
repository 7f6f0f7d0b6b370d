// A fake libnvidia-ml for tests of the agent's NVML probe. The GPUs come from the environment,
// read at nvmlInit_v2:
//   FAKE_NVML_GPUS="A100:40960,H100:81559:1"   NAME:MEMORY_MIB[:NUMA_NODE], comma separated
//   FAKE_NVML_INIT_ERROR=N                      nvmlInit_v2 returns N (e.g. 9: driver not loaded)
//   FAKE_NVML_USE="35:1024,0:0"                 UTIL_PERCENT:USED_MIB per GPU (default 0:0)
//   FAKE_NVML_LOST="1,3"                        these GPUs' memory and utilisation calls fail
//                                               with NVML_ERROR_GPU_IS_LOST (15), as after Xid 79
//   FAKE_NVML_MIG="0:1g.10gb:9856,0:3g.40gb:40192"  MIG devices: PARENT:PROFILE:MEMORY_MIB each;
//                                               a GPU with any is in MIG mode (7 slots)
//   FAKE_NVML_TEMP="40,52"                     core temperatures in Celsius (default 40 each)
//   FAKE_NVML_DRIVER="550.54.15"               the driver version nvmlSystemGetDriverVersion gives
//   FAKE_NVML_HEALTH=FILE                       errors, read at each call (a test appends):
//       "INDEX sbe N" / "INDEX dbe N"           ECC counts (volatile and aggregate alike)
//       "INDEX retired N", "INDEX pending"      retired pages, a retirement pending
//       "INDEX xid CODE"                        an Xid event, delivered once to each event set
// Device names are reported as "NVIDIA <NAME>", UUIDs as "GPU-fake-<index>"; a MIG device's
// as "NVIDIA <NAME> MIG <PROFILE>" and "MIG-fake-<parent>-<slot>". Init and shutdown
// are counted, as NVML's are: the library stays initialised until the last shutdown.
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
constexpr unsigned kMigSlots = 7;
struct FakeMig {
  unsigned parent;
  char profile[32];
  unsigned long long memory_mib;
};
FakeMig g_migs[kMaxGpus];
unsigned g_mig_count = 0;
constexpr unsigned long kMigHandleBase = 0x10000;  // MIG handles: base + mig index
bool g_initialized = false;
int g_init_count = 0;

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
  g_mig_count = 0;
  if (const char* mig = std::getenv("FAKE_NVML_MIG")) {
    std::snprintf(buf, sizeof(buf), "%s", mig);
    for (char* item = strtok_r(buf, ",", &save); item != nullptr && g_mig_count < kMaxGpus;
         item = strtok_r(nullptr, ",", &save)) {
      FakeMig& m = g_migs[g_mig_count];
      char profile[32] = {};
      unsigned parent = 0;
      unsigned long long mem = 0;
      if (std::sscanf(item, "%u:%31[^:]:%llu", &parent, profile, &mem) != 3 || parent >= g_count)
        continue;
      m.parent = parent;
      std::snprintf(m.profile, sizeof(m.profile), "%s", profile);
      m.memory_mib = mem;
      ++g_mig_count;
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

constexpr int kSuccess = 0, kUninitialized = 1, kInvalidArgument = 2, kNotFound = 6,
              kInsufficientSize = 7, kGpuIsLost = 15;

// A MIG device's handle: its index in g_migs.
bool MigIndex(void* dev, unsigned* m) {
  auto v = reinterpret_cast<unsigned long>(dev);
  if (!g_initialized || v < kMigHandleBase || v >= kMigHandleBase + g_mig_count) return false;
  *m = static_cast<unsigned>(v - kMigHandleBase);
  return true;
}
bool HasMig(unsigned gpu) {
  for (unsigned m = 0; m < g_mig_count; ++m) {
    if (g_migs[m].parent == gpu) return true;
  }
  return false;
}

}  // namespace

extern "C" {

int nvmlInit_v2() {
  if (const char* e = std::getenv("FAKE_NVML_INIT_ERROR")) return std::atoi(e);
  Load();
  g_initialized = true;
  ++g_init_count;
  return kSuccess;
}

int nvmlShutdown() {
  if (g_init_count == 0) return kUninitialized;
  g_initialized = --g_init_count > 0;
  return kSuccess;
}

const char* nvmlErrorString(int rc) {
  return rc == 9 ? "Driver Not Loaded" : rc == kGpuIsLost ? "GPU is lost" : "Fake NVML error";
}

// FAKE_NVML_DRIVER names the driver's version (default "550.54.15", a real driver's form).
int nvmlSystemGetDriverVersion(char* version, unsigned length) {
  if (!g_initialized) return kUninitialized;
  const char* v = std::getenv("FAKE_NVML_DRIVER");
  if (std::snprintf(version, length, "%s", v != nullptr ? v : "550.54.15") >=
      static_cast<int>(length)) {
    return kInsufficientSize;
  }
  return kSuccess;
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
  if (MigIndex(device, &i)) {
    if (std::snprintf(name, length, "%s MIG %s", g_gpus[g_migs[i].parent].name,
                      g_migs[i].profile) >= static_cast<int>(length))
      return kInsufficientSize;
    return kSuccess;
  }
  if (!Index(device, &i)) return kInvalidArgument;
  if (std::strlen(g_gpus[i].name) + 1 > length) return kInsufficientSize;
  std::strcpy(name, g_gpus[i].name);
  return kSuccess;
}

int nvmlDeviceGetUUID(void* device, char* uuid, unsigned length) {
  unsigned i = 0;
  if (MigIndex(device, &i)) {
    unsigned slot = 0;
    for (unsigned m = 0; m < i; ++m) slot += g_migs[m].parent == g_migs[i].parent;
    if (std::snprintf(uuid, length, "MIG-fake-%u-%u", g_migs[i].parent, slot) >=
        static_cast<int>(length))
      return kInsufficientSize;
    return kSuccess;
  }
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
  if (MigIndex(device, &i)) {
    memory->total = g_migs[i].memory_mib * 1024ULL * 1024ULL;
    memory->used = 0;
    memory->free = memory->total;
    return kSuccess;
  }
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

// FAKE_NVML_TEMP="40,52": each GPU's core temperature (sensor 0, NVML_TEMPERATURE_GPU); 40
// for a GPU not listed. A lost GPU answers GPU_IS_LOST, as its other calls do.
int nvmlDeviceGetTemperature(void* device, int sensor, unsigned* celsius) {
  unsigned i = 0;
  if (!Index(device, &i) || sensor != 0 || celsius == nullptr) return kInvalidArgument;
  if (g_gpus[i].lost) return kGpuIsLost;
  *celsius = 40;
  const char* list = std::getenv("FAKE_NVML_TEMP");
  for (unsigned k = 0; list != nullptr && *list != '\0'; ++k) {
    char* end = nullptr;
    unsigned long v = std::strtoul(list, &end, 10);
    if (end == list) break;
    if (k == i) *celsius = static_cast<unsigned>(v);
    list = *end == ',' ? end + 1 : end;
  }
  return kSuccess;
}

// MIG: a GPU with MIG devices is in MIG mode; they sit in its first slots.
int nvmlDeviceGetMigMode(void* device, unsigned* current, unsigned* pending) {
  unsigned i = 0;
  if (!Index(device, &i) || current == nullptr || pending == nullptr) return kInvalidArgument;
  *current = *pending = HasMig(i) ? 1 : 0;
  return kSuccess;
}

int nvmlDeviceGetMaxMigDeviceCount(void* device, unsigned* count) {
  unsigned i = 0;
  if (!Index(device, &i) || count == nullptr) return kInvalidArgument;
  *count = HasMig(i) ? kMigSlots : 0;
  return kSuccess;
}

int nvmlDeviceGetMigDeviceHandleByIndex(void* device, unsigned index, void** mig) {
  unsigned i = 0;
  if (!Index(device, &i) || mig == nullptr) return kInvalidArgument;
  unsigned slot = 0;
  for (unsigned m = 0; m < g_mig_count; ++m) {
    if (g_migs[m].parent != i) continue;
    if (slot++ == index) {
      *mig = reinterpret_cast<void*>(kMigHandleBase + m);
      return kSuccess;
    }
  }
  return kNotFound;  // an empty slot
}

int nvmlDeviceGetNumaNodeId(void* device, unsigned* node) {
  unsigned i = 0;
  if (!Index(device, &i)) return kInvalidArgument;
  *node = g_gpus[i].numa;
  return kSuccess;
}

}  // extern "C"

// --- health: ECC counters, retired pages and Xid events from FAKE_NVML_HEALTH ---
namespace {

struct Health {
  unsigned long long sbe = 0, dbe = 0;
  unsigned retired = 0;
  bool pending = false;
};

// The file's counters for GPU `index`; with `xids`, also every Xid line's (gpu, code), in order.
Health ReadHealth(unsigned index, unsigned (*xids)[2] = nullptr, unsigned* n_xids = nullptr,
                  unsigned max_xids = 0) {
  Health h;
  const char* path = std::getenv("FAKE_NVML_HEALTH");
  FILE* f = path != nullptr ? std::fopen(path, "r") : nullptr;
  if (f == nullptr) return h;
  char line[256];
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    unsigned gpu = 0;
    char word[32] = {};
    unsigned long long n = 0;
    int got = std::sscanf(line, "%u %31s %llu", &gpu, word, &n);
    if (got < 2) continue;
    if (std::strcmp(word, "xid") == 0 && got == 3 && xids != nullptr && *n_xids < max_xids) {
      xids[*n_xids][0] = gpu;
      xids[*n_xids][1] = static_cast<unsigned>(n);
      ++*n_xids;
    }
    if (gpu != index) continue;
    if (std::strcmp(word, "sbe") == 0 && got == 3) h.sbe = n;
    if (std::strcmp(word, "dbe") == 0 && got == 3) h.dbe = n;
    if (std::strcmp(word, "retired") == 0 && got == 3) h.retired = static_cast<unsigned>(n);
    if (std::strcmp(word, "pending") == 0) h.pending = true;
  }
  std::fclose(f);
  return h;
}

// One event set at a time: it delivers each Xid line of the file once.
struct EventData {
  void* device;
  unsigned long long type;
  unsigned long long data;
  unsigned gpu_instance, compute_instance;
};
constexpr int kTimeout = 10;
constexpr unsigned long long kXidEvent = 0x8;
int g_sets = 0;
unsigned g_xids_delivered = 0;
unsigned long long g_registered[kMaxGpus] = {};

}  // namespace

extern "C" {

int nvmlDeviceGetTotalEccErrors(void* device, int error_type, int counter_type,
                                unsigned long long* count) {
  unsigned i = 0;
  if (!Index(device, &i) || count == nullptr || counter_type < 0 || counter_type > 1)
    return kInvalidArgument;
  if (g_gpus[i].lost) return kGpuIsLost;
  Health h = ReadHealth(i);
  *count = error_type == 0 ? h.sbe : h.dbe;
  return kSuccess;
}

// Retired pages, all counted under the double-bit cause.
int nvmlDeviceGetRetiredPages(void* device, int cause, unsigned* count,
                              unsigned long long* addresses) {
  unsigned i = 0;
  if (!Index(device, &i) || count == nullptr) return kInvalidArgument;
  unsigned have = cause == 1 ? ReadHealth(i).retired : 0;
  if (*count < have) {
    *count = have;
    return kInsufficientSize;
  }
  for (unsigned p = 0; p < have && addresses != nullptr; ++p) addresses[p] = 0x1000ULL * (p + 1);
  *count = have;
  return kSuccess;
}

int nvmlDeviceGetRetiredPagesPendingStatus(void* device, int* pending) {
  unsigned i = 0;
  if (!Index(device, &i) || pending == nullptr) return kInvalidArgument;
  *pending = ReadHealth(i).pending ? 1 : 0;
  return kSuccess;
}

int nvmlEventSetCreate(void** set) {
  if (!g_initialized || set == nullptr) return kUninitialized;
  *set = reinterpret_cast<void*>(static_cast<unsigned long>(++g_sets));
  // Only events that happen from now on reach the set.
  unsigned xids[256][2];
  unsigned n = 0;
  (void)ReadHealth(0, xids, &n, 256);
  g_xids_delivered = n;
  return kSuccess;
}

int nvmlDeviceRegisterEvents(void* device, unsigned long long types, void*) {
  unsigned i = 0;
  if (!Index(device, &i)) return kInvalidArgument;
  g_registered[i] = types;
  return kSuccess;
}

int nvmlEventSetWait_v2(void*, EventData* data, unsigned) {
  if (!g_initialized || data == nullptr) return kUninitialized;
  unsigned xids[256][2];
  unsigned n = 0;
  (void)ReadHealth(0, xids, &n, 256);
  while (g_xids_delivered < n) {
    unsigned gpu = xids[g_xids_delivered][0], code = xids[g_xids_delivered][1];
    ++g_xids_delivered;
    if (gpu >= g_count || (g_registered[gpu] & kXidEvent) == 0) continue;
    data->device = reinterpret_cast<void*>(static_cast<unsigned long>(gpu) + 1);
    data->type = kXidEvent;
    data->data = code;
    data->gpu_instance = data->compute_instance = 0;
    return kSuccess;
  }
  return kTimeout;
}

int nvmlEventSetFree(void*) { return kSuccess; }

}  // extern "C"
