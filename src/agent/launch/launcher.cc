#include "agent/launch/launcher.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "agent/launch/launcher_internal.h"
#include "agent/launch/monitor.h"
#include "agent/launch/run_record.h"
#include "agent/node/dirs.h"
#include "agent/node/file_util.h"
#include "agent/node/process_groups.h"
#include "agent/sessions/notebook.h"
#include "agent/sessions/notebook_activity.h"

namespace corral::agent {
namespace {

using internal::ChildPlan;
using internal::WriteAll;
using launcher_detail::AdoptPids;
using launcher_detail::ErrnoText;
using launcher_detail::FsyncPath;
using launcher_detail::NowMs;
using launcher_detail::ProcStartTime;

// ---- Files ---------------------------------------------------------------------------------

}  // namespace

uint64_t launcher_detail::ProcStartTime(int32_t pid) {
  std::string stat;
  if (pid <= 0 || !ReadFile("/proc/" + std::to_string(pid) + "/stat", &stat)) return 0;
  auto paren = stat.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream in(stat.substr(paren + 1));
  std::string state;
  in >> state;
  if (state == "Z" || state == "X") return 0;
  std::string field;
  for (int i = 4; i < 22 && in >> field; ++i) {
  }
  uint64_t start = 0;
  in >> start;
  return start;
}

namespace {

bool ProcessAlive(int32_t pid, uint64_t start) {
  if (pid <= 0) return false;
  if (start == 0) return kill(pid, 0) == 0;
  return ProcStartTime(pid) == start;
}

// waitpid without waiting: true once `pid` is reaped, or is not this process's child.
bool Reaped(pid_t pid) {
  pid_t r = waitpid(pid, nullptr, WNOHANG);
  return r == pid || (r < 0 && errno == ECHILD);
}

// True if some process of group `pgid` is alive (zombies do not count: under an init that
// does not reap, an orphaned job's zombie would otherwise look alive forever).
bool GroupAlive(int32_t pgid) {
  if (pgid <= 0 || kill(-pgid, 0) != 0) return false;
  DIR* d = opendir("/proc");
  if (d == nullptr) return true;
  bool alive = false;
  while (struct dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::string stat;
    if (!ReadFile(std::string("/proc/") + e->d_name + "/stat", &stat)) continue;
    auto paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream in(stat.substr(paren + 1));
    std::string state;
    int64_t ppid = 0, pgrp = 0;
    if (in >> state >> ppid >> pgrp && pgrp == pgid && state != "Z" && state != "X") {
      alive = true;
      break;
    }
  }
  closedir(d);
  return alive;
}

// Creates `path` (and its parents, 0755) as a directory of the job's own, 0700. An existing one
// (a restarted job's checkpoints) is used only if it is a directory, not a link, and belongs
// to the job's owner (`uid`; the agent's own user when jobs run as the agent): the checkpoint
// root is shared and job ids are sequential, so another user could make the next job's
// directory first and read or plant what it holds.
// The first one made under a new parent (the checkpoint root) marks it as a top of
// hierarchies, as runs/ is (MakeDirInSpreadParent).
Status MakeOwnedDir(const std::string& path, bool chown_it, uid_t uid, gid_t gid) {
  if (Status made = MakeDirInSpreadParent(path, 0700); !made.ok()) {
    if (made.code() != ErrorCode::kAlreadyExists) return made;
    struct stat st {};
    if (lstat(path.c_str(), &st) != 0) return Internal(ErrnoText("stat " + path, errno));
    if (!S_ISDIR(st.st_mode)) {
      return FailedPrecondition(path + " exists and is not a directory (a link or a file)");
    }
    if (st.st_uid != uid && chown_it && st.st_uid == geteuid()) {
      // Made by the agents' own user a moment ago: another agent sharing this checkpoint root
      // starts the job's other replica and is between its mkdir and its chown. No one else
      // can make a directory that user owns, so finish the hand-over to the job's owner.
      int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0) return Internal(ErrnoText("open " + path, errno));
      const int changed = fchown(fd, uid, gid);
      const int saved = errno;
      close(fd);
      if (changed != 0) return Internal(ErrnoText("chown " + path, saved));
      return Status::Ok();
    }
    if (st.st_uid != uid) {
      return FailedPrecondition(path + " exists and belongs to uid " + std::to_string(st.st_uid) +
                                ", not to the job's owner (uid " + std::to_string(uid) +
                                "); refusing to use it");
    }
    return Status::Ok();
  }
  if (chown_it && chown(path.c_str(), uid, gid) != 0) {
    return Internal(ErrnoText("chown " + path, errno));
  }
  return Status::Ok();
}

std::string ResolveExecutable(const std::string& name, const std::string& path_env) {
  if (name.find('/') != std::string::npos) return name;
  std::istringstream in(path_env);
  for (std::string dir; std::getline(in, dir, ':');) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    struct stat st {};
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return name;  // execve fails with ENOENT: the job exits 127 with a message on stderr
}

// Where a replica's share that runs unenforced is noted, in its run directory.
constexpr char kShareNoteFile[] = "share-not-enforced";

bool HasEntry(const std::vector<std::string>& env, const std::string& entry) {
  return std::find(env.begin(), env.end(), entry) != env.end();
}

// The PATH of a task's environment ("" without one).
std::string PathOf(const std::vector<std::string>& env) {
  std::string path;
  for (const std::string& kv : env) {
    if (kv.rfind("PATH=", 0) == 0) path = kv.substr(5);
  }
  return path;
}

// Why `command` cannot be executed, when that is certain before anything starts: no file of
// that name exists where execve would look (the job's PATH, or the workdir for a path with a
// slash; a name without one that PATH lacks is also tried in the workdir, as execve does);
// "" otherwise (a relative PATH entry, which would be searched from the workdir, is not judged).
std::string MissingExecutable(const std::string& command, const std::string& path_env,
                              const std::string& workdir) {
  if (command.empty()) return "";  // execve's own error says it
  auto exists = [](const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 || errno != ENOENT;
  };
  auto in_workdir = [&](const std::string& name) {
    return name.front() == '/' ? name : workdir + "/" + name;
  };
  if (command.find('/') != std::string::npos) {
    if (exists(in_workdir(command))) return "";
    return "cannot execute " + command + ": No such file or directory";
  }
  std::istringstream in(path_env);
  for (std::string dir; std::getline(in, dir, ':');) {
    if (dir.empty() || dir.front() != '/' || exists(dir + "/" + command)) return "";
  }
  if (exists(in_workdir(command))) return "";
  return "cannot execute " + command + ": No such file or directory (not found on PATH " +
         path_env + ")";
}

std::vector<char*> CStrings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  for (const std::string& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

Status ValidateRunId(const std::string& run_id) {
  bool ok = !run_id.empty() && run_id.size() <= 200 && run_id != "." && run_id != "..";
  for (char c : run_id) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_')
      ok = false;
  }
  if (!ok) {
    return InvalidArgument("run_id \"" + run_id +
                           "\" is not valid: expected 1-200 letters, digits, '.', '-' or '_'");
  }
  return Status::Ok();
}

std::string MonitorExecutableBeside(const std::string& program) {
  auto slash = program.find_last_of('/');
  if (slash == std::string::npos) return {};
  std::string exe = program.substr(0, slash + 1) + "corral-monitor";
  struct stat st {};
  if (stat(exe.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || access(exe.c_str(), X_OK) != 0) {
    return {};
  }
  return exe;
}

int32_t TaskCount(const RunOrder& order) {
  return std::max<int32_t>(1, static_cast<int32_t>(order.task_envs.size()));
}

std::string LogFileName(const std::string& stream, int32_t task) {
  return task == 0 ? stream : stream + "." + std::to_string(task);
}

std::vector<std::string> JobEnvironment(const RunOrder& order, const std::string& node_name,
                                        int32_t task,
                                        const std::map<std::string, std::string>& defaults,
                                        const std::map<std::string, std::string>& share_env) {
  std::map<std::string, std::string> env =
      task > 0 && task < static_cast<int32_t>(order.task_envs.size()) ? order.task_envs[task]
                                                                      : order.env;
  for (const auto& [k, v] : defaults) env.try_emplace(k, v);
  env.try_emplace("CORRAL_JOB_ID", std::to_string(order.job_id));
  env.try_emplace("CORRAL_RUN", order.run_id);
  env.try_emplace("CORRAL_NODE", node_name);
  env.try_emplace("CORRAL_REPLICA", std::to_string(order.replica));
  const char* path = std::getenv("PATH");
  env.try_emplace("PATH", path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  if (const char* home = std::getenv("HOME")) env.try_emplace("HOME", home);
  // NVML and CUDA_VISIBLE_DEVICES indices agree only in PCI bus order.
  env.try_emplace("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
  std::string gpus;
  for (int32_t g : order.gpus) gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
  // "" hides every GPU from a job that asked for none; a task never sees a GPU not its run's.
  auto chosen = env.find("CUDA_VISIBLE_DEVICES");
  bool within = chosen != env.end() && !chosen->second.empty();
  if (within) {
    std::istringstream in(chosen->second);
    for (std::string g; std::getline(in, g, ',');) {
      bool mine = false;
      for (int32_t o : order.gpus) mine = mine || g == std::to_string(o);
      within = within && mine;
    }
  }
  if (!within) env["CUDA_VISIBLE_DEVICES"] = gpus;
  for (const auto& [k, v] : share_env) {
    std::string& value = env[k];
    // The shim goes first, before what the job preloads itself.
    value = k == "LD_PRELOAD" && !value.empty() ? v + ":" + value : v;
  }
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

PosixLauncher::PosixLauncher(std::string state_dir, std::string node_name,
                             std::map<std::string, std::string> env_defaults, RunAsPolicy run_as,
                             Cgroups cgroups, std::string monitor_exe, std::string gpushare_lib)
    : monitor_exe_(std::move(monitor_exe)),
      gpushare_lib_(std::move(gpushare_lib)),
      state_dir_(state_dir),
      runs_dir_(state_dir + "/runs"),
      node_name_(std::move(node_name)),
      env_defaults_(std::move(env_defaults)),
      run_as_(run_as),
      cgroups_(std::move(cgroups)),
      notify_path_(state_dir + "/exit-notify") {
  if (MakeDirs(runs_dir_).ok()) (void)SpreadSubdirectories(runs_dir_);
  if (mkfifo(notify_path_.c_str(), 0600) != 0 && errno != EEXIST) return;  // polling only
  exit_read_fd_ = open(notify_path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (exit_read_fd_ >= 0) {
    exit_write_fd_ = open(notify_path_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  }
}

PosixLauncher::~PosixLauncher() {
  for (int fd : {exit_read_fd_, exit_write_fd_}) {
    if (fd >= 0) close(fd);
  }
}

void PosixLauncher::DrainExitFd() {
  char buf[256];
  while (exit_read_fd_ >= 0 && read(exit_read_fd_, buf, sizeof(buf)) > 0) {
  }
  ReapMonitors();
}

void PosixLauncher::ReapMonitors() {
  std::erase_if(unreaped_, [this](pid_t pid) {
    if (!Reaped(pid)) return false;
    ForgetMonitor(pid);
    return true;
  });
  RetireIdleMonitors();
}

void PosixLauncher::ReapMonitor(pid_t pid) {
  auto it = std::find(unreaped_.begin(), unreaped_.end(), pid);
  if (it != unreaped_.end() && Reaped(pid)) {
    ForgetMonitor(pid);
    unreaped_.erase(it);
  }
}

void PosixLauncher::ForgetMonitor(pid_t pid) {
  std::erase_if(monitors_, [pid](const MonitorLink& m) { return m.pid == pid; });
}

std::string PosixLauncher::RunDir(const RunKey& key) const {
  return runs_dir_ + "/" + key.DirName();
}

std::string PosixLauncher::CgroupName(const RunKey& key) const {
  std::string node = node_name_;
  for (char& c : node) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  }
  // Two agents on one machine may share a node name (test clusters, a re-registered node):
  // their state directories tell them apart. FNV-1a, so the name survives a rebuild.
  uint32_t h = 2166136261u;
  for (char c : runs_dir_) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  char hex[9];
  snprintf(hex, sizeof(hex), "%08x", h);
  return node + "." + hex + "/" + key.DirName();
}

std::string PosixLauncher::ContainerId(const RunKey& key) const {
  std::string name = CgroupName(key);  // node.hash/run.replica: unique on the machine
  for (char& c : name) {
    if (c == '/') c = '.';
  }
  return "corral." + name;
}

// One replica's launch between its durable record and its monitor's report: every string
// and array the forked child reads lives here, at a fixed address (after fork the child may
// not allocate), and so do the fds it inherits.

Status PosixLauncher::FailLaunch(const Prepared& p, Status st) {
  std::string msg = "corral: " + st.message() + "\n";
  int fd = open((p.logs + "/stderr").c_str(),
                O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd >= 0) {
    WriteAll(fd, msg.data(), msg.size());
    close(fd);
  }
  (void)AppendRunRecord(p.dir, ExitLine(kExitCannotExec, NowMs(), 0), /*durable=*/true);
  return st;
}

Result<std::map<std::string, std::string>> PosixLauncher::ShareEnv(const Prepared& p) {
  const RunOrder& order = p.run.order;
  std::optional<GpuShareOrder> share = ShareOfOrder(order);
  if (!share) return std::map<std::string, std::string>{};
  // An MPS share: the owner's MPS daemon for its GPU (mps.h).
  std::optional<MpsClient> mps;
  if (share->isolation == GpuIsolation::kMps && mps_ != nullptr && !order.gpus.empty()) {
    Result<MpsClient> acquired =
        mps_->Acquire(RunDir(p.run.key()), run_as_.as_owner ? p.who.uid : geteuid(),
                      run_as_.as_owner ? p.who.gid : getegid(), order.gpus[0]);
    if (!acquired.ok()) return acquired.status();
    mps = std::move(*acquired);
  }
  return GpuShareEnv(*share, gpushare_lib_, p.dir + "/gpushare", mps ? &*mps : nullptr);
}

Result<std::unique_ptr<PosixLauncher::Prepared>> PosixLauncher::Prepare(const RunOrder& wanted) {
  Result<std::unique_ptr<Prepared>> recorded = RecordStart(wanted);
  if (!recorded.ok()) return recorded.status();
  Prepared& p = **recorded;
  const RunOrder& order = p.run.order;
  if (order.command.empty())
    return FailLaunch(p, InvalidArgument("run " + order.run_id + " has an empty command"));
  Result<std::map<std::string, std::string>> defaults = TakeOwnerIdentity(p);
  if (!defaults.ok()) return FailLaunch(p, defaults.status());
  if (Status st = RenderTaskEnvironments(p, *defaults); !st.ok()) return FailLaunch(p, st);
  if (!order.container.empty()) {
    if (Status st = PlanContainer(p); !st.ok()) return FailLaunch(p, st);
  }
  FillChildPlan(p);
  if (Status st = OpenLogsCgroupAndPipes(p); !st.ok()) return FailLaunch(p, st);
  return recorded;
}

Result<std::unique_ptr<PosixLauncher::Prepared>> PosixLauncher::RecordStart(
    const RunOrder& wanted) {
  CORRAL_RETURN_IF_ERROR(ValidateRunId(wanted.run_id));
  if (wanted.replica < 0)
    return InvalidArgument("replica " + std::to_string(wanted.replica) + " < 0");
  auto prepared = std::make_unique<Prepared>();
  Prepared& p = *prepared;
  p.run.order = wanted;
  // The tasks' environments follow from the order's layout: derived for a run being started
  // only, not for every order of every answer (the codec checked the layout). Refused, not
  // crashed: the head is told why.
  if (Status st = ExpandOrderEnv(&p.run.order); !st.ok()) return FailedPrecondition(st.message());
  p.run.started_at = NowMs();
  p.dir = RunDir(p.run.key());
  p.logs = p.dir + "/logs";
  // (runs/ is remade here if it was removed since the constructor made it.)
  if (Status made = MakeDirInSpreadParent(p.dir, 0711); !made.ok()) {
    if (made.code() == ErrorCode::kAlreadyExists) {
      return Status(ErrorCode::kAlreadyExists,
                    "run " + p.dir + " was already started on this node");
    }
    return made;
  }
  // The durable "started" record comes before the fork: a crash from here on leaves a run
  // that is reported as lost, never one that is started again. (runs/ itself is fsynced once
  // for a sync's runs, in LaunchAll, before any of them is forked.)
  CORRAL_RETURN_IF_ERROR(AppendRunRecord(p.dir, StartLine(p.run), /*durable=*/true));
  FsyncPath(p.dir);
  (void)chmod(p.dir.c_str(), 0711);  // whatever the umask
  if (mkdir(p.logs.c_str(), 0700) != 0 && errno != EEXIST) {
    return Internal(ErrnoText("mkdir " + p.logs, errno));
  }
  return prepared;
}

Result<std::map<std::string, std::string>> PosixLauncher::TakeOwnerIdentity(Prepared& p) {
  std::map<std::string, std::string> defaults = env_defaults_;
  if (run_as_.as_owner) {
    auto id = IdentityForJob(p.run.order.user, node_name_, run_as_.allow_root);
    if (!id.ok()) return id.status();
    p.who = std::move(id.value());
    defaults["HOME"] = p.who.home;
    defaults["USER"] = p.who.name;
    defaults["LOGNAME"] = p.who.name;
  }
  if (p.run.order.notebook) {
    const bool as_root = run_as_.as_owner ? p.who.uid == 0 : geteuid() == 0;
    CORRAL_RETURN_IF_ERROR(PrepareNotebook(&p.run.order, p.dir, as_root));
  }
  return defaults;
}

Status PosixLauncher::RenderTaskEnvironments(Prepared& p,
                                             const std::map<std::string, std::string>& defaults) {
  const RunOrder& order = p.run.order;
  Result<std::map<std::string, std::string>> share_env = ShareEnv(p);
  if (!share_env.ok()) return share_env.status();
  // Prepare everything the children use: after fork they may not allocate.
  const int32_t tasks = TaskCount(order);
  for (int32_t t = 0; t < tasks; ++t) {
    p.envs.push_back(JobEnvironment(order, node_name_, t, defaults, *share_env));
    p.out_paths.push_back(p.logs + "/" + LogFileName("stdout", t));
    p.err_paths.push_back(p.logs + "/" + LogFileName("stderr", t));
  }
  if (HasEntry(p.envs[0], "CORRAL_GPU_SHARE_ENFORCED=0")) {
    // Runs all the same (the job asked for a share, not for enforcement), but said: in the
    // agent's log, and as a note (kShareNoteFile) that the head makes an event of the job's.
    const std::string note = std::string(kShareNotEnforced) + ": node " + node_name_ +
                             " has no GPU share shim (libcorral_gpushare.so beside corral), so "
                             "the share's GPU memory limit is not enforced";
    spdlog::warn("run {} replica {}: {}", order.run_id, order.replica, note);
    (void)WriteTextFile(p.dir + "/" + kShareNoteFile, note);
  }
  if (order.container.empty()) {
    // Said now, so that the reason reaches the head (`corral show`), not only the job's stderr.
    std::string missing = MissingExecutable(order.command[0], PathOf(p.envs[0]),
                                            order.workdir.empty() ? p.logs : order.workdir);
    if (!missing.empty()) return FailedPrecondition(missing);
  }
  if (!gpu_names_.empty()) NameGpusByUuid(p.envs);
  return Status::Ok();
}

// MIG devices (and, beside them, whole GPUs) are named by UUID: CUDA's indices do not reach a
// MIG device.
void PosixLauncher::NameGpusByUuid(std::vector<std::vector<std::string>>& envs) const {
  for (auto& env : envs) {
    for (std::string& kv : env) {
      if (kv.rfind("CUDA_VISIBLE_DEVICES=", 0) != 0) continue;
      std::istringstream in(kv.substr(sizeof("CUDA_VISIBLE_DEVICES=") - 1));
      std::string named;
      for (std::string g; std::getline(in, g, ',');) {
        auto it = gpu_names_.find(std::atoi(g.c_str()));
        named += (named.empty() ? "" : ",") + (it != gpu_names_.end() ? it->second : g);
      }
      kv = "CUDA_VISIBLE_DEVICES=" + named;
    }
  }
}

// The tasks run `corral container-task` as root (crun makes them the owner); the job's own
// environments go into the container's plan.
Status PosixLauncher::PlanContainer(Prepared& p) {
  const RunOrder& order = p.run.order;
  if (!containers_.enabled() || containers_.init_exe.empty() || geteuid() != 0) {
    return FailedPrecondition("node " + node_name_ +
                              " cannot run containers (it needs an agent running as root with "
                              "corral-monitor beside corral); image " +
                              order.container.image);
  }
  ContainerLaunch l;
  l.run_dir = p.dir;
  l.container_id = ContainerId(p.run.key());
  l.node = node_name_;
  l.order = &order;
  l.who = run_as_.as_owner ? &p.who : nullptr;
  l.host_workdir = order.workdir;
  if (auto ckpt = order.env.find("CORRAL_CHECKPOINT_DIR"); ckpt != order.env.end()) {
    l.checkpoint_dir = ckpt->second;
    // Made now (as below for any job), so that it can be mounted.
    CORRAL_RETURN_IF_ERROR(MakeCheckpointDir(p));
  }
  l.task_envs = p.envs;
  if (Status st = WriteContainerPlan(containers_, l); !st.ok()) {
    return FailedPrecondition(st.message());
  }
  for (size_t t = 0; t < p.envs.size(); ++t) {
    p.envs[t] = {"CORRAL_CONTAINER_TASK=" + std::to_string(t),
                 "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"};
  }
  p.container_args = {"corral", "container-task", p.dir};
  return Status::Ok();
}

// The job's checkpoint directory (CORRAL_CHECKPOINT_DIR), made and handed to its owner.
Status PosixLauncher::MakeCheckpointDir(const Prepared& p) const {
  auto ckpt = p.run.order.env.find("CORRAL_CHECKPOINT_DIR");
  if (ckpt == p.run.order.env.end() || ckpt->second.empty()) return Status::Ok();
  uid_t owner = run_as_.as_owner ? p.who.uid : geteuid();
  gid_t group = run_as_.as_owner ? p.who.gid : getegid();
  Status made = MakeOwnedDir(ckpt->second, run_as_.as_owner, owner, group);
  if (!made.ok()) {
    return FailedPrecondition("cannot make the checkpoint directory: " + made.message());
  }
  return Status::Ok();
}

// The plan the forked monitor follows: pointers into p's strings, made before the fork because
// the child may not allocate.
void PosixLauncher::FillChildPlan(Prepared& p) const {
  const RunOrder& order = p.run.order;
  const bool in_container = !order.container.empty();
  const auto tasks = static_cast<int32_t>(p.envs.size());
  for (int32_t t = 0; t < tasks; ++t) {
    p.envps.push_back(CStrings(p.envs[t]));
    p.task_plans.push_back({p.envps[t].data(), p.out_paths[t].c_str(), p.err_paths[t].c_str()});
  }
  p.exe = in_container ? containers_.helper_exe
                       : ResolveExecutable(order.command[0], PathOf(p.envs[0]));
  p.workdir = in_container ? p.dir : order.workdir.empty() ? p.logs : order.workdir;
  p.record_path = p.dir + "/" + kRunRecordName;
  p.exec_error = "corral: cannot execute " + order.command[0] + ": ";
  p.chdir_error = "corral: cannot change to workdir " + p.workdir + ": ";
  p.argv = CStrings(in_container ? p.container_args : order.command);
  p.task_pids.assign(static_cast<size_t>(tasks), 0);
  p.report.assign(24 * (static_cast<size_t>(tasks) + 3), '\0');
  long open_max = sysconf(_SC_OPEN_MAX);
  ChildPlan& plan = p.plan;
  plan.path = p.exe.c_str();
  plan.argv = p.argv.data();
  plan.tasks = p.task_plans.data();
  plan.task_count = tasks;
  plan.task_pids = p.task_pids.data();
  plan.report = p.report.data();
  plan.report_cap = p.report.size();
  plan.stop_signal = order.stop_signal > 0 ? order.stop_signal : SIGTERM;
  plan.grace_s = static_cast<int>((std::max<int64_t>(order.grace_ms, 0) + 999) / 1000);
  plan.workdir = p.workdir.c_str();
  plan.switch_user = run_as_.as_owner && !in_container;
  plan.uid = p.who.uid;
  plan.gid = p.who.gid;
  plan.groups = p.who.groups.data();
  plan.group_count = p.who.groups.size();
  plan.record_path = p.record_path.c_str();
  plan.notify_path = notify_path_.c_str();
  plan.exec_error = p.exec_error.c_str();
  plan.chdir_error = p.chdir_error.c_str();
  plan.max_fd = static_cast<int>(open_max > 0 && open_max < 65536 ? open_max : 65536);
  if ((order.interactive || order.elastic) && session_lease_ms_ > 0) {
    plan.lease_path = session_lease_path_.c_str();
    plan.lease_ms = session_lease_ms_;
  }
}

// Every log file is created now, so that a failure to is reported here, not by a task; then
// the logs (and a new checkpoint directory) are handed to the job's user, the replica's cgroup
// is made, and the fds the fork needs are opened.
Status PosixLauncher::OpenLogsCgroupAndPipes(Prepared& p) {
  int saved_errno = CreateLogFiles(p);
  if (saved_errno == 0 && !cgroups_.none()) {
    auto made = cgroups_.Create(CgroupName(p.run.key()), LimitsOfReplica(p.run.order));
    if (!made.ok()) {
      return FailedPrecondition("cannot make the run's cgroup: " + made.status().message());
    }
    p.cgroup_procs = std::move(made.value());
  }
  for (const std::string& s : p.cgroup_procs) p.cgroup_cstrs.push_back(s.c_str());
  p.plan.cgroup_procs = p.cgroup_cstrs.data();
  p.plan.cgroup_count = static_cast<int>(p.cgroup_cstrs.size());
  // A container's was made with its plan, to be mounted.
  if (saved_errno == 0 && p.run.order.container.empty()) {
    CORRAL_RETURN_IF_ERROR(MakeCheckpointDir(p));
  }
  p.null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (saved_errno == 0 && (p.null_fd < 0 || pipe2(p.pipe_fds, O_CLOEXEC) != 0)) {
    saved_errno = errno;
  }
  if (saved_errno != 0) {
    p.CloseFds();
    return Internal(ErrnoText("cannot open the log files or pipe in " + p.dir, saved_errno));
  }
  return Status::Ok();
}

// Creates each task's stdout and stderr and hands them and logs/ to the job's owner; the errno
// of the first failure, 0 when none failed.
int PosixLauncher::CreateLogFiles(const Prepared& p) const {
  for (size_t t = 0; t < p.out_paths.size(); ++t) {
    for (const std::string& path : {p.out_paths[t], p.err_paths[t]}) {
      int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
      int failed = fd < 0 ? errno : 0;
      if (fd >= 0 && run_as_.as_owner && fchown(fd, p.who.uid, p.who.gid) != 0) failed = errno;
      if (fd >= 0) close(fd);
      if (failed != 0) return failed;
    }
  }
  if (run_as_.as_owner && chown(p.logs.c_str(), p.who.uid, p.who.gid) != 0) return errno;
  return 0;
}

// The replica's cgroup limits. On real GPUs the others' device nodes are closed to it (a MIG
// device's node is its parent's, which its sibling devices share: a node one of its own GPUs
// uses stays open).
CgroupLimits PosixLauncher::LimitsOfReplica(const RunOrder& order) const {
  CgroupLimits limits{order.cpu_milli, order.memory_mb * 1024 * 1024, kPidsPerReplica, {}};
  std::set<int32_t> open_minors;
  for (int32_t g : order.gpus) {
    if (auto it = gpu_minors_.find(g); it != gpu_minors_.end()) open_minors.insert(it->second);
  }
  for (const auto& [gpu, minor] : gpu_minors_) {
    if (!open_minors.count(minor) &&
        std::find(limits.denied_nvidia_minors.begin(), limits.denied_nvidia_minors.end(), minor) ==
            limits.denied_nvidia_minors.end()) {
      limits.denied_nvidia_minors.push_back(minor);
    }
  }
  return limits;
}

void PosixLauncher::SetMpsControl(const std::string& control) {
  mps_ = control.empty()
             ? nullptr
             : std::make_unique<MpsDaemons>(control, state_dir_ + "/mps", run_as_.as_owner);
}

RunStatus PosixLauncher::Finish(const LaunchedRun& run, RunStatus st) {
  const std::string group = CgroupName(run.key());
  if (!run.order.container.empty() && st.error.empty()) {
    st.error = ContainerError(RunDir(run.key()));
  }
  if (run.order.notebook && st.error.empty() && !st.vanished) {
    st.error = NotebookEarlyExit(RunDir(run.key()));
  }
  if (!cgroups_.none() && cgroups_.Exists(group)) {
    // The replica is over: whatever it left behind (a daemon that escaped its process group)
    // goes with it, and its group with them. The usage stays in the record.
    st.usage = cgroups_.Usage(group);
    cgroups_.KillAll(group);
    cgroups_.Remove(group);
    (void)AppendRunRecord(RunDir(run.key()), UsageLine(st.usage), /*durable=*/false);
  }
  if (!run.order.container.empty() && containers_.enabled()) {
    RemoveContainer(containers_, RunDir(run.key()), ContainerId(run.key()));
  }
  if (mps_ != nullptr) mps_->Release(RunDir(run.key()));
  return st;
}

RunStatus PosixLauncher::Check(LaunchedRun& run) {
  RunStatus st = CheckStatus(run);
  if (!run.order.container.empty()) st.note = ContainerNote(RunDir(run.key()));
  if (gpushare_lib_.empty() && !run.order.gpus.empty()) {  // only then can a share go unenforced
    std::string share;
    if (ReadFile(RunDir(run.key()) + "/" + kShareNoteFile, &share)) {
      st.note += (st.note.empty() ? "" : "\n") + share;
    }
  }
  if (run.order.notebook && st.running) {
    std::string ready = NotebookNote(RunDir(run.key()), run.order.job_id, node_name_);
    if (!ready.empty()) st.note += (st.note.empty() ? "" : "\n") + ready;
    if (!ready.empty()) {
      if (auto server = ReadNotebook(RunDir(run.key())); server.ok()) {
        st.notebook_busy_changed =
            UpdateNotebookActivity(&run.notebook_activity, *server, run.order.job_id, NowMs(),
                                   kNotebookPollMs, kNotebookPollTimeoutMs);
      }
    }
    st.notebook_active_at = run.notebook_activity.active_at;
    st.notebook_busy = run.notebook_activity.busy;
  }
  return st;
}

RunStatus PosixLauncher::CheckStatus(LaunchedRun& run) {
  const std::string dir = RunDir(run.key());
  RunRecord rec = ReadRunRecord(dir, RecordPart::kStatus);
  if (rec.exited) {
    MonitorFinished(run.key(), rec.status.ended_at);  // it wrote the exit last: free for another
    return Finish(run, rec.status);
  }
  if (run.monitor_pid == 0 && rec.has_pids) AdoptPids(rec.monitor_pid, rec.pgids, &run);
  RunStatus st;
  ReapMonitor(run.monitor_pid);  // one of ours that died unasked is a zombie until reaped
  if (ProcessAlive(run.monitor_pid, run.monitor_start)) return st;
  rec = ReadRunRecord(dir, RecordPart::kStatus);
  if (rec.exited) return Finish(run, rec.status);  // finished since the first look
  // No monitor (killed, or the launch was interrupted): watch the process groups directly.
  for (int32_t pgid : run.pgids) {
    if (GroupAlive(pgid)) return st;
  }
  // No pids yet: a monitor forked just before the agent was killed may not have written them
  // (slow under load). Only once it has had the launch's own 10 s is the run given up.
  if (run.monitor_pid == 0 && run.pgids.empty() && NowMs() - run.started_at < kMonitorStartMs) {
    return st;
  }
  st = {false, kExitLost, NowMs(), -1, {}};
  st.vanished = true;
  (void)AppendRunRecord(dir, "vanished\n" + ExitLine(st.exit_code, st.ended_at, -1),
                        /*durable=*/true);
  return Finish(run, st);
}

void PosixLauncher::Signal(const LaunchedRun& run, int signal) {
  if (ReadRunRecord(RunDir(run.key()), RecordPart::kStatus).exited) return;
  for (int32_t pgid : run.pgids) {
    if (pgid > 0) (void)kill(-pgid, signal);
  }
  if (signal == SIGKILL && !cgroups_.none()) cgroups_.KillAll(CgroupName(run.key()));
}

int32_t PosixLauncher::SignalWorkers(const LaunchedRun& run, int signal, const std::string& env) {
  if (ReadRunRecord(RunDir(run.key()), RecordPart::kStatus).exited) return 0;
  int32_t sent = 0;
  for (int32_t pgid : run.pgids) {
    if (pgid <= 0) continue;
    for (pid_t pid : ProcessGroupMembers(pgid)) {
      if (ProcessSetsEnv(pid, env) && kill(pid, signal) == 0) ++sent;
    }
  }
  return sent;
}

void PosixLauncher::Release(const RunKey& key) {
  (void)AppendRunRecord(RunDir(key), "released\n", /*durable=*/false);
}

std::vector<RecoveredRun> PosixLauncher::Recover() {
  std::vector<RecoveredRun> out;
  DIR* d = opendir(runs_dir_.c_str());
  if (d == nullptr) return out;
  while (struct dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == ".." || name.find(".tmp") != std::string::npos) continue;
    const std::string dir = runs_dir_ + "/" + name;
    RecoveredRun r;
    RunRecord rec = ReadRunRecord(dir);
    if (rec.started) {
      r.run = std::move(rec.run);  // its pids are found by Check, which checks they are its
    } else {
      // Crashed between mkdir and the record: never forked, but counts as started.
      auto dot = name.rfind('.');
      if (dot == std::string::npos) continue;
      r.run.order.run_id = name.substr(0, dot);
      r.run.order.replica = std::atoi(name.c_str() + dot + 1);
    }
    r.released = rec.released;
    out.push_back(std::move(r));
  }
  closedir(d);
  return out;
}

}  // namespace corral::agent
