// What a command run inside a running job takes from it (`corral exec`): the job's environment,
// Unix identity, working directory and cgroups, read from the job's own main process in
// /proc, as `kubectl exec` and `nsenter` take them from a container's process. Reading them
// from the process rather than rebuilding them from the order means the command sees exactly
// what the job sees (its CUDA_VISIBLE_DEVICES, its owner's groups as the node resolved them).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "core/status.h"

namespace corral::agent {

// Where a command run inside a running replica goes: its main process (task 0, its process
// group's leader), and for a replica that runs in a container (container_exec.h), its run
// directory ("" for one on the host).
struct ExecTarget {
  pid_t pid = 0;
  std::string container_run_dir;
};

struct ProcessContext {
  std::vector<std::string> env;  // KEY=VALUE, as the process started with it
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary
  std::string cwd;
  // The cgroup.procs files of the process's Corral groups (under a ".../corral/..." path), in
  // every hierarchy it is in; writing a pid there moves that process into the job's groups.
  std::vector<std::string> cgroup_procs;
};

// The context of process `pid`; kNotFound when it is gone, kPermissionDenied when this process
// may not read it. `proc` and `mountinfo` are for tests.
Result<ProcessContext> ContextOfProcess(pid_t pid, const std::string& proc = "/proc",
                                        const std::string& mountinfo = "/proc/self/mountinfo");

// The cgroup.procs files named by a /proc/PID/cgroup text, given the cgroup mounts of a
// /proc/self/mountinfo text: only groups whose path has a "corral" component.
std::vector<std::string> CorralCgroupProcs(const std::string& proc_cgroup,
                                           const std::string& mountinfo);

// `name` looked up on the PATH of `env` (KEY=VALUE entries), as execvp would; a name with a
// '/' is taken as it is. kNotFound when nothing executable is there.
Result<std::string> FindExecutable(const std::string& name, const std::vector<std::string>& env);

}  // namespace corral::agent
