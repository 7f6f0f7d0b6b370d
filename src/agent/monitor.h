// The processes between the agent and a job (see launcher.h): internal to PosixLauncher.
//
//   agent --fork--> detacher (setsid; exits at once) --fork--> monitor --fork--> job (own pgid)
//
// Everything here runs in a child forked from a possibly multithreaded agent, so it makes only
// async-signal-safe calls and never allocates: the parent prepares a ChildPlan beforehand.
#pragma once

#include <cstddef>
#include <cstdint>

namespace corral::agent::internal {

// Everything the children need, prepared before fork.
struct ChildPlan {
  const char* path;  // the executable, resolved against the job's PATH
  char* const* argv;
  char* const* envp;
  const char* workdir;
  const char* pids_path;  // the monitor writes "<monitor_pid> <job_pid>" here (and to the pipe)
  const char* pids_tmp;
  const char* exit_path;  // and "<exit_code> <ended_at_ms>" here when the job ends
  const char* exit_tmp;
  const char* exec_error;   // "corral: cannot execute <cmd>: errno "
  const char* chdir_error;  // "corral: cannot change to workdir <dir>: errno "
  int max_fd;
};

// The first child: `fds` are the job's stdout, stderr, /dev/null and the write end of the pipe
// on which the monitor reports its pid and the job's. Never returns.
[[noreturn]] void DetachMain(const ChildPlan& plan, const int fds[4]);

// write(2) until done or an error; async-signal-safe.
void WriteAll(int fd, const char* data, size_t len);

}  // namespace corral::agent::internal
