// A replica in a container (docs/containers.md): its tasks run in one OCI container of the
// job's image, made by crun from the node's image cache, as the job's owner, with only its GPUs.
//
//   agent (Prepare)      writes RUN/container/plan.json and one crun process file per task
//   monitor --> task t   `corral-container container-task RUN` with CORRAL_CONTAINER_TASK=t
//                        (or `corral container-task`; root, already in the replica's cgroup,
//                        its stdout/stderr the task's logs):
//                          1. the image from the cache (ImageCache::Acquire; the first pulls)
//                          2. under RUN/container/lock, the replica's container if not yet
//                             made: an overlay of the image, a bundle, and `crun run --detach`
//                             of a small init (corral-monitor's pause) in a mount namespace of
//                             its own where /sys/fs/cgroup is cgroup2 (crun refuses hybrid v1/v2
//                             layouts) and crun manages no cgroup (the replica's is inherited)
//                          3. exec `crun exec --process RUN/container/task.T.json ID`: crun
//                             forwards signals to the task and exits with its status
//   agent (Finish)       `crun delete --force ID`, then removes the run's overlay
//
// A failure in 1 or 2 is written to RUN/container/error and the task exits kContainerFailed:
// the agent reports it as the run's error, so the job fails with the reason.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "agent/containers/image_cache.h"
#include "agent/node/run_as.h"
#include "core/agent_protocol.h"
#include "core/status.h"

namespace corral::agent {

constexpr int32_t kContainerFailed = 125;  // as docker run's "the container could not run"

// The node's settings for containers (corral agent flags).
struct ContainerConfig {
  std::string crun = "/usr/bin/crun";
  std::string crun_root;   // crun's state directory (STATE/crun)
  std::string helper_exe;  // corral-container, else the corral executable (container-task)
  std::string init_exe;    // corral-monitor, static: the containers' init (`pause`)
  ImageCacheConfig cache;
  // CDI spec directories, searched in order, and the kind whose devices are this node's GPUs,
  // named by index ("nvidia.com/gpu" from nvidia-ctk; the agent writes "corral.dev/gpu" for
  // simulated GPUs).
  std::vector<std::string> cdi_dirs = {"/etc/cdi", "/var/run/cdi"};
  std::string cdi_kind = "nvidia.com/gpu";
  bool enabled() const { return !helper_exe.empty(); }
};

// Writes a CDI spec for `count` simulated GPUs into `dir`: kind corral.dev/gpu, device "I" is
// /dev/nvidiaI in the container, a character device that works like /dev/null.
Status WriteSimulatedCdiSpec(const std::string& dir, int32_t count);

// What the agent prepares for a container replica before its monitor starts (see above).
struct ContainerLaunch {
  std::string run_dir;
  std::string container_id;
  std::string node;
  const RunOrder* order = nullptr;
  const UnixIdentity* who = nullptr;                // null: the tasks run as root
  std::string host_workdir;                         // the job's workdir on the node
  std::string checkpoint_dir;                       // mounted at the same path ("" for none)
  std::vector<std::vector<std::string>> task_envs;  // KEY=VALUE, one per task
};
Status WriteContainerPlan(const ContainerConfig& config, const ContainerLaunch& launch);

// Whether the CDI specs in `dirs` describe every device of `names` ("kind=name") with a host
// device node that exists: what a container replica's plan would resolve (agent --check).
Status CheckCdiDevices(const std::vector<std::string>& dirs, const std::vector<std::string>& names);

// `corral container-task RUN_DIR TASK`: never returns on success (it becomes crun exec).
int ContainerTaskMain(const std::string& run_dir, int task);

// After the replica has ended: its container deleted, its overlay removed. Best effort.
void RemoveContainer(const ContainerConfig& config, const std::string& run_dir,
                     const std::string& container_id);

// How the start of a container replica goes: "pulling image REF on NODE" while its image is
// pulled, then "image REF pulled on NODE in N ms"; "" if its image was cached.
std::string ContainerNote(const std::string& run_dir);

// The reason a container replica could not run, if its task helper wrote one.
std::string ContainerError(const std::string& run_dir);

}  // namespace corral::agent
