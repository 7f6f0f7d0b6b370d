// What the launcher's files share: the run being prepared and launched (PosixLauncher::
// Prepared) and small helpers. launcher.cc prepares a run and follows it; launcher_spawn.cc
// hands it to a monitor.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "agent/launch/launcher.h"
#include "agent/launch/monitor.h"
#include "agent/node/run_as.h"

namespace corral::agent {
namespace launcher_detail {

inline std::string ErrnoText(const std::string& what, int err) {
  return what + ": " + std::strerror(err);
}

inline void FsyncPath(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
}

inline TimeMs NowMs() { return SystemClock().Now(); }

// starttime (field 22) of /proc/<pid>/stat; 0 if there is no such live process.
uint64_t ProcStartTime(int32_t pid);

// The monitor's report: its pid (with its start time, against the pid's reuse) and its tasks'
// process groups.
inline void AdoptPids(int32_t monitor_pid, const std::vector<int32_t>& pgids, LaunchedRun* run) {
  run->monitor_pid = monitor_pid;
  run->pgid = pgids[0];
  run->pgids = pgids;
  run->monitor_start = ProcStartTime(monitor_pid);
}

}  // namespace launcher_detail

struct PosixLauncher::Prepared {
  LaunchedRun run;
  std::string dir, logs;
  UnixIdentity who;
  std::vector<std::vector<std::string>> envs;
  std::vector<std::vector<char*>> envps;
  std::vector<std::string> out_paths, err_paths;
  std::vector<internal::TaskPlan> task_plans;
  std::string exe, workdir, record_path, exec_error, chdir_error;
  std::vector<char*> argv;
  std::vector<std::string> container_args;  // `corral container-task RUN` (container.h)
  std::vector<int> task_pids;
  std::string report;
  std::vector<std::string> cgroup_procs;
  std::vector<const char*> cgroup_cstrs;
  internal::ChildPlan plan{};
  int null_fd = -1;
  int pipe_fds[2] = {-1, -1};  // the monitor writes its pids to [1]; the agent reads [0]
  pid_t monitor = -1;
  std::string reply;

  Prepared() = default;
  Prepared(const Prepared&) = delete;
  Prepared& operator=(const Prepared&) = delete;
  ~Prepared() { CloseFds(); }
  void CloseFds() {
    for (int* fd : {&null_fd, &pipe_fds[0], &pipe_fds[1]}) {
      if (*fd >= 0) close(*fd);
      *fd = -1;
    }
  }
};

}  // namespace corral::agent
