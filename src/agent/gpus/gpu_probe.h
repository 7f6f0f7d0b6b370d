// GPU discovery on a node (DESIGN §7): NVML loaded at run time, or simulated GPUs for
// `corral up` and tests. A probe is owned by the Agent and called from its thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/agent_protocol.h"
#include "core/gpu_health.h"
#include "core/node.h"
#include "core/status.h"

namespace corral::agent {

// What one health read found on a GPU: its error counters now, and the Xid events since the
// last read.
struct GpuHealthReading {
  int32_t index = 0;
  GpuErrorCounters counters;
  std::vector<int32_t> xids;
};

class GpuProbe {
 public:
  virtual ~GpuProbe() = default;
  // The node's GPUs, ordered by index (NVML order = PCI bus order).
  virtual Result<std::vector<Gpu>> Probe() = 0;
  // Each GPU's utilisation and memory in use now, by index, or its fault where it failed the
  // probe. An Unavailable error: the driver failed as a whole. Default: not measured.
  virtual Result<std::vector<GpuSample>> Sample() { return std::vector<GpuSample>{}; }
  // After Sample: each GPU's core temperature in degrees Celsius, by index, where the probe
  // reads it (nvidia-smi's temperature.gpu). Empty: not read.
  virtual std::map<int32_t, int32_t> Temperatures() const { return {}; }
  // After Probe: the /dev/nvidia minor of each GPU, by index, where the GPUs are real devices
  // (runs are then allowed only their own); empty for simulated GPUs.
  virtual std::map<int32_t, int32_t> DeviceMinors() const { return {}; }
  // How CUDA_VISIBLE_DEVICES names each GPU (by index) where an index would not do: with MIG,
  // every device by its UUID ("MIG-..." or "GPU-..."). Empty: by index.
  virtual std::map<int32_t, std::string> VisibleDeviceNames() const { return {}; }
  // Each GPU's ECC and retired-page counters and the Xid events since the last call (the
  // agent's health check, core/gpu_health.h). An empty list: this probe reads no health.
  virtual Result<std::vector<GpuHealthReading>> ReadHealth() {
    return std::vector<GpuHealthReading>{};
  }
};

// Reads GPUs through NVML. libnvidia-ml is dlopen()ed on each Probe() — never linked — so the
// agent binary starts on machines without an NVIDIA driver and says why it found no GPUs.
// What the driver says of itself and its physical GPUs (for `corral agent --check`).
struct NvmlDriverInfo {
  std::string library;         // the soname or path that loaded
  std::string driver_version;  // nvmlSystemGetDriverVersion; "" where the library lacks it
  // Each physical GPU's current MIG mode by NVML index: 1 on, 0 off, -1 not supported.
  std::vector<int32_t> mig_modes;
};

class NvmlGpuProbe final : public GpuProbe {
 public:
  // `library`: a path or soname to dlopen; empty tries libnvidia-ml.so.1 then libnvidia-ml.so.
  explicit NvmlGpuProbe(std::string library = "");
  ~NvmlGpuProbe() override;
  Result<std::vector<Gpu>> Probe() override;
  // nvmlDeviceGetUtilizationRates and nvmlDeviceGetMemoryInfo of every GPU; and
  // nvmlDeviceGetTemperature, where the driver has it, for Temperatures().
  Result<std::vector<GpuSample>> Sample() override;
  std::map<int32_t, int32_t> Temperatures() const override { return temperatures_; }
  // nvmlDeviceGetMinorNumber (the index where the driver lacks it).
  // A MIG device's is its parent GPU's.
  std::map<int32_t, int32_t> DeviceMinors() const override { return minors_; }
  std::map<int32_t, std::string> VisibleDeviceNames() const override { return visible_; }
  // nvmlDeviceGetTotalEccErrors (corrected and uncorrected, volatile and aggregate),
  // nvmlDeviceGetRetiredPages or, where the GPU remaps rows instead, nvmlDeviceGetRemappedRows;
  // Xid events from an NVML event set (nvmlEventSetWait_v2), which stays open between calls
  // (events are delivered only while registered).
  Result<std::vector<GpuHealthReading>> ReadHealth() override;
  // Loads NVML as Probe() does and reads the driver's version and each GPU's MIG mode.
  Result<NvmlDriverInfo> DriverInfo() const;

 private:
  struct Events;  // the open library and event set (gpu_probe.cc)
  // Readings by NVML index as readings by reported index (a MIG device takes its parent's).
  template <typename Reading>
  std::vector<Reading> ByReportedIndex(const std::vector<Reading>& by_nvml) const;
  std::string library_;
  std::map<int32_t, int32_t> minors_;
  std::map<int32_t, int32_t> parents_;       // reported index -> NVML index of the GPU
  std::map<int32_t, std::string> visible_;   // see VisibleDeviceNames
  std::map<int32_t, int32_t> temperatures_;  // by reported index, from the last Sample()
  std::unique_ptr<Events> events_;
};

// `count` identical GPUs of `model`, split in two NVLink/NUMA groups (first half, second half).
// UUIDs are "GPU-<uuid_prefix>-<index>": give each simulated node its own prefix.
// Their use is what `use_file` says, read at each Sample(), so that a test can set it: one line
// per GPU, "INDEX UTILIZATION_PERCENT [MEMORY_USED_MIB]"; GPUs not listed (or no file) are idle.
// Their health too: "INDEX fault REASON" fails that GPU's probe with REASON, "INDEX gone" makes
// it vanish (as a GPU that fell off the bus does); "INDEX xid CODE" is an Xid event (each line
// delivered once), "INDEX sbe|dbe|retired N" set its ECC counts (volatile and aggregate) and
// retired pages, "INDEX pending" a page retirement pending.
class SimulatedGpuProbe final : public GpuProbe {
 public:
  SimulatedGpuProbe(int32_t count, std::string model, std::string uuid_prefix = "sim",
                    std::string use_file = "");
  Result<std::vector<Gpu>> Probe() override;
  Result<std::vector<GpuSample>> Sample() override;
  Result<std::vector<GpuHealthReading>> ReadHealth() override;

 private:
  int32_t count_;
  size_t xids_delivered_ = 0;  // "xid" lines of use_file already read
  std::string model_;
  std::string uuid_prefix_;
  std::string use_file_;
};

struct SimulatedGpus {
  int32_t count = 0;
  std::string model;  // "SimGPU" unless given
};

// Parses the value of `--simulate-gpus`: "N" or "NxMODEL" (e.g. "4", "8xH100"), 0 <= N <= 1024.
Result<SimulatedGpus> ParseSimulateGpus(std::string_view text);

// Memory of a simulated GPU of `model` in MiB (known data-centre models; 16384 otherwise).
int64_t SimulatedGpuMemoryMb(std::string_view model);

// The short model name that job specs ask for: "NVIDIA H100 80GB HBM3" -> "H100",
// "Tesla V100-SXM2-16GB" -> "V100", "NVIDIA GeForce RTX 4090" -> "RTX-4090".
std::string ShortGpuModel(std::string_view nvml_name);
// A MIG device's model: its parent's short model and its profile ("A100-MIG-1g.10gb").
std::string MigGpuModel(std::string_view parent_name, std::string_view mig_name);

}  // namespace corral::agent
