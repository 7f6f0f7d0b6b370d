// The processes between the agent and a job (see launcher.h): internal to PosixLauncher.
//
//   agent --fork--> monitor (setsid) --clone(CLONE_VM|CLONE_VFORK), then exec--> task 0..T-1
//                                                               (each its own pgid)
// or, where the small static `corral-monitor` executable sits beside the agent's:
//   agent --posix_spawn (setsid), the plan on fd 5--> corral-monitor --clone...--> task 0..T-1
// The second copies nothing of the agent, a process of ~200 mappings whose fork, copy-on-write
// faults and teardown at the monitor's exit were a fifth of a `true` job's cost.
//
// The replica ends when all its tasks have ended. A task that exits 0 is normal (rank 0 often
// ends last); the first one that fails stops the others (the stop signal, grace, SIGKILL), and
// the replica's exit code is that task's.
//
// Everything here runs in a child forked from a possibly multithreaded agent, so it makes only
// async-signal-safe calls and never allocates: the parent prepares a ChildPlan beforehand.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace corral::agent::internal {

// One task (process) of the replica: its environment and where its output goes.
struct TaskPlan {
  char* const* envp;
  const char* out_path;  // opened O_APPEND by the task itself, before exec
  const char* err_path;
};

// Everything the children need, prepared before fork.
struct ChildPlan {
  const char* path;  // the executable, resolved against the job's PATH
  char* const* argv;
  const TaskPlan* tasks;
  int task_count;
  int* task_pids;  // scratch, task_count entries: the monitor's copy after fork
  char* report;    // scratch, report_cap bytes, for "pids <monitor_pid> <pgid>...\n"
  size_t report_cap;
  int stop_signal;  // sent to the other tasks when one fails, SIGKILL after grace_s
  int grace_s;
  const char* workdir;
  // Each task takes this identity before it opens its logs or executes anything.
  bool switch_user;
  uid_t uid;
  gid_t gid;
  const gid_t* groups;
  size_t group_count;
  const char* const* cgroup_procs;  // each task writes its pid to these before anything else
  int cgroup_count;
  // The run's record (run_record.h): the monitor appends "pids <monitor_pid> <pgid>..." once
  // its tasks are forked, and "exit <code> <ended_at_ms> <failed_task>" when they have ended.
  const char* record_path;
  const char* notify_path;  // a FIFO: one byte written after the exit, waking the agent at once
  // Each followed by the error in words and its number when a task cannot start.
  const char* exec_error;   // "corral: cannot execute <cmd>: "
  const char* chdir_error;  // "corral: cannot change to workdir <dir>: "
  int max_fd;
  // An interactive session's lease (agent_lease.h): the file its agent renews while it runs,
  // and how long the monitor lets it go unrenewed before it ends the replica (every process in
  // its cgroups and its tasks' groups). nullptr and 0: none, as for every batch job, which
  // outlives its agent and is recovered by the next one.
  const char* lease_path;
  int64_t lease_ms;
};

// The agent's child: leaves the agent's session (setsid, so that no signal to the agent's
// process group reaches it) and becomes the monitor. `fds` are /dev/null and the write end of
// the pipe on which the monitor reports its pid and the tasks'. Never returns.
[[noreturn]] void DetachMain(const ChildPlan& plan, const int fds[2]);

// The descriptors an exec'd monitor starts with: /dev/null, the pid report's pipe, the plan,
// and its end of the agent's control socket, on which the next replica's plan may come.
constexpr int kMonitorFdNull = 3, kMonitorFdPipe = 4, kMonitorFdPlan = 5, kMonitorFdControl = 6;

// An exec'd monitor whose replica has ended waits this long for the next one's plan before it
// exits. The agent hands one over only within kMonitorReuseMs of seeing the exit, far inside.
constexpr int64_t kMonitorIdleMs = 10000;
constexpr int64_t kMonitorReuseMs = 2000;

// The plan as bytes, for an exec'd monitor (the scratch buffers are not sent: it makes its own).
std::string EncodePlan(const ChildPlan& plan);

// A decoded plan and the storage its pointers point into.
struct OwnedPlan {
  ChildPlan plan{};
  std::vector<std::string> strings;
  std::vector<std::vector<char*>> arrays;  // argv, each task's envp, cgroup_procs
  std::vector<TaskPlan> tasks;
  std::vector<gid_t> groups;
  std::vector<int> task_pids;
  std::string report;
  OwnedPlan() = default;
  OwnedPlan(const OwnedPlan&) = delete;
  OwnedPlan& operator=(const OwnedPlan&) = delete;
};
bool DecodePlan(const std::string& bytes, OwnedPlan* out);

// An exec'd monitor's work, its descriptors as above: DetachMain's for `first`, then for each
// plan `next` gives (nullptr: none is coming; the monitor exits once its orphans are reaped).
// Starting a process is most of a short job's cost, so one monitor runs replica after replica
// while the agent keeps giving it work: a job's launch is then one process start, not two.
using NextPlan = const ChildPlan* (*)();
[[noreturn]] void ExecedMonitorMain(const ChildPlan& first, NextPlan next);

// The whole of a plan's memfd, from its start (the spawned monitor's kMonitorFdPlan, or one
// received with the next plan).
bool ReadPlanBytes(int fd, std::string* bytes);

// Waits (up to kMonitorIdleMs, reaping orphans meanwhile) for the agent to send the next plan on
// kMonitorFdControl: one byte with the plan's memfd and the next pid report's pipe beside it.
// Puts that pipe on kMonitorFdPipe and the plan in `bytes`. False: none came, or the agent
// closed the socket (it exited, or will not use this monitor again).
bool ReceiveNextPlan(std::string* bytes);

// write(2) until done (true) or an error; async-signal-safe.
bool WriteAll(int fd, const char* data, size_t len);

// A replica's view of its agent's lease (monitor_lease.cc): the lease file's modification time
// as last seen, and when it was last seen to change, on the monitor's own monotonic clock (so
// neither the wall clock nor the agent's need agree with it). Async-signal-safe, no allocation.
struct LeaseWatch {
  int64_t mtime_ns = -1;  // -1: no file seen
  int64_t renewed_at_ms = 0;
};
void StartLeaseWatch(const ChildPlan& plan, LeaseWatch* watch);
// Waits until a child of this process has exited (true: waitid will find it at once) or the
// agent's lease has run out (false). REQUIRES: plan.lease_ms > 0.
bool AwaitChildWithinLease(const ChildPlan& plan, LeaseWatch* watch);
// SIGKILLs every process in the replica's cgroups, until they are empty (a second at most);
// with no cgroups, nothing. The caller kills its tasks' groups.
void KillCgroupProcesses(const ChildPlan& plan);

}  // namespace corral::agent::internal
