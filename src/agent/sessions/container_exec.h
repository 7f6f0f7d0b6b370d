// `corral exec` into a replica that runs in a container (container.h): the command runs in that
// container, not on the host, through `crun exec` on the replica's container, as `kubectl exec`
// and `docker exec` do. It gets what the replica's first task got (its process file,
// RUN/container/task.0.json): the image's root file system and the job's mounts, the
// container's PID, IPC and mount namespaces, the owner's uid, gid and groups, the job's
// environment over the image's, the task's working directory, no capabilities; and its GPU
// devices, which are the container's. crun runs on the host in the replica's cgroups (the
// session joins them, as for any exec), and the command inherits them.
//
// With a terminal, crun makes it in the container (its /dev/pts) and sends its master to the
// session over a console socket; the window size is the process's consoleSize.
#pragma once

#include <string>

#include "agent/sessions/exec_session.h"
#include "core/status.h"

namespace corral::agent {

// The crun command that runs a `corral exec` in a replica's container, and the files it needs
// (its process file, console socket and pid file, in a directory of its own), removed when
// this goes. Move-only; outlive the ExecSession that runs crun().
class ContainerExec {
 public:
  // `run_dir`: the replica's run directory; `spec`: what to run (command, terminal, window,
  // extra environment). kUnavailable while the replica's container is not made yet (its image
  // may be being pulled).
  static Result<ContainerExec> Prepare(const std::string& run_dir, const ExecSpec& spec);
  ContainerExec(ContainerExec&& other) noexcept;
  ContainerExec& operator=(ContainerExec&&) = delete;
  ContainerExec(const ContainerExec&) = delete;
  ~ContainerExec();

  // To start in the replica's context (its cgroups), as root, with no user switch.
  const ExecSpec& crun() const { return crun_; }

 private:
  ContainerExec() = default;
  std::string dir_;
  ExecSpec crun_;
};

}  // namespace corral::agent
