#include "agent/container.h"

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

#include "agent/dirs.h"
#include "core/codec.h"

namespace corral::agent {
namespace fs = std::filesystem;
namespace {

std::string Dir(const std::string& run_dir) { return run_dir + "/container"; }

bool WriteText(const std::string& path, const std::string& text, mode_t mode = 0600) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) return false;
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

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

void Fail(const std::string& run_dir, const std::string& message) {
  // The first failing task's reason is the replica's.
  int fd = open((Dir(run_dir) + "/error").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0) {
    (void)!write(fd, message.data(), message.size());
    close(fd);
  }
  std::cerr << "corral: " << message << std::endl;
}

std::map<std::string, std::string> EnvMap(const Json& list) {
  std::map<std::string, std::string> out;
  for (const Json& e : list) {
    if (!e.is_string()) continue;
    const std::string kv = e.get<std::string>();
    auto eq = kv.find('=');
    if (eq != std::string::npos && eq > 0) out[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return out;
}

// The runtime configuration of the replica's container: its init is the pause process, every
// task comes in with crun exec.
Json BundleConfig(const Json& plan, const std::string& rootfs) {
  const bool writable = plan.value("writable", false);
  Json mounts = Json::array({
      {{"destination", "/proc"}, {"type", "proc"}, {"source", "proc"}},
      {{"destination", "/dev"},
       {"type", "tmpfs"},
       {"source", "tmpfs"},
       {"options", {"nosuid", "strictatime", "mode=755", "size=65536k"}}},
      {{"destination", "/dev/pts"},
       {"type", "devpts"},
       {"source", "devpts"},
       {"options", {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}}},
      {{"destination", "/dev/mqueue"},
       {"type", "mqueue"},
       {"source", "mqueue"},
       {"options", {"nosuid", "noexec", "nodev"}}},
      {{"destination", "/sys"},
       {"type", "bind"},
       {"source", "/sys"},
       {"options", {"rbind", "ro", "nosuid", "noexec", "nodev"}}},
  });
  Json shm_options = {"nosuid", "nodev", "mode=1777"};
  if (int64_t shm = plan.value("shm_bytes", int64_t{0}); shm > 0) {
    shm_options.push_back("size=" + std::to_string(shm));
  }
  mounts.push_back({{"destination", "/dev/shm"},
                    {"type", "tmpfs"},
                    {"source", "shm"},
                    {"options", shm_options}});
  if (!writable) {
    mounts.push_back({{"destination", "/tmp"},
                      {"type", "tmpfs"},
                      {"source", "tmpfs"},
                      {"options", {"nosuid", "nodev", "mode=1777"}}});
  }
  // Host networking: the node's names and resolver.
  for (const char* f : {"/etc/hosts", "/etc/resolv.conf"}) {
    if (access(f, R_OK) == 0) {
      mounts.push_back({{"destination", f},
                        {"type", "bind"},
                        {"source", f},
                        {"options", {"rbind", "ro", "nosuid", "nodev"}}});
    }
  }
  mounts.push_back({{"destination", "/.corral/init"},
                    {"type", "bind"},
                    {"source", plan["init"]},
                    {"options", {"bind", "ro", "nosuid", "nodev"}}});
  for (const Json& m : plan["mounts"]) mounts.push_back(m);
  Json caps = Json::array();
  return Json{
      {"ociVersion", "1.0.2"},
      {"process",
       {{"terminal", false},
        {"user", {{"uid", 0}, {"gid", 0}}},
        {"args", {"/.corral/init", "pause"}},
        {"env", {"PATH=/usr/local/bin:/usr/bin:/bin"}},
        {"cwd", "/"},
        {"noNewPrivileges", true},
        {"capabilities",
         {{"bounding", caps}, {"effective", caps}, {"permitted", caps}, {"ambient", caps}}}}},
      {"root", {{"path", rootfs}, {"readonly", !writable}}},
      {"mounts", mounts},
      {"linux",
       {{"namespaces", {{{"type", "pid"}}, {{"type", "ipc"}}, {{"type", "mount"}}}},
        {"devices", plan["devices"]},
        {"maskedPaths",
         {"/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
          "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware"}},
        {"readonlyPaths",
         {"/proc/asound", "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
          "/proc/sysrq-trigger"}}}}};
}

// Makes the replica's container (see container.h). Runs in the first task to come; the others
// wait on the lock and find it made.
Status StartContainer(const std::string& run_dir, const Json& plan, const CachedImage& image) {
  const std::string dir = Dir(run_dir);
  const std::string bundle = dir + "/bundle", rootfs = dir + "/rootfs";
  for (const std::string& d : {bundle, rootfs, dir + "/upper", dir + "/work"}) {
    if (mkdir(d.c_str(), 0700) != 0 && errno != EEXIST) {
      return Internal("mkdir " + d + ": " + std::strerror(errno));
    }
  }
  (void)chmod(rootfs.c_str(), 0755);
  (void)chmod((dir + "/upper").c_str(), 0755);
  if (!WriteText(bundle + "/config.json", BundleConfig(plan, rootfs).dump())) {
    return Internal("cannot write " + bundle + "/config.json: " + std::strerror(errno));
  }
  const std::string overlay =
      "lowerdir=" + image.rootfs + ",upperdir=" + dir + "/upper,workdir=" + dir + "/work";
  const std::string log = dir + "/crun.log";
  const std::string crun = plan["crun"], crun_root = plan["crun_root"], id = plan["id"];
  pid_t pid = fork();
  if (pid < 0) return Internal(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    int logfd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (logfd >= 0) {
      dup2(logfd, 1);
      dup2(logfd, 2);
    }
    // crun refuses a hybrid cgroup v1/v2 layout: in a mount namespace of its own it sees only
    // cgroup2 (and manages none: the replica's v1 groups, joined already, are inherited).
    if (unshare(CLONE_NEWNS) != 0 ||
        mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      perror("corral: private mount namespace");
      _exit(kContainerFailed);
    }
    if (umount2("/sys/fs/cgroup", MNT_DETACH) == 0) {
      (void)mount("cgroup2", "/sys/fs/cgroup", "cgroup2", 0, nullptr);
    }
    if (mount("overlay", rootfs.c_str(), "overlay", 0, overlay.c_str()) != 0) {
      perror(("corral: overlay of " + image.rootfs).c_str());
      _exit(kContainerFailed);
    }
    // The image's use lock goes to the container's init: the image is not evicted while it runs.
    if (dup2(image.use_fd, 3) != 3) _exit(kContainerFailed);
    execl(crun.c_str(), crun.c_str(), "--cgroup-manager=disabled", "--root", crun_root.c_str(),
          "run", "--detach", "--preserve-fds", "1", "--bundle", bundle.c_str(), id.c_str(),
          static_cast<char*>(nullptr));
    perror(("corral: exec " + crun).c_str());
    _exit(kContainerFailed);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string out;
    ReadFile(log, &out);
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return FailedPrecondition("cannot start a container of image " +
                              plan["image"].get<std::string>() + ": " + out);
  }
  return Status::Ok();
}

}  // namespace

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
  if (!WriteText(path + ".tmp", spec.dump(1), 0644) ||
      rename((path + ".tmp").c_str(), path.c_str()) != 0) {
    return Internal("cannot write " + path + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

Status WriteContainerPlan(const ContainerConfig& config, const ContainerLaunch& l) {
  const RunOrder& order = *l.order;
  const ContainerSpec& c = order.container;
  const std::string dir = Dir(l.run_dir);
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Internal("mkdir " + dir + ": " + std::strerror(errno));
  }
  UnixIdentity root;
  root.name = "root";
  const UnixIdentity& who = l.who ? *l.who : root;
  // Mounts: the job's, then the owner's home and the checkpoint directory at their own paths.
  Json mounts = Json::array();
  std::vector<std::pair<std::string, std::string>> mapped;  // host source -> container path
  auto add = [&](const std::string& src, const std::string& dst, bool ro, bool required) -> Status {
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
    mounts.push_back(
        {{"destination", dst}, {"type", "bind"}, {"source", src}, {"options", options}});
    mapped.emplace_back(src, dst);
    return Status::Ok();
  };
  for (const ContainerMount& m : c.mounts) {
    CORRAL_RETURN_IF_ERROR(add(m.source, m.destination, m.read_only, true));
  }
  if (c.mount_home && l.who != nullptr && !l.who->home.empty() && l.who->home != "/") {
    CORRAL_RETURN_IF_ERROR(add(l.who->home, l.who->home, false, false));
  }
  if (!l.checkpoint_dir.empty()) {
    CORRAL_RETURN_IF_ERROR(add(l.checkpoint_dir, l.checkpoint_dir, false, true));
  }
  // Where tasks start: the asked-for directory, else the job's workdir where a mount shows it.
  std::string cwd = c.workdir;
  if (cwd.empty() && !l.host_workdir.empty()) {
    for (const auto& [src, dst] : mapped) {
      if (l.host_workdir == src ||
          (l.host_workdir.rfind(src, 0) == 0 && l.host_workdir[src.size()] == '/')) {
        cwd = dst + l.host_workdir.substr(src.size());
      }
    }
  }
  Json devices = Json::array(), cdi_env = Json::array();
  std::vector<std::string> names;
  for (int32_t g : order.gpus) names.push_back(config.cdi_kind + "=" + std::to_string(g));
  if (!names.empty()) {
    CORRAL_RETURN_IF_ERROR(ResolveCdi(config.cdi_dirs, names, &devices, &cdi_env, &mounts));
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
               {"mounts", mounts},
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
  if (!WriteText(dir + "/plan.json", plan.dump())) {
    return Internal("cannot write " + dir + "/plan.json: " + std::strerror(errno));
  }
  return Status::Ok();
}

int ContainerTaskMain(const std::string& run_dir, int task) {
  std::string text;
  const std::string dir = Dir(run_dir);
  if (!ReadFile(dir + "/plan.json", &text)) {
    std::cerr << "corral: no container plan in " << dir << "\n";
    return kContainerFailed;
  }
  Json plan = Json::parse(text, nullptr, false);
  if (!plan.is_object() || !plan.contains("tasks") || task < 0 ||
      task >= static_cast<int>(plan["tasks"].size())) {
    std::cerr << "corral: container plan " << dir << "/plan.json is not valid for task " << task
              << "\n";
    return kContainerFailed;
  }
  const std::string image_ref = plan["image"];
  ImageCacheConfig cc;
  cc.dir = plan["cache"]["dir"];
  cc.limit_bytes = plan["cache"]["limit_bytes"];
  cc.insecure_registries = plan["cache"]["insecure"].get<std::vector<std::string>>();
  cc.skopeo = plan["cache"]["skopeo"];
  cc.umoci = plan["cache"]["umoci"];
  ImageCache cache(cc);
  const std::string node = plan.value("node", "");
  auto image = cache.Acquire(image_ref, node, std::cerr, [&](const std::string& line) {
    WriteText(dir + "/pulling", line);  // the agent reports it (ContainerNote)
  });
  if (!image.ok()) {
    Fail(run_dir, image.status().message());
    return kContainerFailed;
  }
  if (image->pulled) {
    WriteText(dir + "/pulled", "image " + image_ref + " pulled on " + node + " in " +
                                   std::to_string(image->pull_ms) + " ms");
  }
  {
    int lock = open((dir + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock < 0 || flock(lock, LOCK_EX) != 0) {
      Fail(run_dir, "cannot lock " + dir + "/lock: " + std::strerror(errno));
      return kContainerFailed;
    }
    struct stat st {};
    if (stat((dir + "/error").c_str(), &st) == 0) {
      std::cerr << "corral: the replica's container could not start\n";
      return kContainerFailed;
    }
    if (stat((dir + "/started").c_str(), &st) != 0) {
      Status started = StartContainer(run_dir, plan, *image);
      if (!started.ok()) {
        Fail(run_dir, started.message());
        return kContainerFailed;
      }
      WriteText(dir + "/started", image->digest + "\n");
    }
    close(lock);
  }
  close(image->use_fd);
  // The task's process: the job's environment over the image's (the image keeps its PATH).
  std::map<std::string, std::string> env = EnvMap(Json(image->env));
  const std::string image_path = env.count("PATH") ? env["PATH"] : "";
  for (const auto& [k, v] : EnvMap(plan["tasks"][task]["env"])) env[k] = v;
  for (const auto& [k, v] : EnvMap(plan["cdi_env"])) env[k] = v;
  if (!image_path.empty()) env["PATH"] = image_path;
  Json env_list = Json::array();
  for (const auto& [k, v] : env) env_list.push_back(k + "=" + v);
  std::string cwd = plan.value("cwd", "");
  if (cwd.empty()) cwd = image->workdir.empty() ? "/" : image->workdir;
  Json caps = Json::array();
  Json process = {
      {"terminal", false},
      {"user", {{"uid", plan["uid"]}, {"gid", plan["gid"]}, {"additionalGids", plan["groups"]}}},
      {"args", plan["command"]},
      {"env", env_list},
      {"cwd", cwd},
      {"noNewPrivileges", true},
      {"capabilities",
       {{"bounding", caps}, {"effective", caps}, {"permitted", caps}, {"ambient", caps}}}};
  const std::string process_file = dir + "/task." + std::to_string(task) + ".json";
  if (!WriteText(process_file, process.dump())) {
    Fail(run_dir, "cannot write " + process_file + ": " + std::strerror(errno));
    return kContainerFailed;
  }
  const std::string crun = plan["crun"], crun_root = plan["crun_root"], id = plan["id"];
  std::cout.flush();
  std::cerr.flush();
  execl(crun.c_str(), crun.c_str(), "--cgroup-manager=disabled", "--root", crun_root.c_str(),
        "exec", "--process", process_file.c_str(), id.c_str(), static_cast<char*>(nullptr));
  Fail(run_dir, "cannot execute " + crun + ": " + std::strerror(errno));
  return kContainerFailed;
}

void RemoveContainer(const ContainerConfig& config, const std::string& run_dir,
                     const std::string& container_id) {
  std::string out;
  (void)RunTool({config.crun, "--cgroup-manager=disabled", "--root", config.crun_root, "delete",
                 "--force", container_id},
                &out);
  std::error_code ec;
  for (const char* d : {"/upper", "/work", "/rootfs", "/bundle"}) {
    fs::remove_all(Dir(run_dir) + d, ec);
  }
}

std::string ContainerNote(const std::string& run_dir) {
  std::string pulling, pulled;
  const bool began = ReadFile(Dir(run_dir) + "/pulling", &pulling);
  const bool ended = ReadFile(Dir(run_dir) + "/pulled", &pulled);
  // Both once the pull is over, a line each: a pull quicker than the agent's poll must still be
  // told as begun (the head records each line once).
  if (began && ended) return pulling + "\n" + pulled;
  return ended ? pulled : began ? pulling : "";
}

std::string ContainerError(const std::string& run_dir) {
  std::string text;
  if (!ReadFile(Dir(run_dir) + "/error", &text)) return "";
  return text;
}

}  // namespace corral::agent
