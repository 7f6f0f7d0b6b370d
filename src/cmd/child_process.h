// A daemon started by `corral up`: owns the child's pid; stops it (SIGTERM, then SIGKILL)
// when destroyed. The child gets SIGTERM if `corral up` dies, so nothing is left behind.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace corral::cmd {

class ChildProcess {
 public:
  // Runs `argv` with stdout and stderr appended to `log_path`.
  ChildProcess(const std::vector<std::string>& argv, const std::string& log_path);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  bool Alive();
  void Stop(int grace_ms = 5000);
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

std::string SelfExe();

}  // namespace corral::cmd
