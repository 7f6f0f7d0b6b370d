// The task side of a container replica (container.h): `corral-container container-task RUN`,
// a small static executable the monitor starts for each task (or `corral container-task`).
#include <fcntl.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <map>

#include "agent/containers/container.h"
#include "agent/node/dirs.h"
#include "agent/node/file_util.h"
#include "core/codec.h"

namespace corral::agent {
namespace {

void Fail(const std::string& run_dir, const std::string& message) {
  // The first failing task's reason is the replica's.
  int fd = open((ContainerDir(run_dir) + "/error").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                0600);
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
  const std::string dir = ContainerDir(run_dir);
  const std::string bundle = dir + "/bundle", rootfs = dir + "/rootfs";
  for (const std::string& d : {bundle, rootfs, dir + "/upper", dir + "/work"}) {
    if (mkdir(d.c_str(), 0700) != 0 && errno != EEXIST) {
      return Internal("mkdir " + d + ": " + std::strerror(errno));
    }
  }
  (void)chmod(rootfs.c_str(), 0755);
  (void)chmod((dir + "/upper").c_str(), 0755);
  if (!WriteTextFile(bundle + "/config.json", BundleConfig(plan, rootfs).dump())) {
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

// The image the plan names, from the node's cache (pulled if it is not there yet, the agent
// told of the pull through files beside the plan).
Result<CachedImage> AcquirePlanImage(const std::string& dir, const Json& plan) {
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
    WriteTextFile(dir + "/pulling", line);  // the agent reports it (ContainerNote)
  });
  if (image.ok() && image->pulled) {
    WriteTextFile(dir + "/pulled", "image " + image_ref + " pulled on " + node + " in " +
                                       std::to_string(image->pull_ms) + " ms");
  }
  return image;
}

// The replica's container, started by the first of its tasks to get the lock; the others find
// it started. False: another task's start failed already (its reason is the replica's).
Result<bool> EnsureContainerStarted(const std::string& run_dir, const Json& plan,
                                    const CachedImage& image) {
  const std::string dir = ContainerDir(run_dir);
  int lock = open((dir + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock < 0 || flock(lock, LOCK_EX) != 0) {
    return FailedPrecondition("cannot lock " + dir + "/lock: " + std::strerror(errno));
  }
  struct stat st {};
  if (stat((dir + "/error").c_str(), &st) == 0) return false;
  if (stat((dir + "/started").c_str(), &st) != 0) {
    CORRAL_RETURN_IF_ERROR(StartContainer(run_dir, plan, image));
    WriteTextFile(dir + "/started", image.digest + "\n");
  }
  close(lock);
  return true;
}

// The task's process for crun exec: the job's environment over the image's (the image keeps
// its PATH), the plan's user and command, no capabilities.
Json TaskProcess(const Json& plan, int task, const CachedImage& image) {
  std::map<std::string, std::string> env = EnvMap(Json(image.env));
  const std::string image_path = env.count("PATH") ? env["PATH"] : "";
  for (const auto& [k, v] : EnvMap(plan["tasks"][task]["env"])) env[k] = v;
  for (const auto& [k, v] : EnvMap(plan["cdi_env"])) env[k] = v;
  if (!image_path.empty()) env["PATH"] = image_path;
  Json env_list = Json::array();
  for (const auto& [k, v] : env) env_list.push_back(k + "=" + v);
  std::string cwd = plan.value("cwd", "");
  if (cwd.empty()) cwd = image.workdir.empty() ? "/" : image.workdir;
  Json caps = Json::array();
  return {
      {"terminal", false},
      {"user", {{"uid", plan["uid"]}, {"gid", plan["gid"]}, {"additionalGids", plan["groups"]}}},
      {"args", plan["command"]},
      {"env", env_list},
      {"cwd", cwd},
      {"noNewPrivileges", true},
      {"capabilities",
       {{"bounding", caps}, {"effective", caps}, {"permitted", caps}, {"ambient", caps}}}};
}

}  // namespace

int ContainerTaskMain(const std::string& run_dir, int task) {
  std::string text;
  const std::string dir = ContainerDir(run_dir);
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
  auto image = AcquirePlanImage(dir, plan);
  if (!image.ok()) {
    Fail(run_dir, image.status().message());
    return kContainerFailed;
  }
  auto started = EnsureContainerStarted(run_dir, plan, *image);
  if (!started.ok()) {
    Fail(run_dir, started.status().message());
    return kContainerFailed;
  }
  if (!*started) {
    std::cerr << "corral: the replica's container could not start\n";
    return kContainerFailed;
  }
  close(image->use_fd);
  const std::string process_file = dir + "/task." + std::to_string(task) + ".json";
  if (!WriteTextFile(process_file, TaskProcess(plan, task, *image).dump())) {
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

}  // namespace corral::agent
