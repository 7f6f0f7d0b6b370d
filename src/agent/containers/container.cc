#include "agent/containers/container.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "agent/node/dirs.h"
#include "agent/node/file_util.h"
#include "core/codec.h"
#include "gpushare/share_contract.h"

namespace corral::agent {
namespace fs = std::filesystem;
namespace {

// Whether `who` may reach `path` and read it (and list it, a directory), by the mode bits of
// every directory on the way: the agent is root, so access(2) would say yes to everything.
bool OwnerCanRead(const std::string& path, const UnixIdentity& who, std::string* why) {
  auto allowed = [&](const struct stat& st, unsigned bits) {
    if (who.uid == 0) return true;
    if (st.st_uid == who.uid) return (st.st_mode >> 6 & bits) == bits;
    bool member = st.st_gid == who.gid ||
                  std::find(who.groups.begin(), who.groups.end(), st.st_gid) != who.groups.end();
    if (member) return (st.st_mode >> 3 & bits) == bits;
    return (st.st_mode & bits) == bits;
  };
  std::string prefix;
  size_t start = 1;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    prefix = path.substr(0, slash);
    start = slash + 1;
    if (prefix.empty()) continue;
    struct stat st {};
    if (stat(prefix.c_str(), &st) != 0) {
      *why = prefix + ": " + std::strerror(errno);
      return false;
    }
    const bool last = slash >= path.size();
    unsigned bits = !last ? 1u : (S_ISDIR(st.st_mode) ? 5u : 4u);
    if (!allowed(st, bits)) {
      *why = prefix + " is not " + (last ? "readable" : "searchable") + " by user " + who.name;
      return false;
    }
  }
  return true;
}

// The devices, environment and mounts the CDI specs in `dirs` give `names` ("kind=name").
Status ResolveCdi(const std::vector<std::string>& dirs, const std::vector<std::string>& names,
                  Json* devices, Json* env, Json* mounts) {
  std::map<std::string, Json> found;  // name -> containerEdits (device's, then the spec's)
  for (const std::string& dir : dirs) {
    std::error_code ec;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (e.path().extension() == ".json") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      std::string text;
      if (!ReadFile(f.string(), &text)) continue;
      Json spec = Json::parse(text, nullptr, false);
      if (!spec.is_object() || !spec.contains("kind") || !spec["kind"].is_string()) {
        return FailedPrecondition("CDI spec " + f.string() + " is not valid JSON with a kind");
      }
      const std::string kind = spec["kind"].get<std::string>();
      for (const Json& d : spec.value("devices", Json::array())) {
        if (!d.is_object() || !d.contains("name")) continue;
        const std::string full = kind + "=" + d["name"].get<std::string>();
        Json edits = Json::array({d.value("containerEdits", Json::object()),
                                  spec.value("containerEdits", Json::object())});
        found[full] = edits;  // a later directory wins (/var/run/cdi over /etc/cdi)
      }
    }
  }
  for (const std::string& name : names) {
    auto it = found.find(name);
    if (it == found.end()) {
      return FailedPrecondition("CDI device " + name + " is in no spec in " +
                                (dirs.empty() ? std::string("(none)") : dirs[0]) +
                                (dirs.size() > 1 ? " and the other CDI directories" : ""));
    }
    for (const Json& edits : it->second) {
      for (const Json& n : edits.value("deviceNodes", Json::array())) {
        const std::string path = n.value("path", "");
        const std::string host = n.value("hostPath", path);
        struct stat st {};
        if (path.empty() || stat(host.c_str(), &st) != 0 ||
            !(S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))) {
          return FailedPrecondition("CDI device " + name + ": host device " + host +
                                    " is missing or not a device");
        }
        Json dev = {{"path", path},
                    {"type", S_ISCHR(st.st_mode) ? "c" : "b"},
                    {"major", n.value("major", static_cast<int64_t>(major(st.st_rdev)))},
                    {"minor", n.value("minor", static_cast<int64_t>(minor(st.st_rdev)))},
                    {"fileMode", n.value("fileMode", 0666)},
                    {"uid", n.value("uid", 0)},
                    {"gid", n.value("gid", 0)}};
        bool dup = false;
        for (const Json& d : *devices) dup = dup || d["path"] == dev["path"];
        if (!dup) devices->push_back(dev);
      }
      for (const Json& e : edits.value("env", Json::array())) env->push_back(e);
      for (const Json& m : edits.value("mounts", Json::array())) {
        mounts->push_back({{"destination", m.value("containerPath", "")},
                           {"source", m.value("hostPath", "")},
                           {"type", m.value("type", "bind")},
                           {"options", m.value("options", Json::array({"rbind", "ro"}))}});
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Status CheckCdiDevices(const std::vector<std::string>& dirs,
                       const std::vector<std::string>& names) {
  Json devices = Json::array(), env = Json::array(), mounts = Json::array();
  return ResolveCdi(dirs, names, &devices, &env, &mounts);
}

Status WriteSimulatedCdiSpec(const std::string& dir, int32_t count) {
  CORRAL_RETURN_IF_ERROR(MakeDirs(dir));
  Json devices = Json::array();
  for (int32_t i = 0; i < count; ++i) {
    devices.push_back(
        {{"name", std::to_string(i)},
         {"containerEdits",
          {{"deviceNodes",
            {{{"path", "/dev/nvidia" + std::to_string(i)}, {"hostPath", "/dev/null"}}}}}}});
  }
  Json spec = {{"cdiVersion", "0.6.0"},
               {"kind", "corral.dev/gpu"},
               {"devices", devices},
               {"containerEdits", {{"env", {"CORRAL_SIMULATED_GPUS=1"}}}}};
  const std::string path = dir + "/corral-simulated-gpus.json";
  if (!WriteTextFile(path + ".tmp", spec.dump(1), 0644) ||
      rename((path + ".tmp").c_str(), path.c_str()) != 0) {
    return Internal("cannot write " + path + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

namespace {

// The bind mounts of a container's plan, each checked on the node as its owner.
struct PlanMounts {
  Json list = Json::array();
  std::vector<std::pair<std::string, std::string>> mapped;  // host source -> container path

  Status Add(const ContainerLaunch& l, const UnixIdentity& who, const std::string& src,
             const std::string& dst, bool ro, bool required) {
    struct stat st {};
    if (stat(src.c_str(), &st) != 0) {
      if (!required) return Status::Ok();
      return FailedPrecondition("mount " + src + ":" + dst + ": " + src + " does not exist on " +
                                l.node);
    }
    std::string why;
    if (!OwnerCanRead(src, who, &why)) {
      return FailedPrecondition("mount " + src + ":" + dst + ": " + why);
    }
    Json options = {"rbind", "nosuid", "nodev"};
    if (ro) options.push_back("ro");
    list.push_back({{"destination", dst}, {"type", "bind"}, {"source", src}, {"options", options}});
    mapped.emplace_back(src, dst);
    return Status::Ok();
  }
};

// The job's mounts, then the owner's home and the checkpoint directory at their own paths, and
// an MPS share's daemon directories (mps.h), reached at the same paths.
Result<PlanMounts> ContainerPlanMounts(const ContainerLaunch& l, const UnixIdentity& who) {
  const ContainerSpec& c = l.order->container;
  PlanMounts m;
  for (const ContainerMount& x : c.mounts) {
    CORRAL_RETURN_IF_ERROR(m.Add(l, who, x.source, x.destination, x.read_only, true));
  }
  if (c.mount_home && l.who != nullptr && !l.who->home.empty() && l.who->home != "/") {
    CORRAL_RETURN_IF_ERROR(m.Add(l, who, l.who->home, l.who->home, false, false));
  }
  if (!l.checkpoint_dir.empty()) {
    CORRAL_RETURN_IF_ERROR(m.Add(l, who, l.checkpoint_dir, l.checkpoint_dir, false, true));
  }
  if (!l.task_envs.empty()) {
    for (const std::string& kv : l.task_envs[0]) {
      for (const char* key :
           {CORRAL_ENV_MPS_PIPE_DIRECTORY "=", CORRAL_ENV_MPS_LOG_DIRECTORY "="}) {
        if (kv.rfind(key, 0) != 0) continue;
        const std::string dir = kv.substr(std::strlen(key));
        CORRAL_RETURN_IF_ERROR(m.Add(l, who, dir, dir, false, true));
      }
    }
  }
  return m;
}

// Where tasks start: the asked-for directory, else the job's workdir where a mount shows it.
std::string ContainerPlanCwd(const ContainerLaunch& l, const PlanMounts& m) {
  std::string cwd = l.order->container.workdir;
  if (cwd.empty() && !l.host_workdir.empty()) {
    for (const auto& [src, dst] : m.mapped) {
      if (l.host_workdir == src ||
          (l.host_workdir.rfind(src, 0) == 0 && l.host_workdir[src.size()] == '/')) {
        cwd = dst + l.host_workdir.substr(src.size());
      }
    }
  }
  return cwd;
}

}  // namespace

Status WriteContainerPlan(const ContainerConfig& config, const ContainerLaunch& l) {
  const RunOrder& order = *l.order;
  const ContainerSpec& c = order.container;
  const std::string dir = ContainerDir(l.run_dir);
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Internal("mkdir " + dir + ": " + std::strerror(errno));
  }
  UnixIdentity root;
  root.name = "root";
  const UnixIdentity& who = l.who ? *l.who : root;
  Result<PlanMounts> mounts = ContainerPlanMounts(l, who);
  if (!mounts.ok()) return mounts.status();
  const std::string cwd = ContainerPlanCwd(l, *mounts);
  Json devices = Json::array(), cdi_env = Json::array();
  std::vector<std::string> names;
  for (int32_t g : order.gpus) names.push_back(config.cdi_kind + "=" + std::to_string(g));
  if (!names.empty()) {
    CORRAL_RETURN_IF_ERROR(ResolveCdi(config.cdi_dirs, names, &devices, &cdi_env, &mounts->list));
  }
  Json tasks = Json::array();
  for (const auto& env : l.task_envs) tasks.push_back({{"env", env}});
  Json groups = Json::array();
  for (gid_t g : who.groups) groups.push_back(g);
  Json plan = {{"image", c.image},
               {"id", l.container_id},
               {"node", l.node},
               {"crun", config.crun},
               {"crun_root", config.crun_root},
               {"init", config.init_exe},
               {"writable", c.writable},
               {"shm_bytes", order.memory_mb * 1024 * 1024},
               {"mounts", mounts->list},
               {"devices", devices},
               {"cdi_env", cdi_env},
               {"cwd", cwd},
               {"command", order.command},
               {"uid", who.uid},
               {"gid", who.gid},
               {"groups", groups},
               {"tasks", tasks},
               {"cache",
                {{"dir", config.cache.dir},
                 {"limit_bytes", config.cache.limit_bytes},
                 {"insecure", config.cache.insecure_registries},
                 {"skopeo", config.cache.skopeo},
                 {"umoci", config.cache.umoci}}}};
  if (!WriteTextFile(dir + "/plan.json", plan.dump())) {
    return Internal("cannot write " + dir + "/plan.json: " + std::strerror(errno));
  }
  return Status::Ok();
}

void RemoveContainer(const ContainerConfig& config, const std::string& run_dir,
                     const std::string& container_id) {
  std::string out;
  (void)RunTool({config.crun, "--cgroup-manager=disabled", "--root", config.crun_root, "delete",
                 "--force", container_id},
                &out);
  std::error_code ec;
  for (const char* d : {"/upper", "/work", "/rootfs", "/bundle"}) {
    fs::remove_all(ContainerDir(run_dir) + d, ec);
  }
}

std::string ContainerNote(const std::string& run_dir) {
  std::string pulling, pulled;
  const bool began = ReadFile(ContainerDir(run_dir) + "/pulling", &pulling);
  const bool ended = ReadFile(ContainerDir(run_dir) + "/pulled", &pulled);
  // Both once the pull is over, a line each: a pull quicker than the agent's poll must still be
  // told as begun (the head records each line once).
  if (began && ended) return pulling + "\n" + pulled;
  return ended ? pulled : began ? pulling : "";
}

std::string ContainerError(const std::string& run_dir) {
  std::string text;
  if (!ReadFile(ContainerDir(run_dir) + "/error", &text)) return "";
  return text;
}

}  // namespace corral::agent
