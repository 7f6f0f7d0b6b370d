// The exit code a shell gives a child that waitpid reported on: its exit status, or 128 plus
// the signal that ended it (what Slurm's tools and `$?` report, so scripts can tell a kill).
#pragma once

#include <sys/wait.h>

namespace corral {

inline int ShellExitCode(int wait_status) {
  return WIFSIGNALED(wait_status) ? 128 + WTERMSIG(wait_status) : WEXITSTATUS(wait_status);
}

}  // namespace corral
