#include "agent/launch/cgroup.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "agent/launch/device_filter.h"
#include "agent/node/dirs.h"
#include "agent/node/file_util.h"

namespace corral::agent {
namespace {

constexpr int64_t kCpuPeriodUs = 100000;

bool IsFile(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status WriteValue(const std::string& path, const std::string& value) {
  std::ofstream out(path);
  if (!out) return Internal("cannot open " + path + ": " + std::strerror(errno));
  out << value;
  out.flush();
  if (!out) return Internal("cannot write \"" + value + "\" to " + path);
  return Status::Ok();
}

// "key value" lines (memory.events, cpu.stat, memory.oom_control): the value of `key`, or -1.
int64_t KeyedValue(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  for (std::string k; in >> k;) {
    int64_t v = 0;
    if (!(in >> v)) return -1;
    if (k == key) return v;
  }
  return -1;
}

int64_t Number(const std::string& path) {
  std::istringstream in(Slurp(path));
  int64_t v = 0;
  return in >> v ? v : 0;
}

// Whether we may make groups here: a probe group is created and removed.
bool Writable(const std::string& base) {
  if (!MakeDirs(base).ok()) return false;
  std::string probe = base + "/.probe-" + std::to_string(getpid());
  if (mkdir(probe.c_str(), 0755) != 0) return false;
  rmdir(probe.c_str());
  return true;
}

}  // namespace

Cgroups Cgroups::Detect(const std::string& root) {
  Cgroups c;
  // v2: the unified hierarchy mounted at root, with the controllers we need available.
  std::string controllers = Slurp(root + "/cgroup.controllers");
  if (controllers.find("memory") != std::string::npos &&
      controllers.find("pids") != std::string::npos && Writable(root + "/corral")) {
    // Controllers must be enabled on every level above the run's group.
    bool ok = true;
    for (const std::string& dir : {root, root + "/corral"}) {
      for (const char* ctl : {"+memory", "+pids", "+cpu"}) {
        if (!WriteValue(dir + "/cgroup.subtree_control", ctl).ok() && std::string(ctl) != "+cpu") {
          ok = false;
        }
      }
    }
    if (ok) {
      c.version_ = 2;
      c.v2_base_ = root + "/corral";
      c.v2_devices_ = DeviceFilterSupported();
      return c;
    }
  }
  // v1: one hierarchy per controller (cpu and cpuacct may share a mount).
  std::map<std::string, std::string> found;
  for (const char* name : {"memory", "pids", "cpu", "cpuacct"}) {
    const std::string ctl = name;
    for (const std::string& mount : {root + "/" + ctl, root + "/cpu,cpuacct"}) {
      if (IsDir(mount) && (ctl == "memory" ? IsFile(mount + "/memory.limit_in_bytes") : true) &&
          Writable(mount + "/corral")) {
        found[ctl] = mount + "/corral";
        break;
      }
    }
  }
  if (found.count("memory") > 0 && found.count("pids") > 0) {
    c.version_ = 1;
    c.v1_base_ = std::move(found);
    if (IsFile(root + "/devices/devices.deny") && Writable(root + "/devices/corral")) {
      c.v1_devices_ = root + "/devices/corral";
    }
  }
  return c;
}

std::string Cgroups::Describe() const {
  if (version_ == 0) return "no cgroups (runs are not capped)";
  if (version_ == 2) return "cgroup v2 at " + v2_base_ + (v2_devices_ ? " (with devices)" : "");
  std::string s = "cgroup v1 (";
  for (const auto& [ctl, base] : v1_base_) s += (s.back() == '(' ? "" : " ") + ctl;
  if (!v1_devices_.empty()) s += " devices";
  return s + ")";
}

std::vector<std::string> Cgroups::Dirs(const std::string& name) const {
  if (version_ == 2) return {v2_base_ + "/" + name};
  std::vector<std::string> out;
  for (const auto& [ctl, base] : v1_base_) out.push_back(base + "/" + name);
  if (!v1_devices_.empty()) out.push_back(v1_devices_ + "/" + name);  // where it has one
  return out;
}

Result<std::vector<std::string>> Cgroups::Create(const std::string& name,
                                                 const CgroupLimits& limits) const {
  if (version_ == 0) return std::vector<std::string>{};
  std::vector<std::string> procs;
  if (version_ == 2) {
    const std::string dir = v2_base_ + "/" + name;
    // The node's level must enable the controllers for the run's group too.
    const std::string node_dir = dir.substr(0, dir.rfind('/'));
    CORRAL_RETURN_IF_ERROR(MakeDirs(node_dir));
    for (const char* ctl : {"+memory", "+pids", "+cpu"}) {
      (void)WriteValue(node_dir + "/cgroup.subtree_control", ctl);
    }
    CORRAL_RETURN_IF_ERROR(MakeDirs(dir));
    if (limits.memory_bytes > 0) {
      CORRAL_RETURN_IF_ERROR(WriteValue(dir + "/memory.max", std::to_string(limits.memory_bytes)));
      (void)WriteValue(dir + "/memory.swap.max", "0");
    }
    if (limits.pids > 0) {
      CORRAL_RETURN_IF_ERROR(WriteValue(dir + "/pids.max", std::to_string(limits.pids)));
    }
    if (limits.cpu_milli > 0 && IsFile(dir + "/cpu.max")) {
      CORRAL_RETURN_IF_ERROR(
          WriteValue(dir + "/cpu.max", std::to_string(limits.cpu_milli * kCpuPeriodUs / 1000) +
                                           " " + std::to_string(kCpuPeriodUs)));
    }
    if (!limits.denied_nvidia_minors.empty() && v2_devices_) {
      CORRAL_RETURN_IF_ERROR(DenyCharDevices(dir, kNvidiaMajor, limits.denied_nvidia_minors));
    }
    procs.push_back(dir + "/cgroup.procs");
    return procs;
  }
  for (const auto& [ctl, base] : v1_base_) {
    const std::string dir = base + "/" + name;
    CORRAL_RETURN_IF_ERROR(MakeDirs(dir));
    if (ctl == "memory" && limits.memory_bytes > 0) {
      CORRAL_RETURN_IF_ERROR(
          WriteValue(dir + "/memory.limit_in_bytes", std::to_string(limits.memory_bytes)));
      // Without this, a job would spill past its limit into swap where the node has any.
      if (IsFile(dir + "/memory.memsw.limit_in_bytes")) {
        (void)WriteValue(dir + "/memory.memsw.limit_in_bytes", std::to_string(limits.memory_bytes));
      }
    }
    if (ctl == "pids" && limits.pids > 0) {
      CORRAL_RETURN_IF_ERROR(WriteValue(dir + "/pids.max", std::to_string(limits.pids)));
    }
    if (ctl == "cpu" && limits.cpu_milli > 0) {
      CORRAL_RETURN_IF_ERROR(WriteValue(dir + "/cpu.cfs_period_us", std::to_string(kCpuPeriodUs)));
      CORRAL_RETURN_IF_ERROR(WriteValue(dir + "/cpu.cfs_quota_us",
                                        std::to_string(limits.cpu_milli * kCpuPeriodUs / 1000)));
    }
    procs.push_back(dir + "/cgroup.procs");
  }
  if (!limits.denied_nvidia_minors.empty() && !v1_devices_.empty()) {
    // The group starts as its parent does (every device allowed); each denial is an exception.
    const std::string dir = v1_devices_ + "/" + name;
    CORRAL_RETURN_IF_ERROR(MakeDirs(dir));
    for (int32_t minor : limits.denied_nvidia_minors) {
      CORRAL_RETURN_IF_ERROR(
          WriteValue(dir + "/devices.deny",
                     "c " + std::to_string(kNvidiaMajor) + ":" + std::to_string(minor) + " rwm"));
    }
    procs.push_back(dir + "/cgroup.procs");
  }
  return procs;
}

bool Cgroups::Exists(const std::string& name) const {
  for (const std::string& dir : Dirs(name)) {
    if (IsDir(dir)) return true;
  }
  return false;
}

CgroupUsage Cgroups::Usage(const std::string& name) const {
  CgroupUsage u;
  if (version_ == 2) {
    const std::string dir = v2_base_ + "/" + name;
    u.peak_memory_bytes = Number(dir + "/memory.peak");
    u.memory_bytes = std::max<int64_t>(0, Number(dir + "/memory.current"));
    u.cpu_ns = std::max<int64_t>(0, KeyedValue(Slurp(dir + "/cpu.stat"), "usage_usec")) * 1000;
    u.oom_killed = KeyedValue(Slurp(dir + "/memory.events"), "oom_kill") > 0;
    return u;
  }
  if (auto m = v1_base_.find("memory"); m != v1_base_.end()) {
    const std::string dir = m->second + "/" + name;
    u.peak_memory_bytes = Number(dir + "/memory.max_usage_in_bytes");
    u.memory_bytes = std::max<int64_t>(0, Number(dir + "/memory.usage_in_bytes"));
    u.oom_killed = KeyedValue(Slurp(dir + "/memory.oom_control"), "oom_kill") > 0;
  }
  if (auto c = v1_base_.find("cpuacct"); c != v1_base_.end()) {
    u.cpu_ns = Number(c->second + "/" + name + "/cpuacct.usage");
  }
  return u;
}

std::vector<int32_t> Cgroups::Pids(const std::string& name) const {
  std::vector<int32_t> out;
  for (const std::string& dir : Dirs(name)) {
    std::istringstream in(Slurp(dir + "/cgroup.procs"));
    for (int32_t pid; in >> pid;) out.push_back(pid);
    if (!out.empty()) break;  // every hierarchy holds the same processes
  }
  return out;
}

bool Cgroups::KillAll(const std::string& name) const {
  if (version_ == 0) return true;
  if (version_ == 2 && IsFile(Dirs(name)[0] + "/cgroup.kill")) {
    (void)WriteValue(Dirs(name)[0] + "/cgroup.kill", "1");
  }
  // A process may fork while we kill: go round until the group stays empty (the pids cap
  // bounds how long that can last).
  for (int round = 0; round < 50; ++round) {
    std::vector<int32_t> pids = Pids(name);
    if (pids.empty()) return true;
    for (int32_t pid : pids) (void)kill(pid, SIGKILL);
    usleep(round < 5 ? 1000 : 20000);
  }
  return Pids(name).empty();
}

void Cgroups::Remove(const std::string& name) const {
  for (const std::string& dir : Dirs(name)) (void)rmdir(dir.c_str());
}

}  // namespace corral::agent
