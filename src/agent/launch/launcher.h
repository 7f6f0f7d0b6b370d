// Launching job processes and finding them again after an agent restart (DESIGN §7).
//
// Layout of the state directory, one directory per replica of a run:
//   STATE/runs/<run_id>.<replica>/     the agent's (0711: tasks may only pass through);
//                                      runs/ carries ext4's TOPDIR flag (SpreadSubdirectories)
//     record     what the agent knows of the run, a line per fact (run_record.h): the order
//                and start time, written (and fsynced) BEFORE the fork, so a directory's
//                existence means "started once": a run id is never started twice; the
//                monitor's pids; the exit "<exit_code> <ended_at_ms> <failed_task>" once every
//                task has ended; the usage; "released" once the head has acknowledged the
//                exit (the run is then only remembered as started)
//     logs/      the job's (owned by the user its tasks run as, 0700), its default workdir:
//       stdout, stderr   task 0's output; stdout.T, stderr.T task T's
//
// The job's files live apart from the agent's: a task could otherwise rewrite the record or
// plant a symlink where the agent (root) writes. Tasks switch user before opening their logs.
//
// PosixLauncher forks, per replica, a small monitor process in a session of its own (setsid:
// no signal to the agent's process group reaches it; it outlives a kill -9 of the agent and
// is re-parented). The agent reaps the monitors it forked; those it re-adopts after a restart
// are no longer its children. One fork, not a double fork: forks are most of a launch's cost.
// For the same reason an exec'd monitor whose replica has ended takes the next one the agent
// hands it within kMonitorReuseMs (monitor.h), over a control socket the agent alone holds: a
// short job then costs one process start, not two. An agent that exits closes those sockets,
// and each monitor exits once its replica is over.
// The monitor
// forks the replica's tasks, each in a process group of its own (pgid = task pid), waits for
// them, kills what is left of a task's group when its main process ends, stops the other
// tasks when one fails, and records the exit (monitor.h). Between
// fork and exec only async-signal-safe calls are made, so the agent may be multithreaded.
// The monitor is a child subreaper: the job's orphaned descendants are reaped, not left as
// zombies under a container init that does not reap.
//
// Exit codes: 0..255 a normal exit, -N killed by signal N, kExitLost when the job vanished
// without a recorded status (its monitor was killed, or the launch was interrupted).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/containers/container.h"
#include "agent/gpus/gpu_share_env.h"
#include "agent/gpus/mps.h"
#include "agent/launch/cgroup.h"
#include "agent/node/owned_fd.h"
#include "agent/node/run_as.h"
#include "agent/sessions/notebook_activity.h"
#include "core/agent_protocol.h"
#include "core/status.h"
#include "core/time.h"

namespace corral::agent {

constexpr int32_t kExitLost = -9;           // reported as if SIGKILLed
constexpr int64_t kMonitorStartMs = 10000;  // how long a new monitor may take to report its pids
constexpr int32_t kExitCannotExec = 127;    // command not found, workdir missing, fork failed
constexpr int64_t kPidsPerReplica = 32768;  // a fork bomb's ceiling, far above any real job
constexpr size_t kLaunchParallelism = 8;    // launches LaunchAll prepares at once

struct RunKey {
  std::string run_id;
  int32_t replica = 0;
  auto operator<=>(const RunKey&) const = default;
  std::string DirName() const { return run_id + "." + std::to_string(replica); }
};

// A launched replica: what the agent needs to watch and signal it. Persisted in its record.
struct LaunchedRun {
  RunOrder order;
  TimeMs started_at = 0;
  int32_t monitor_pid = 0;
  uint64_t monitor_start = 0;  // /proc/<pid>/stat starttime: guards against pid reuse
  int32_t pgid = 0;            // = task 0's pid
  std::vector<int32_t> pgids;  // every task's process group, task order (pgids[0] == pgid)
  // A notebook's: when its kernels and terminals were last used, and last asked.
  NotebookActivity notebook_activity;
  RunKey key() const { return {order.run_id, order.replica}; }
};

struct RunStatus {
  bool running = true;
  int32_t exit_code = 0;
  TimeMs ended_at = 0;
  int32_t failed_task = -1;  // the first task that failed (its exit code is exit_code)
  CgroupUsage usage;         // exited, where runs have cgroups
  // It ended without a recorded status (kExitLost): its launch was interrupted or its monitor
  // killed, so nobody knows how the job fared. A loss, like a lost node, not a failure.
  bool vanished = false;
  std::string error;  // exited: why it could not run (a container's image or mounts), or ""
  std::string note;   // how its start goes (ContainerNote), or ""
  // A notebook's last kernel or terminal activity on this node's clock (notebook_activity.h);
  // 0: none seen or not a notebook.
  TimeMs notebook_active_at = 0;
  bool notebook_busy = false;          // a kernel runs a cell
  bool notebook_busy_changed = false;  // since the last Check: worth a sync now
};

struct RecoveredRun {
  LaunchedRun run;
  bool released = false;
};

// Starts, watches and signals job processes; owns the runs/ part of the state directory.
// Not thread-safe: the Supervisor serialises calls.
class Launcher {
 public:
  virtual ~Launcher() = default;
  // Derives the tasks' environments from the order's layout (ExpandOrderEnv), records the run
  // as started, then launches it. Fails with kAlreadyExists if it was ever started. On other
  // failures after the record is written, the run is recorded as exited with kExitCannotExec and
  // the error is returned (so it is still reported, never retried).
  virtual Result<LaunchedRun> Launch(const RunOrder& order) = 0;
  // Launch for each order (a sync's new runs), as if one after the other; an implementation
  // may overlap their waits.
  virtual std::vector<Result<LaunchedRun>> LaunchAll(const std::vector<RunOrder>& orders) {
    std::vector<Result<LaunchedRun>> out;
    for (const RunOrder& o : orders) out.push_back(Launch(o));
    return out;
  }
  // Fills in the pids if the launch could not learn them in time.
  virtual RunStatus Check(LaunchedRun& run) = 0;
  // Sends `signal` to the run's whole process group. No-op once the run has exited.
  virtual void Signal(const LaunchedRun& run, int signal) = 0;
  // Sends `signal` to those of the run's processes whose environment sets `env` and returns
  // how many: torchrun sets TORCHELASTIC_RUN_ID for the workers it starts alone, so its workers
  // get it and torchrun, which watches them, does not. No-op once the run has exited.
  virtual int32_t SignalWorkers(const LaunchedRun& run, int signal, const std::string& env) = 0;
  // The head has acknowledged the end of the run: remember it only as started.
  virtual void Release(const RunKey& key) = 0;
  // The node's GPUs are real devices: GPU index -> /dev/nvidia minor. From then on a run may
  // open only its own GPUs' devices (where the cgroups allow it). Default: ignored.
  virtual void SetGpuDevices(const std::map<int32_t, int32_t>& minors) { (void)minors; }
  // How CUDA_VISIBLE_DEVICES names GPUs (GpuProbe::VisibleDeviceNames): a run's indices are
  // replaced by these names where given (MIG devices by UUID).
  virtual void SetGpuNames(const std::map<int32_t, std::string>& names) { (void)names; }
  // The directory of a replica's run (its record, logs, container), "" where runs have none.
  virtual std::string RunDirectory(const RunKey& key) const {
    (void)key;
    return {};
  }
  // A running replica's cgroup use now (zeros where runs have no cgroups).
  virtual CgroupUsage LiveUsage(const RunKey& key) const {
    (void)key;
    return {};
  }
  // Every run ever started here, from the state directory.
  virtual std::vector<RecoveredRun> Recover() = 0;
  virtual Result<std::string> ReadLog(const RunKey& key, int32_t task, const std::string& stream,
                                      int64_t offset, int64_t max_bytes) = 0;
  // A descriptor that becomes readable when a run has exited (-1: none; poll instead), and
  // a call that empties it.
  virtual int ExitFd() const { return -1; }
  virtual void DrainExitFd() {}
};

class PosixLauncher final : public Launcher {
 public:
  // `node_name` is put in CORRAL_NODE when the order's env lacks it; `env_defaults` in every
  // task's environment where the order lacks them (the node's own settings).
  // REQUIRES: state_dir exists or can be created.
  // `run_as`: whose identity tasks take (see run_as.h); `cgroups`: where each replica gets a
  // group of its own, capped by the order's CPUs and memory and kPidsPerReplica processes.
  // `monitor_exe`: the corral-monitor executable (MonitorExecutableBeside); empty: each
  // monitor is a fork of this process. `gpushare_lib`: the share shim (GpuShareLibraryBeside)
  // preloaded into replicas holding a share of a GPU with isolation "memory"; empty: none
  // (such replicas then run with CORRAL_GPU_SHARE_ENFORCED=0).
  PosixLauncher(std::string state_dir, std::string node_name,
                std::map<std::string, std::string> env_defaults = {}, RunAsPolicy run_as = {},
                Cgroups cgroups = Cgroups::None(), std::string monitor_exe = {},
                std::string gpushare_lib = {});

  Result<LaunchedRun> Launch(const RunOrder& order) override;
  // Writes the durable records and makes the cgroups of up to kLaunchParallelism runs at
  // once (their fsyncs overlap), forks the monitors one by one, then waits for all of their
  // replies together.
  std::vector<Result<LaunchedRun>> LaunchAll(const std::vector<RunOrder>& orders) override;
  RunStatus Check(LaunchedRun& run) override;
  void Signal(const LaunchedRun& run, int signal) override;
  int32_t SignalWorkers(const LaunchedRun& run, int signal, const std::string& env) override;
  void Release(const RunKey& key) override;
  void SetGpuDevices(const std::map<int32_t, int32_t>& minors) override { gpu_minors_ = minors; }
  void SetGpuNames(const std::map<int32_t, std::string>& names) override { gpu_names_ = names; }
  // How replicas with an image run here (container.h); without it they are refused.
  void SetContainerConfig(ContainerConfig config) { containers_ = std::move(config); }
  // MPS shares get a daemon per owner per GPU run by `control` (nvidia-cuda-mps-control;
  // mps.h), in STATE/mps; without it ("") they get their limits only.
  void SetMpsControl(const std::string& control);
  // Interactive sessions' monitors end them once `path` (agent_lease.h) has gone unrenewed for
  // `lease_ms`; without it (0) sessions outlive the agent, as batch jobs always do.
  void SetSessionLease(std::string path, int64_t lease_ms) {
    session_lease_path_ = std::move(path);
    session_lease_ms_ = lease_ms;
  }
  std::vector<RecoveredRun> Recover() override;
  Result<std::string> ReadLog(const RunKey& key, int32_t task, const std::string& stream,
                              int64_t offset, int64_t max_bytes) override;
  int ExitFd() const override { return exit_read_fd_; }
  void DrainExitFd() override;
  ~PosixLauncher() override;
  PosixLauncher(const PosixLauncher&) = delete;
  PosixLauncher& operator=(const PosixLauncher&) = delete;

  std::string RunDir(const RunKey& key) const;
  std::string RunDirectory(const RunKey& key) const override { return RunDir(key); }
  CgroupUsage LiveUsage(const RunKey& key) const override {
    return cgroups_.none() ? CgroupUsage{} : cgroups_.Usage(CgroupName(key));
  }
  std::string CgroupName(const RunKey& key) const;
  std::string ContainerId(const RunKey& key) const;

 private:
  struct Prepared;
  // The durable "started" record, the log files, the cgroup and everything the fork needs.
  // Thread-safe (several run at once in LaunchAll).
  Result<std::unique_ptr<Prepared>> Prepare(const RunOrder& order);
  // Prepare's steps, in order. The run's directory and its durable "started" record: from here
  // on a failure is recorded in the run (FailLaunch).
  Result<std::unique_ptr<Prepared>> RecordStart(const RunOrder& wanted);
  // The job owner's identity (where tasks run as their owner) and the environment's defaults
  // it gives (HOME, USER); a notebook's token and port.
  Result<std::map<std::string, std::string>> TakeOwnerIdentity(Prepared& p);
  Status RenderTaskEnvironments(Prepared& p, const std::map<std::string, std::string>& defaults);
  void NameGpusByUuid(std::vector<std::vector<std::string>>& envs) const;
  Status PlanContainer(Prepared& p);
  Status MakeCheckpointDir(const Prepared& p) const;
  void FillChildPlan(Prepared& p) const;
  Status OpenLogsCgroupAndPipes(Prepared& p);
  int CreateLogFiles(const Prepared& p) const;
  CgroupLimits LimitsOfReplica(const RunOrder& order) const;
  // What the tasks of p's replica get for its share of a GPU, if it holds one (GpuShareEnv);
  // an MPS share's owner's MPS daemon is started or joined first.
  Result<std::map<std::string, std::string>> ShareEnv(const Prepared& p);
  Status ForkMonitor(Prepared& p);
  // An exec'd monitor whose replica ended less than kMonitorReuseMs ago takes p's plan (one
  // process start a launch instead of two); false where none is idle or none took it.
  bool HandToIdleMonitor(Prepared& p);
  void RetireIdleMonitors();  // closes the links of those idle too long: they exit
  void MonitorFinished(const RunKey& key, TimeMs ended_at);
  void ForgetMonitor(pid_t pid);  // a reaped monitor's link
  void AwaitMonitors(const std::vector<Prepared*>& launched);
  void ReapMonitors();          // without waiting: those that have exited
  void ReapMonitor(pid_t pid);  // the same for one of them (a run's, in Check)
  // Records a launch that failed after its record was written: the reason in its stderr, an
  // exit of kExitCannotExec in its record. Returns `st`.
  Status FailLaunch(const Prepared& p, Status st);
  // An exited replica's status with its usage; removes its cgroup (killing what is left).
  RunStatus Finish(const LaunchedRun& run, RunStatus st);
  RunStatus CheckStatus(LaunchedRun& run);

  std::string monitor_exe_;
  std::string gpushare_lib_;
  std::string state_dir_;
  std::unique_ptr<MpsDaemons> mps_;
  std::string runs_dir_;
  std::string node_name_;
  std::map<std::string, std::string> env_defaults_;
  RunAsPolicy run_as_;
  Cgroups cgroups_;
  // STATE/exit-notify, a FIFO the monitors write a byte to after each exit. The launcher holds
  // a write end too, so the read end never reports end-of-file when no monitor has it open.
  std::string notify_path_;
  std::map<int32_t, int32_t> gpu_minors_;     // GPU index -> /dev/nvidia minor; empty: simulated
  std::map<int32_t, std::string> gpu_names_;  // GPU index -> CUDA_VISIBLE_DEVICES name
  ContainerConfig containers_;
  std::string session_lease_path_;
  int64_t session_lease_ms_ = 0;
  std::vector<pid_t> unreaped_;  // monitors this launcher forked that have not been reaped
  // The exec'd monitors this launcher may still hand work: their control sockets (a monitor
  // whose socket is closed exits once idle), the replica each runs, and since when it has none
  // (0: it runs `running`).
  struct MonitorLink {
    pid_t pid;
    OwnedFd control;
    RunKey running;
    TimeMs idle_since;
  };
  std::vector<MonitorLink> monitors_;
  int exit_read_fd_ = -1;
  int exit_write_fd_ = -1;
};

// The corral-monitor executable beside `program` (a path, e.g. /proc/self/exe's target), if it
// is there and executable; else empty (monitors are then forks of the agent).
std::string MonitorExecutableBeside(const std::string& program);

// How many tasks an order runs: one per entry of task_envs, or one.
int32_t TaskCount(const RunOrder& order);

// The environment task `task` sees: its env from the order, plus (where the order lacks them)
// CORRAL_JOB_ID, CORRAL_RUN, CORRAL_NODE, CORRAL_REPLICA, PATH and HOME from the agent, and
// CUDA_DEVICE_ORDER=PCI_BUS_ID. CUDA_VISIBLE_DEVICES is the head's choice when it names only
// GPUs of the order (a task's own GPU), else all of the order's GPUs ("" for none).
// A replica holding a share of a GPU gets `share_env` on top (GpuShareEnv, rendered once for
// all its tasks), its LD_PRELOAD first in LD_PRELOAD.
std::vector<std::string> JobEnvironment(const RunOrder& order, const std::string& node_name,
                                        int32_t task = 0,
                                        const std::map<std::string, std::string>& defaults = {},
                                        const std::map<std::string, std::string>& share_env = {});

// A task's log file in its run's logs/ directory: "stdout" for task 0, "stdout.T" for task T.
std::string LogFileName(const std::string& stream, int32_t task);

// Reads up to `max_bytes` (capped at 16 MiB) of a task's `stream` from `offset`; empty at or
// past the end. `stream`: "stdout" or "stderr". For `corral logs -f`, clients poll with the
// offset advanced by the bytes received.
Result<std::string> ReadRunLog(const std::string& state_dir, const std::string& run_id,
                               int32_t replica, int32_t task, const std::string& stream,
                               int64_t offset, int64_t max_bytes);

// A run id becomes a directory name: letters, digits, '.', '-', '_' only; not "." or "..".
Status ValidateRunId(const std::string& run_id);

}  // namespace corral::agent
