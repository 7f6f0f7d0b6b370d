#include "agent/gpus/gpu_probe.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <set>
#include <sstream>

namespace corral::agent {
namespace {

// The few NVML types and entry points we use, declared here so that nvml.h is not needed.
using nvmlReturn_t = int;
constexpr nvmlReturn_t kNvmlSuccess = 0;
struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct nvmlPciInfo_t {  // nvmlPciInfo_v3
  char bus_id_legacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;
  unsigned int pci_subsystem_id;
  char bus_id[32];
};
struct nvmlUtilization_t {
  unsigned int gpu;     // percent of the sample period a kernel ran
  unsigned int memory;  // percent of it device memory was read or written
};
constexpr unsigned kNvmlStringBuffer = 96;  // >= NVML_DEVICE_NAME_V2_BUFFER_SIZE, UUID size

struct Nvml {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;  // optional
  nvmlReturn_t (*count)(unsigned*) = nullptr;
  nvmlReturn_t (*handle)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*numa)(nvmlDevice_t, unsigned*) = nullptr;      // optional (newer drivers)
  nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;  // optional
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;  // Sample() only
  nvmlReturn_t (*minor)(nvmlDevice_t, unsigned*) = nullptr;                 // optional
  // MIG (optional): a GPU in MIG mode is reported as its MIG devices.
  nvmlReturn_t (*mig_mode)(nvmlDevice_t, unsigned*, unsigned*) = nullptr;
  nvmlReturn_t (*max_mig)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*mig_handle)(nvmlDevice_t, unsigned, nvmlDevice_t*) = nullptr;

  std::string Error(const char* call, nvmlReturn_t rc) const {
    std::string text = error_string != nullptr ? error_string(rc) : "";
    return std::string("NVML ") + call + " failed: error " + std::to_string(rc) +
           (text.empty() ? "" : " (" + text + ")");
  }
};

template <typename F>
bool Resolve(void* lib, const char* symbol, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, symbol));
  return *out != nullptr;
}

// NUMA node of a PCI device from sysfs; NVML's bus id is "00000000:3B:00.0", sysfs'
// "0000:3b:00.0".
int32_t NumaFromSysfs(const char* nvml_bus_id) {
  std::string id = nvml_bus_id;
  auto colon = id.find(':');
  if (colon == std::string::npos || colon < 4) return -1;
  id = id.substr(colon - 4);
  for (char& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::ifstream in("/sys/bus/pci/devices/" + id + "/numa_node");
  int32_t node = -1;
  if (!(in >> node)) return -1;
  return node;
}

class DlHandle {
 public:
  explicit DlHandle(void* h) : h_(h) {}
  ~DlHandle() {
    if (h_ != nullptr) dlclose(h_);
  }
  DlHandle(const DlHandle&) = delete;
  DlHandle& operator=(const DlHandle&) = delete;
  void* get() const { return h_; }

 private:
  void* h_;
};

// dlopen()s the library the probe names, else the driver's usual sonames.
void* OpenNvml(const std::string& library, std::string* name) {
  std::vector<std::string> candidates = {library};
  if (library.empty()) candidates = {"libnvidia-ml.so.1", "libnvidia-ml.so"};
  for (const std::string& c : candidates) {
    if (void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL); h != nullptr) {
      *name = c;
      return h;
    }
  }
  return nullptr;
}

constexpr nvmlReturn_t kNvmlTimeout = 10;
constexpr unsigned long long kEventXidCritical = 0x8;  // nvmlEventTypeXidCriticalError
constexpr unsigned long long kEventDoubleBitEcc = 0x2;
struct nvmlEventSet_st;
using nvmlEventSet_t = nvmlEventSet_st*;
struct nvmlEventData_t {
  nvmlDevice_t device;
  unsigned long long event_type;
  unsigned long long event_data;  // the Xid, for an Xid event
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};

}  // namespace

// NVML kept open for its event set: Xid events reach only a set registered when they happen.
// NVML kept open between health checks: the devices, the event set Xids arrive on, and the
// counters' calls.
struct NvmlGpuProbe::Events {
  void* lib = nullptr;
  nvmlEventSet_t set = nullptr;
  std::vector<nvmlDevice_t> devices;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*wait)(nvmlEventSet_t, nvmlEventData_t*, unsigned) = nullptr;
  nvmlReturn_t (*set_free)(nvmlEventSet_t) = nullptr;
  nvmlReturn_t (*ecc)(nvmlDevice_t, int, int, unsigned long long*) = nullptr;
  nvmlReturn_t (*retired)(nvmlDevice_t, int, unsigned*, unsigned long long*) = nullptr;
  nvmlReturn_t (*retired_pending)(nvmlDevice_t, int*) = nullptr;
  nvmlReturn_t (*remapped)(nvmlDevice_t, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
  ~Events() {
    if (set != nullptr && set_free != nullptr) (void)set_free(set);
    if (shutdown != nullptr) (void)shutdown();
    if (lib != nullptr) dlclose(lib);
  }

  static Result<std::unique_ptr<Events>> Open(const std::string& library);
  // Registers every device for critical Xids (and double-bit ECC errors where it can). Without
  // the event calls (or where a GPU supports no events) Xids go unseen; the counters are still
  // read.
  void RegisterForXids();
  // The Xids that arrived since the last call, onto the readings of their devices.
  void DrainXids(std::vector<GpuHealthReading>& out) const;
  GpuErrorCounters CountersOf(nvmlDevice_t dev) const;
};

Result<std::unique_ptr<NvmlGpuProbe::Events>> NvmlGpuProbe::Events::Open(
    const std::string& library) {
  auto e = std::make_unique<Events>();
  std::string name;
  e->lib = OpenNvml(library, &name);
  if (e->lib == nullptr) return NotFound("cannot load NVML for health checks");
  Nvml n;
  if (!Resolve(e->lib, "nvmlInit_v2", &n.init) ||
      !Resolve(e->lib, "nvmlDeviceGetCount_v2", &n.count) ||
      !Resolve(e->lib, "nvmlDeviceGetHandleByIndex_v2", &n.handle) ||
      !Resolve(e->lib, "nvmlShutdown", &e->shutdown)) {
    return Internal("NVML library " + name + " lacks the calls a health check needs");
  }
  (void)Resolve(e->lib, "nvmlErrorString", &n.error_string);
  (void)Resolve(e->lib, "nvmlDeviceGetTotalEccErrors", &e->ecc);
  (void)Resolve(e->lib, "nvmlDeviceGetRetiredPages", &e->retired);
  (void)Resolve(e->lib, "nvmlDeviceGetRetiredPagesPendingStatus", &e->retired_pending);
  (void)Resolve(e->lib, "nvmlDeviceGetRemappedRows", &e->remapped);
  if (nvmlReturn_t rc = n.init(); rc != kNvmlSuccess) {
    e->shutdown = nullptr;  // not initialised: nothing to shut down
    return Unavailable(n.Error("nvmlInit_v2", rc));
  }
  unsigned count = 0;
  if (nvmlReturn_t rc = n.count(&count); rc != kNvmlSuccess) {
    return Unavailable(n.Error("nvmlDeviceGetCount_v2", rc));
  }
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t dev = nullptr;
    if (nvmlReturn_t rc = n.handle(i, &dev); rc != kNvmlSuccess) {
      return Unavailable(n.Error("nvmlDeviceGetHandleByIndex_v2", rc));
    }
    e->devices.push_back(dev);
  }
  e->RegisterForXids();
  return e;
}

void NvmlGpuProbe::Events::RegisterForXids() {
  nvmlReturn_t (*set_create)(nvmlEventSet_t*) = nullptr;
  nvmlReturn_t (*register_events)(nvmlDevice_t, unsigned long long, nvmlEventSet_t) = nullptr;
  if (!Resolve(lib, "nvmlEventSetCreate", &set_create) ||
      !Resolve(lib, "nvmlDeviceRegisterEvents", &register_events) ||
      !Resolve(lib, "nvmlEventSetWait_v2", &wait) || !Resolve(lib, "nvmlEventSetFree", &set_free) ||
      set_create(&set) != kNvmlSuccess) {
    wait = nullptr;
    return;
  }
  for (nvmlDevice_t dev : devices) {
    if (register_events(dev, kEventXidCritical | kEventDoubleBitEcc, set) != kNvmlSuccess) {
      (void)register_events(dev, kEventXidCritical, set);
    }
  }
}

void NvmlGpuProbe::Events::DrainXids(std::vector<GpuHealthReading>& out) const {
  if (wait == nullptr || set == nullptr) return;
  nvmlEventData_t data{};
  for (int guard = 0; guard < 1024 && wait(set, &data, 0) == kNvmlSuccess; ++guard) {
    if ((data.event_type & kEventXidCritical) == 0) continue;
    auto it = std::find(devices.begin(), devices.end(), data.device);
    if (it == devices.end()) continue;
    out[it - devices.begin()].xids.push_back(static_cast<int32_t>(data.event_data));
  }
}

GpuErrorCounters NvmlGpuProbe::Events::CountersOf(nvmlDevice_t dev) const {
  GpuErrorCounters c;
  unsigned long long v = 0;
  // errorType 0: corrected (single-bit), 1: uncorrected; counterType 0: volatile, 1: aggregate.
  if (ecc != nullptr) {
    if (ecc(dev, 0, 0, &v) == kNvmlSuccess) c.ecc_sbe_volatile = static_cast<int64_t>(v);
    if (ecc(dev, 1, 0, &v) == kNvmlSuccess) c.ecc_dbe_volatile = static_cast<int64_t>(v);
    if (ecc(dev, 0, 1, &v) == kNvmlSuccess) c.ecc_sbe_aggregate = static_cast<int64_t>(v);
    if (ecc(dev, 1, 1, &v) == kNvmlSuccess) c.ecc_dbe_aggregate = static_cast<int64_t>(v);
  }
  if (retired != nullptr) {
    int64_t pages = 0;
    bool any = false;
    for (int cause : {0, 1}) {  // multiple single-bit errors, a double-bit error
      unsigned n_pages = 0;
      nvmlReturn_t rc = retired(dev, cause, &n_pages, nullptr);
      if (rc == kNvmlSuccess || rc == 7 /* insufficient size: n_pages says how many */) {
        pages += n_pages;
        any = true;
      }
    }
    if (any) c.retired_pages = pages;
    int pending = 0;
    if (retired_pending != nullptr && retired_pending(dev, &pending) == kNvmlSuccess) {
      c.retirement_pending = pending != 0;
    }
  }
  unsigned corrected = 0, uncorrected = 0, pending = 0, failed = 0;
  if (c.retired_pages < 0 && remapped != nullptr &&
      remapped(dev, &corrected, &uncorrected, &pending, &failed) == kNvmlSuccess) {
    c.retired_pages = static_cast<int64_t>(corrected) + uncorrected;  // rows, on A100 and later
    c.retirement_pending = pending != 0 || failed != 0;
  }
  return c;
}

NvmlGpuProbe::NvmlGpuProbe(std::string library) : library_(std::move(library)) {}

NvmlGpuProbe::~NvmlGpuProbe() = default;

Result<std::vector<GpuHealthReading>> NvmlGpuProbe::ReadHealth() {
  if (events_ == nullptr) {
    auto opened = Events::Open(library_);
    if (!opened.ok()) return opened.status();
    events_ = std::move(*opened);
  }
  const Events& e = *events_;
  std::vector<GpuHealthReading> out(e.devices.size());
  for (size_t i = 0; i < e.devices.size(); ++i) out[i].index = static_cast<int32_t>(i);
  e.DrainXids(out);
  for (size_t i = 0; i < e.devices.size(); ++i) out[i].counters = e.CountersOf(e.devices[i]);
  return ByReportedIndex(out);
}

namespace {

// dlopen of the library given, else the driver's: null with every loader's error.
void* LoadNvmlForProbe(const std::string& library, std::string* errors) {
  std::vector<std::string> candidates;
  if (library.empty()) {
    candidates = {"libnvidia-ml.so.1", "libnvidia-ml.so"};
  } else {
    candidates = {library};
  }
  for (const std::string& c : candidates) {
    void* raw = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (raw != nullptr) return raw;
    const char* e = dlerror();
    *errors += std::string(errors->empty() ? "" : "; ") + (e != nullptr ? e : c);
  }
  return nullptr;
}

// The calls Probe needs from `lib` (a required one missing is an error naming it), and the
// optional ones it uses where they exist.
Status ResolveProbeCalls(void* lib, const std::string& library, Nvml* n) {
  const char* missing = nullptr;
  if (!Resolve(lib, "nvmlInit_v2", &n->init))
    missing = "nvmlInit_v2";
  else if (!Resolve(lib, "nvmlShutdown", &n->shutdown))
    missing = "nvmlShutdown";
  else if (!Resolve(lib, "nvmlDeviceGetCount_v2", &n->count))
    missing = "nvmlDeviceGetCount_v2";
  else if (!Resolve(lib, "nvmlDeviceGetHandleByIndex_v2", &n->handle))
    missing = "nvmlDeviceGetHandleByIndex_v2";
  else if (!Resolve(lib, "nvmlDeviceGetName", &n->name))
    missing = "nvmlDeviceGetName";
  else if (!Resolve(lib, "nvmlDeviceGetUUID", &n->uuid))
    missing = "nvmlDeviceGetUUID";
  else if (!Resolve(lib, "nvmlDeviceGetMemoryInfo", &n->memory))
    missing = "nvmlDeviceGetMemoryInfo";
  if (missing != nullptr) {
    return Internal(std::string("NVML library ") + (library.empty() ? "libnvidia-ml" : library) +
                    " lacks " + missing + " (driver too old?)");
  }
  (void)Resolve(lib, "nvmlErrorString", &n->error_string);
  (void)Resolve(lib, "nvmlDeviceGetNumaNodeId", &n->numa);
  (void)Resolve(lib, "nvmlDeviceGetPciInfo_v3", &n->pci);
  (void)Resolve(lib, "nvmlDeviceGetMinorNumber", &n->minor);
  (void)Resolve(lib, "nvmlDeviceGetMigMode", &n->mig_mode);
  (void)Resolve(lib, "nvmlDeviceGetMaxMigDeviceCount", &n->max_mig);
  (void)Resolve(lib, "nvmlDeviceGetMigDeviceHandleByIndex", &n->mig_handle);
  return Status::Ok();
}

// NVML's GPU i: its handle, and its description (model, UUID, memory, group: its NUMA node)
// with its NVML name.
struct NvmlGpu {
  nvmlDevice_t dev = nullptr;
  Gpu gpu;
  std::string name;
};

Result<NvmlGpu> DescribeGpu(const Nvml& n, unsigned i) {
  NvmlGpu out;
  char name[kNvmlStringBuffer] = {};
  char uuid[kNvmlStringBuffer] = {};
  nvmlMemory_t mem{};
  nvmlReturn_t rc = n.handle(i, &out.dev);
  const char* call = "nvmlDeviceGetHandleByIndex_v2";
  if (rc == kNvmlSuccess) rc = n.name(out.dev, name, sizeof(name) - 1), call = "nvmlDeviceGetName";
  if (rc == kNvmlSuccess) rc = n.uuid(out.dev, uuid, sizeof(uuid) - 1), call = "nvmlDeviceGetUUID";
  if (rc == kNvmlSuccess) rc = n.memory(out.dev, &mem), call = "nvmlDeviceGetMemoryInfo";
  if (rc != kNvmlSuccess) return Unavailable(n.Error(call, rc) + " for GPU " + std::to_string(i));
  out.name = name;
  Gpu& g = out.gpu;
  g.uuid = uuid;
  g.model = ShortGpuModel(name);
  g.memory_mb = static_cast<int64_t>(mem.total / (1024ULL * 1024ULL));
  int32_t numa = -1;
  unsigned numa_id = 0;
  if (n.numa != nullptr && n.numa(out.dev, &numa_id) == kNvmlSuccess)
    numa = static_cast<int32_t>(numa_id);
  nvmlPciInfo_t pci{};
  if (numa < 0 && n.pci != nullptr && n.pci(out.dev, &pci) == kNvmlSuccess) {
    pci.bus_id[sizeof(pci.bus_id) - 1] = '\0';
    numa = NumaFromSysfs(pci.bus_id);
  }
  g.group = numa < 0 ? 0 : numa;
  return out;
}

// A GPU in MIG mode: each of its MIG devices is a GPU of its own (its memory, its UUID), in the
// parent's group, behind the parent's device node; the parent itself is not offered. Empty for
// a GPU not in MIG mode. `first_index`: the index the first device gets.
Result<std::vector<Gpu>> MigDevicesOf(const Nvml& n, const NvmlGpu& parent, unsigned i,
                                      size_t first_index) {
  std::vector<Gpu> migs;
  unsigned mig_on = 0, mig_pending = 0, slots = 0;
  if (n.mig_mode == nullptr || n.max_mig == nullptr || n.mig_handle == nullptr ||
      n.mig_mode(parent.dev, &mig_on, &mig_pending) != kNvmlSuccess || mig_on != 1 ||
      n.max_mig(parent.dev, &slots) != kNvmlSuccess) {
    return migs;
  }
  for (unsigned m = 0; m < slots; ++m) {
    nvmlDevice_t mig = nullptr;
    if (n.mig_handle(parent.dev, m, &mig) != kNvmlSuccess) continue;  // an empty slot
    char mig_name[kNvmlStringBuffer] = {};
    char mig_uuid[kNvmlStringBuffer] = {};
    nvmlMemory_t mig_mem{};
    if (n.name(mig, mig_name, sizeof(mig_name) - 1) != kNvmlSuccess ||
        n.uuid(mig, mig_uuid, sizeof(mig_uuid) - 1) != kNvmlSuccess ||
        n.memory(mig, &mig_mem) != kNvmlSuccess) {
      return Unavailable("NVML cannot describe MIG device " + std::to_string(m) + " of GPU " +
                         std::to_string(i));
    }
    Gpu mg = parent.gpu;
    mg.index = static_cast<int32_t>(first_index + migs.size());
    mg.uuid = mig_uuid;
    mg.model = MigGpuModel(parent.name, mig_name);
    mg.memory_mb = static_cast<int64_t>(mig_mem.total / (1024ULL * 1024ULL));
    migs.push_back(std::move(mg));
  }
  return migs;
}

}  // namespace

Result<std::vector<Gpu>> NvmlGpuProbe::Probe() {
  std::string errors;
  DlHandle lib(LoadNvmlForProbe(library_, &errors));
  if (lib.get() == nullptr) {
    return NotFound(
        "cannot load NVML (is the NVIDIA driver installed? use --simulate-gpus "
        "on a machine without GPUs): " +
        errors);
  }
  Nvml n;
  CORRAL_RETURN_IF_ERROR(ResolveProbeCalls(lib.get(), library_, &n));
  if (nvmlReturn_t rc = n.init(); rc != kNvmlSuccess)
    return Unavailable(n.Error("nvmlInit_v2", rc));
  std::vector<Gpu> gpus;
  minors_.clear();
  parents_.clear();
  visible_.clear();
  bool any_mig = false;
  Status status;
  unsigned count = 0;
  if (nvmlReturn_t rc = n.count(&count); rc != kNvmlSuccess) {
    status = Unavailable(n.Error("nvmlDeviceGetCount_v2", rc));
  }
  for (unsigned i = 0; status.ok() && i < count; ++i) {
    Result<NvmlGpu> described = DescribeGpu(n, i);
    if (!described.ok()) {
      status = described.status();
      break;
    }
    described->gpu.index = static_cast<int32_t>(gpus.size());
    unsigned minor = i;
    if (n.minor != nullptr && n.minor(described->dev, &minor) != kNvmlSuccess) minor = i;
    Result<std::vector<Gpu>> migs = MigDevicesOf(n, *described, i, gpus.size());
    if (!migs.ok()) {
      status = migs.status();
      break;
    }
    if (migs->empty()) migs->push_back(std::move(described->gpu));
    any_mig = any_mig || migs->size() > 1 || (*migs)[0].uuid.rfind("MIG-", 0) == 0;
    for (Gpu& d : *migs) {
      minors_[d.index] = static_cast<int32_t>(minor);
      parents_[d.index] = static_cast<int32_t>(i);
      visible_[d.index] = d.uuid;
      gpus.push_back(std::move(d));
    }
  }
  (void)n.shutdown();
  // Without MIG, CUDA's indices are the GPUs' indices; with it, devices are named by UUID.
  if (!any_mig) visible_.clear();
  if (!status.ok()) return status;
  return gpus;
}

Result<NvmlDriverInfo> NvmlGpuProbe::DriverInfo() const {
  NvmlDriverInfo info;
  DlHandle lib(OpenNvml(library_, &info.library));
  if (lib.get() == nullptr) {
    return NotFound("cannot load NVML " + (library_.empty() ? "libnvidia-ml.so.1" : library_));
  }
  Nvml n;
  nvmlReturn_t (*version)(char*, unsigned) = nullptr;
  if (!Resolve(lib.get(), "nvmlInit_v2", &n.init) ||
      !Resolve(lib.get(), "nvmlShutdown", &n.shutdown) ||
      !Resolve(lib.get(), "nvmlDeviceGetCount_v2", &n.count) ||
      !Resolve(lib.get(), "nvmlDeviceGetHandleByIndex_v2", &n.handle)) {
    return Internal("NVML library " + info.library + " lacks the calls discovery needs");
  }
  (void)Resolve(lib.get(), "nvmlErrorString", &n.error_string);
  (void)Resolve(lib.get(), "nvmlSystemGetDriverVersion", &version);
  (void)Resolve(lib.get(), "nvmlDeviceGetMigMode", &n.mig_mode);
  if (nvmlReturn_t rc = n.init(); rc != kNvmlSuccess) {
    return Unavailable(n.Error("nvmlInit_v2", rc));
  }
  char text[kNvmlStringBuffer] = {};
  if (version != nullptr && version(text, sizeof(text) - 1) == kNvmlSuccess) {
    info.driver_version = text;
  }
  unsigned count = 0;
  if (n.count(&count) == kNvmlSuccess) {
    for (unsigned i = 0; i < count; ++i) {
      nvmlDevice_t dev = nullptr;
      unsigned current = 0, pending = 0;
      int32_t mode = -1;
      if (n.handle(i, &dev) == kNvmlSuccess && n.mig_mode != nullptr &&
          n.mig_mode(dev, &current, &pending) == kNvmlSuccess) {
        mode = current == 1 ? 1 : 0;
      }
      info.mig_modes.push_back(mode);
    }
  }
  (void)n.shutdown();
  return info;
}

template <typename Reading>
std::vector<Reading> NvmlGpuProbe::ByReportedIndex(const std::vector<Reading>& by_nvml) const {
  if (parents_.empty()) return by_nvml;
  // A MIG device is measured as its parent GPU is (NVML has no utilisation per MIG device).
  std::vector<Reading> out;
  for (const auto& [index, parent] : parents_) {
    for (const Reading& r : by_nvml) {
      if (r.index != parent) continue;
      out.push_back(r);
      out.back().index = index;
    }
  }
  return out;
}

Result<std::vector<GpuSample>> NvmlGpuProbe::Sample() {
  // Loaded per call like Probe(): a sample every few seconds costs far less than keeping a
  // driver handle open across driver upgrades.
  std::string lib_name = library_;
  void* raw = nullptr;
  for (const char* c : {"libnvidia-ml.so.1", "libnvidia-ml.so"}) {  // as Probe() tries them
    if (!lib_name.empty()) break;
    if ((raw = dlopen(c, RTLD_NOW | RTLD_LOCAL)) != nullptr) lib_name = c;
  }
  if (raw == nullptr && !lib_name.empty()) raw = dlopen(lib_name.c_str(), RTLD_NOW | RTLD_LOCAL);
  DlHandle lib(raw);
  if (lib.get() == nullptr) {
    return NotFound("cannot load NVML " + (lib_name.empty() ? "libnvidia-ml" : lib_name));
  }
  Nvml n;
  if (!Resolve(lib.get(), "nvmlInit_v2", &n.init) ||
      !Resolve(lib.get(), "nvmlShutdown", &n.shutdown) ||
      !Resolve(lib.get(), "nvmlDeviceGetCount_v2", &n.count) ||
      !Resolve(lib.get(), "nvmlDeviceGetHandleByIndex_v2", &n.handle) ||
      !Resolve(lib.get(), "nvmlDeviceGetMemoryInfo", &n.memory) ||
      !Resolve(lib.get(), "nvmlDeviceGetUtilizationRates", &n.utilization)) {
    return Internal("NVML library " + lib_name + " lacks a sampling call (driver too old?)");
  }
  (void)Resolve(lib.get(), "nvmlErrorString", &n.error_string);
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*) = nullptr;
  (void)Resolve(lib.get(), "nvmlDeviceGetTemperature", &temperature);
  if (nvmlReturn_t rc = n.init(); rc != kNvmlSuccess) {
    return Unavailable(n.Error("nvmlInit_v2", rc));
  }
  std::vector<GpuSample> out;
  std::vector<GpuSample> temps;  // index and temperature (in utilization_percent), by NVML index
  Status status;
  unsigned count = 0;
  if (nvmlReturn_t rc = n.count(&count); rc != kNvmlSuccess) {
    status = Unavailable(n.Error("nvmlDeviceGetCount_v2", rc));
  }
  for (unsigned i = 0; status.ok() && i < count; ++i) {
    nvmlDevice_t dev = nullptr;
    nvmlMemory_t mem{};
    nvmlUtilization_t util{};
    nvmlReturn_t rc = n.handle(i, &dev);
    const char* call = "nvmlDeviceGetHandleByIndex_v2";
    if (rc == kNvmlSuccess) rc = n.memory(dev, &mem), call = "nvmlDeviceGetMemoryInfo";
    if (rc == kNvmlSuccess) {
      rc = n.utilization(dev, &util), call = "nvmlDeviceGetUtilizationRates";
    }
    if (rc != kNvmlSuccess) {
      // This GPU failed its probe (e.g. NVML_ERROR_GPU_IS_LOST after an Xid 79): the others
      // are still measured, and the head marks the node unhealthy.
      out.push_back({static_cast<int32_t>(i), 0, 0, n.Error(call, rc)});
      continue;
    }
    out.push_back({static_cast<int32_t>(i), static_cast<int32_t>(std::min(util.gpu, 100u)),
                   static_cast<int64_t>(mem.used), ""});
    unsigned celsius = 0;
    if (temperature != nullptr &&
        temperature(dev, 0 /* NVML_TEMPERATURE_GPU */, &celsius) == kNvmlSuccess) {
      temps.push_back({static_cast<int32_t>(i), static_cast<int32_t>(celsius), 0, ""});
    }
  }
  (void)n.shutdown();
  if (!status.ok()) return status;
  temperatures_.clear();
  for (const GpuSample& t : ByReportedIndex(temps)) temperatures_[t.index] = t.utilization_percent;
  return ByReportedIndex(out);
}

SimulatedGpuProbe::SimulatedGpuProbe(int32_t count, std::string model, std::string uuid_prefix,
                                     std::string use_file)
    : count_(count),
      model_(std::move(model)),
      uuid_prefix_(std::move(uuid_prefix)),
      use_file_(std::move(use_file)) {}

Result<std::vector<GpuSample>> SimulatedGpuProbe::Sample() {
  std::vector<GpuSample> out;
  for (int32_t i = 0; i < count_; ++i) out.push_back({i, 0, 0});
  if (use_file_.empty()) return out;
  std::ifstream in(use_file_);
  std::string line;
  std::set<int32_t> gone;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    int32_t index = -1, util = 0;
    int64_t used_mib = 0;
    std::string word;
    if (!(fields >> index) || index < 0 || index >= count_) continue;
    if (fields >> word && word == "fault") {
      std::getline(fields >> std::ws, out[index].fault);
      if (out[index].fault.empty()) out[index].fault = "simulated fault";
      continue;
    }
    if (word == "gone") {
      gone.insert(index);
      continue;
    }
    std::istringstream number(word);
    if (!(number >> util)) continue;
    fields >> used_mib;  // optional
    out[index].utilization_percent = std::clamp(util, 0, 100);
    out[index].memory_used_bytes = std::max<int64_t>(0, used_mib) * 1024 * 1024;
  }
  std::erase_if(out, [&](const GpuSample& s) { return gone.count(s.index) > 0; });
  return out;
}

Result<std::vector<GpuHealthReading>> SimulatedGpuProbe::ReadHealth() {
  std::vector<GpuHealthReading> out(count_);
  for (int32_t i = 0; i < count_; ++i) {
    out[i].index = i;
    out[i].counters = GpuErrorCounters{0, 0, 0, 0, 0, false};  // simulated GPUs have ECC
  }
  if (use_file_.empty()) return out;
  std::ifstream in(use_file_);
  size_t xid_lines = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    int32_t index = -1;
    std::string word;
    if (!(fields >> index >> word) || index < 0 || index >= count_) continue;
    GpuErrorCounters& c = out[index].counters;
    int64_t n = 0;
    if (word == "pending") {
      c.retirement_pending = true;
    } else if (word == "xid" && fields >> n) {
      if (xid_lines++ >= xids_delivered_) out[index].xids.push_back(static_cast<int32_t>(n));
    } else if (word == "sbe" && fields >> n) {
      c.ecc_sbe_volatile = c.ecc_sbe_aggregate = n;
    } else if (word == "dbe" && fields >> n) {
      c.ecc_dbe_volatile = c.ecc_dbe_aggregate = n;
    } else if (word == "retired" && fields >> n) {
      c.retired_pages = n;
    }
  }
  xids_delivered_ = std::max(xids_delivered_, xid_lines);
  return out;
}

Result<std::vector<Gpu>> SimulatedGpuProbe::Probe() {
  std::vector<Gpu> gpus;
  int32_t half = (count_ + 1) / 2;
  for (int32_t i = 0; i < count_; ++i) {
    Gpu g;
    g.index = i;
    g.uuid = "GPU-" + uuid_prefix_ + "-" + std::to_string(i);
    g.model = model_;
    g.memory_mb = SimulatedGpuMemoryMb(model_);
    g.group = count_ > 1 && i >= half ? 1 : 0;
    gpus.push_back(std::move(g));
  }
  return gpus;
}

Result<SimulatedGpus> ParseSimulateGpus(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return InvalidArgument("--simulate-gpus: invalid value \"" + std::string(text) + "\": " + why +
                           "; expected N or NxMODEL with 0 <= N <= 1024, e.g. 4 or 8xH100");
  };
  SimulatedGpus out;
  std::string_view count = text;
  auto x = text.find_first_of("xX");
  if (x != std::string_view::npos) {
    count = text.substr(0, x);
    std::string_view model = text.substr(x + 1);
    if (model.empty()) return bad("the model after 'x' is empty");
    for (char c : model) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
        return bad("the model may hold only letters, digits, '-', '_' and '.'");
      }
    }
    out.model = std::string(model);
  } else {
    out.model = "SimGPU";
  }
  if (count.empty()) return bad("the GPU count is missing");
  int32_t n = -1;
  auto [ptr, ec] = std::from_chars(count.data(), count.data() + count.size(), n);
  if (ec != std::errc() || ptr != count.data() + count.size())
    return bad("the GPU count is not a number");
  if (n < 0 || n > 1024) return bad("the GPU count is out of range");
  out.count = n;
  return out;
}

int64_t SimulatedGpuMemoryMb(std::string_view model) {
  struct Known {
    std::string_view model;
    int64_t mb;
  };
  static constexpr Known kKnown[] = {{"H200", 143771},     {"H100", 81559}, {"A100", 81920},
                                     {"A100-40GB", 40960}, {"L40S", 46068}, {"L4", 23034},
                                     {"A10", 23028},       {"V100", 16384}, {"T4", 15360}};
  for (const Known& k : kKnown) {
    if (k.model == model) return k.mb;
  }
  return 16384;
}

std::string MigGpuModel(std::string_view parent_name, std::string_view mig_name) {
  std::string profile(mig_name);
  auto at = profile.rfind(" MIG ");
  profile = at == std::string::npos ? profile : profile.substr(at + 5);
  return ShortGpuModel(parent_name) + "-MIG-" + profile;
}

std::string ShortGpuModel(std::string_view nvml_name) {
  std::istringstream in{std::string(nvml_name)};
  std::vector<std::string> words;
  for (std::string w; in >> w;) {
    if (w == "NVIDIA" || w == "Tesla" || w == "GeForce" || w == "Quadro") continue;
    words.push_back(w);
  }
  if (words.empty()) return std::string(nvml_name);
  auto first_part = [](const std::string& w) { return w.substr(0, w.find('-')); };
  std::string head = first_part(words[0]);
  if ((head == "RTX" || head == "GTX" || head == "TITAN") && words.size() > 1) {
    return head + "-" + first_part(words[1]);
  }
  return head.empty() ? words[0] : head;
}

}  // namespace corral::agent
