// The environment every task of a run sees (DESIGN §8), built by this one pure function for
// the head, the agent and the tests alike: Corral's own variables, torch.distributed's,
// TensorFlow's TF_CONFIG, and the SLURM_* variables Lightning, submitit and accelerate read.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/job.h"

namespace corral {

// Everything about a run that its tasks' environments depend on.
struct RunLayout {
  JobId job_id = 0;
  int32_t attempt = 0;
  std::string job_name;
  std::string owner;
  std::map<std::string, std::string> user_env;  // the spec's env; Corral's variables win
  std::vector<ReplicaPlacement> placement;      // node, GPUs and tasks of each replica
  std::vector<std::string> replica_hosts;       // advertised address (no port) per replica
  int32_t master_port = 0;
  bool task_per_gpu = false;  // each task sees only its own GPU
  // How a share of a GPU (placement gpu_milli) is isolated on the node.
  GpuIsolation gpu_isolation = GpuIsolation::kMemory;
  std::string checkpoint_dir;
  std::string workdir;
  JobId array_id = 0;  // array elements
  int32_t array_index = -1;
  bool operator==(const RunLayout&) const = default;
};

RunLayout LayoutOf(const Job& job, const Run& run, std::vector<std::string> replica_hosts,
                   const std::string& checkpoint_dir);

// How many tasks a replica runs: the spec's tasks_per_replica, or one per GPU.
int32_t TasksFor(const JobSpec& spec, const ReplicaPlacement& p);

// REQUIRES: 0 <= replica < placement.size(), 0 <= task < placement[replica].tasks.
std::map<std::string, std::string> TaskEnv(const RunLayout& run, int32_t replica, int32_t task);

}  // namespace corral
