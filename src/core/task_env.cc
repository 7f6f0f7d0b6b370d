#include "core/task_env.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/agent_protocol.h"
#include "core/hostlist.h"
#include "gpushare/share_contract.h"

namespace corral {
namespace {

std::string Join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

// Slurm's SLURM_NTASKS_PER_NODE / SLURM_TASKS_PER_NODE form: "2(x3),1".
std::string CountsForm(const std::vector<int32_t>& counts) {
  std::string out;
  for (size_t i = 0; i < counts.size();) {
    size_t j = i;
    while (j + 1 < counts.size() && counts[j + 1] == counts[i]) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(counts[i]);
    if (j > i) out += "(x" + std::to_string(j - i + 1) + ")";
    i = j + 1;
  }
  return out;
}

}  // namespace

int32_t TasksFor(const JobSpec& spec, const ReplicaPlacement& p) {
  if (spec.tasks_per_replica < 0) return std::max<int32_t>(1, static_cast<int32_t>(p.gpus.size()));
  return std::max<int32_t>(1, spec.tasks_per_replica);
}

RunLayout LayoutOf(const Job& job, const Run& run, std::vector<std::string> replica_hosts,
                   const std::string& checkpoint_dir) {
  RunLayout l;
  l.job_id = job.id;
  l.attempt = run.attempt;
  l.job_name = job.spec.name;
  l.owner = job.owner;
  l.user_env = job.spec.env;
  l.placement = run.placement;
  l.replica_hosts = std::move(replica_hosts);
  l.master_port = run.master_port;
  l.task_per_gpu = job.spec.tasks_per_replica < 0;
  l.gpu_isolation = job.spec.per_replica.gpu_isolation;
  l.checkpoint_dir = checkpoint_dir;
  l.workdir = job.spec.workdir;
  l.array_id = job.array_id;
  l.array_index = job.array_index;
  // A service's replica without a fixed port listens on the port the head picked for it on
  // its node (core/service.h): its run's master port.
  if (!job.spec.service.empty() && !l.user_env.count("PORT")) {
    l.user_env["PORT"] = l.user_env["CORRAL_PORT"] = std::to_string(run.master_port);
  }
  return l;
}

namespace {

// Where a task stands in its run: nodes in first-appearance order (two replicas on one node
// are one node to torch and Slurm), the tasks on each, and the task's ranks.
struct TaskRanks {
  std::vector<std::string> nodes;
  std::vector<int32_t> tasks_on_node;
  int32_t world = 0, rank = 0, node_rank = 0, local_rank = 0;
};

TaskRanks RanksOfTask(const RunLayout& run, int32_t replica, int32_t task) {
  TaskRanks t;
  for (int32_t r = 0; r < static_cast<int32_t>(run.placement.size()); ++r) {
    const ReplicaPlacement& p = run.placement[r];
    auto it = std::find(t.nodes.begin(), t.nodes.end(), p.node);
    size_t n = it - t.nodes.begin();
    if (it == t.nodes.end()) {
      t.nodes.push_back(p.node);
      t.tasks_on_node.push_back(0);
    }
    if (r == replica) {
      t.rank = t.world + task;
      t.node_rank = static_cast<int32_t>(n);
      t.local_rank = t.tasks_on_node[n] + task;
    }
    t.tasks_on_node[n] += p.tasks;
    t.world += p.tasks;
  }
  return t;
}

// The task's GPUs, and a share's contract with the node (the agent adds the shim or MPS from
// these).
void SetTaskGpuEnv(const RunLayout& run, const ReplicaPlacement& mine, int32_t task,
                   std::map<std::string, std::string>& env) {
  std::vector<std::string> gpus;
  if (run.task_per_gpu && task < static_cast<int32_t>(mine.gpus.size())) {
    gpus.push_back(std::to_string(mine.gpus[task]));
  } else {
    for (int32_t g : mine.gpus) gpus.push_back(std::to_string(g));
  }
  env["CUDA_VISIBLE_DEVICES"] = Join(gpus, ",");
  if (mine.gpu_milli.empty()) return;
  env[CORRAL_ENV_GPU_SHARE_MILLI] = std::to_string(mine.gpu_milli[0]);
  env[CORRAL_ENV_GPU_ISOLATION] = GpuIsolationName(run.gpu_isolation);
  if (mine.gpu_memory_mb > 0) {
    env[CORRAL_ENV_GPU_MEMORY_LIMIT] =
        std::to_string(mine.gpu_memory_mb) + CORRAL_GPU_MEMORY_LIMIT_UNIT;
    if (run.gpu_isolation == GpuIsolation::kMps) {
      env[CORRAL_ENV_MPS_MEMORY_LIMIT] =
          "0=" + std::to_string(mine.gpu_memory_mb) + CORRAL_MPS_MEMORY_LIMIT_UNIT;
    }
  }
  if (run.gpu_isolation == GpuIsolation::kMps) {
    env[CORRAL_ENV_MPS_THREAD_PERCENTAGE] = std::to_string(std::max(1, mine.gpu_milli[0] / 10));
  }
}

std::string ReplicaHost(const RunLayout& run, int32_t r) {
  return r < static_cast<int32_t>(run.replica_hosts.size()) && !run.replica_hosts[r].empty()
             ? run.replica_hosts[r]
             : std::string("127.0.0.1");
}

// torch.distributed's variables, and TF_CONFIG: one worker per task; task i listens on
// MASTER_PORT + 1 + i of its node.
void SetTaskDistributedEnv(const RunLayout& run, const TaskRanks& t,
                           std::map<std::string, std::string>& env) {
  env["MASTER_ADDR"] = ReplicaHost(run, 0);
  env["MASTER_PORT"] = std::to_string(run.master_port);
  env["WORLD_SIZE"] = std::to_string(t.world);
  env["RANK"] = std::to_string(t.rank);
  env["LOCAL_RANK"] = std::to_string(t.local_rank);
  env["LOCAL_WORLD_SIZE"] = std::to_string(t.tasks_on_node[t.node_rank]);
  env["NODE_RANK"] = std::to_string(t.node_rank);
  env["NNODES"] = std::to_string(t.nodes.size());
  nlohmann::json workers = nlohmann::json::array();
  int32_t i = 0;
  for (int32_t r = 0; r < static_cast<int32_t>(run.placement.size()); ++r) {
    for (int32_t k = 0; k < run.placement[r].tasks; ++k, ++i) {
      workers.push_back(ReplicaHost(run, r) + ":" + std::to_string(run.master_port + 1 + i));
    }
  }
  env["TF_CONFIG"] = nlohmann::json{{"cluster", {{"worker", workers}}},
                                    {"task", {{"type", "worker"}, {"index", t.rank}}}}
                         .dump();
}

// What a Slurm job's tasks read (docs/slurm.md).
void SetTaskSlurmEnv(const RunLayout& run, const ReplicaPlacement& mine, const TaskRanks& t,
                     std::map<std::string, std::string>& env) {
  const std::string id = std::to_string(run.job_id);
  env["SLURM_JOB_ID"] = id;
  env["SLURM_JOBID"] = id;
  env["SLURM_JOB_NAME"] = run.job_name.empty() ? "corral-" + id : run.job_name;
  env["SLURM_JOB_USER"] = run.owner;
  env["SLURM_PROCID"] = std::to_string(t.rank);
  env["SLURM_LOCALID"] = std::to_string(t.local_rank);
  env["SLURM_NODEID"] = std::to_string(t.node_rank);
  env["SLURM_NTASKS"] = std::to_string(t.world);
  env["SLURM_NPROCS"] = std::to_string(t.world);
  env["SLURM_NTASKS_PER_NODE"] = CountsForm(t.tasks_on_node);
  env["SLURM_TASKS_PER_NODE"] = CountsForm(t.tasks_on_node);
  env["SLURM_NNODES"] = std::to_string(t.nodes.size());
  env["SLURM_JOB_NUM_NODES"] = std::to_string(t.nodes.size());
  env["SLURM_JOB_NODELIST"] = CompressHostlist(t.nodes);
  env["SLURM_NODELIST"] = env["SLURM_JOB_NODELIST"];
  env["SLURM_GPUS_ON_NODE"] = std::to_string(mine.gpus.size());
  env["SLURMD_NODENAME"] = mine.node;
  if (!run.workdir.empty()) env["SLURM_SUBMIT_DIR"] = run.workdir;
}

}  // namespace

std::map<std::string, std::string> TaskEnv(const RunLayout& run, int32_t replica, int32_t task) {
  std::map<std::string, std::string> env = run.user_env;
  const TaskRanks t = RanksOfTask(run, replica, task);
  const ReplicaPlacement& mine = run.placement[replica];
  const std::string id = std::to_string(run.job_id);
  env["CORRAL_JOB_ID"] = id;
  env["CORRAL_RUN"] = id + "." + std::to_string(run.attempt);
  env["CORRAL_NODE"] = mine.node;
  env["CORRAL_REPLICA"] = std::to_string(replica);
  env["CORRAL_NUM_REPLICAS"] = std::to_string(run.placement.size());
  env["CORRAL_TASK"] = std::to_string(task);
  env["CORRAL_NODES"] = Join(t.nodes, ",");
  env["CORRAL_CHECKPOINT_DIR"] = run.checkpoint_dir;
  SetTaskGpuEnv(run, mine, task, env);
  SetTaskDistributedEnv(run, t, env);
  SetTaskSlurmEnv(run, mine, t, env);
  if (run.array_id != 0) {
    env["CORRAL_ARRAY_JOB_ID"] = env["SLURM_ARRAY_JOB_ID"] = std::to_string(run.array_id);
    env["CORRAL_ARRAY_INDEX"] = env["SLURM_ARRAY_TASK_ID"] = std::to_string(run.array_index);
  }
  return env;
}

// Bounds on what an order may ask of TaskEnv: the spec's 1,024 tasks a replica, and the work
// of this replica's environments (each task's TF_CONFIG lists every task of the run).
constexpr int32_t kMaxTasksPerReplica = 1024;
constexpr int64_t kMaxEnvWork = 1 << 20;  // tasks here x tasks in the run

Status CheckOrderLayout(const RunOrder& order) {
  const RunLayout& l = order.layout;
  if (l.job_id == 0) return Status::Ok();
  if (order.replica < 0 || order.replica >= static_cast<int32_t>(l.placement.size())) {
    return InvalidArgument("field 'layout.placement': it has no replica " +
                           std::to_string(order.replica));
  }
  int64_t world = 0;
  for (const ReplicaPlacement& p : l.placement) {
    if (p.tasks < 1 || p.tasks > kMaxTasksPerReplica) {
      return InvalidArgument("field 'layout.placement.tasks': " + std::to_string(p.tasks) +
                             " is not in 1-" + std::to_string(kMaxTasksPerReplica));
    }
    world += p.tasks;
  }
  const int32_t tasks = l.placement[order.replica].tasks;
  if (world * tasks > kMaxEnvWork) {
    return InvalidArgument("field 'layout.placement': " + std::to_string(tasks) +
                           " tasks here in a run of " + std::to_string(world) +
                           ", more environments than an order may carry");
  }
  return Status::Ok();
}

namespace {

void AddLocalEnv(RunOrder* o) {
  for (const auto& [k, v] : o->local_env) {
    o->env[k] = v;
    for (auto& env : o->task_envs) env[k] = v;
  }
}

}  // namespace

Status ExpandOrderEnv(RunOrder* o) {
  const RunLayout& l = o->layout;
  if (l.job_id == 0) {
    AddLocalEnv(o);
    return Status::Ok();
  }
  if (Status st = CheckOrderLayout(*o); !st.ok()) return st;
  const int32_t tasks = l.placement[o->replica].tasks;
  o->env = TaskEnv(l, o->replica, 0);
  o->task_envs.clear();
  if (!o->step_token.empty()) o->env["CORRAL_STEP_TOKEN"] = o->step_token;
  for (int32_t t = 1; t < tasks; ++t) {
    if (t == 1) o->task_envs.push_back(o->env);
    o->task_envs.push_back(TaskEnv(l, o->replica, t));
    if (!o->step_token.empty()) o->task_envs.back()["CORRAL_STEP_TOKEN"] = o->step_token;
  }
  AddLocalEnv(o);
  return Status::Ok();
}

}  // namespace corral
