// One cgroup per replica (DESIGN §10): how a run's CPU, memory and process count are capped,
// how every process it started is found and killed (even one that left its process group), and
// where its peak memory, CPU time and out-of-memory kills are read. cgroup v2 where the unified
// hierarchy has the controllers, else the v1 memory, cpu, cpuacct and pids hierarchies. On real
// GPU nodes each run may open only its own /dev/nvidia* devices: v1's devices controller, or on
// v2 an eBPF device program attached to the run's group (device_filter.h).
//
// Groups live under <hierarchy>/corral/<node>/<run>.<replica>: the node name keeps several
// agents on one machine (tests, `corral up`) apart.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace corral::agent {

// The character device major of NVIDIA's GPUs (/dev/nvidiaN has minor N); the control devices
// (nvidiactl, nvidia-modeset) and nvidia-uvm stay open to every run.
constexpr int32_t kNvidiaMajor = 195;

struct CgroupLimits {
  int32_t cpu_milli = 0;     // 0: no CPU cap
  int64_t memory_bytes = 0;  // 0: no memory cap
  int64_t pids = 0;          // 0: no process cap
  // The node's /dev/nvidia* GPU devices (minors) that the run may not open: the others' GPUs,
  // as Slurm's ConstrainDevices denies the GRES devices a job was not given. Enforced with the
  // v1 devices controller or a v2 device program (isolates_devices() says whether it is).
  std::vector<int32_t> denied_nvidia_minors;
};

struct CgroupUsage {
  int64_t peak_memory_bytes = 0;
  int64_t cpu_ns = 0;
  bool oom_killed = false;
  int64_t memory_bytes = 0;  // in use now (memory.current; v1 memory.usage_in_bytes)  // the kernel
                             // killed a process of the group for exceeding memory
};

class Cgroups {
 public:
  // The layout of this machine under `root`; none() if no usable hierarchy is writable.
  static Cgroups Detect(const std::string& root = "/sys/fs/cgroup");
  static Cgroups None() { return Cgroups(); }

  bool none() const { return version_ == 0; }
  // Whether CgroupLimits::denied_nvidia_minors is enforced here.
  bool isolates_devices() const { return !v1_devices_.empty() || v2_devices_; }
  std::string Describe() const;  // for the agent's log: "cgroup v1 (memory cpu cpuacct pids)"

  // Creates group `name` ("<node>/<run>.<replica>") with `limits`; returns the cgroup.procs
  // files a task writes its pid to before it executes the job.
  Result<std::vector<std::string>> Create(const std::string& name,
                                          const CgroupLimits& limits) const;
  bool Exists(const std::string& name) const;
  CgroupUsage Usage(const std::string& name) const;
  std::vector<int32_t> Pids(const std::string& name) const;
  // SIGKILLs every process of the group until none is left (or a few rounds pass); true if
  // the group is empty.
  bool KillAll(const std::string& name) const;
  // Removes the (empty) group from every hierarchy.
  void Remove(const std::string& name) const;

 private:
  std::vector<std::string> Dirs(const std::string& name) const;

  int version_ = 0;
  std::string v2_base_;                         // <root>/corral
  bool v2_devices_ = false;                     // the kernel loads our device programs
  std::map<std::string, std::string> v1_base_;  // controller -> <mount>/corral
  // <devices mount>/corral: a run gets a group there only when its GPU devices are limited.
  std::string v1_devices_;
};

}  // namespace corral::agent
