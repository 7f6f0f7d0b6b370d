#include "core/task_env.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace corral {
namespace {

ReplicaPlacement On(const std::string& node, std::vector<int32_t> gpus, int32_t tasks) {
  ReplicaPlacement p;
  p.node = node;
  p.gpus = std::move(gpus);
  p.tasks = tasks;
  return p;
}

RunLayout Layout(std::vector<ReplicaPlacement> placement, bool task_per_gpu = false) {
  RunLayout l;
  l.job_id = 42;
  l.attempt = 2;
  l.job_name = "train";
  l.owner = "ada";
  l.placement = std::move(placement);
  for (const ReplicaPlacement& p : l.placement)
    l.replica_hosts.push_back("10.0.0." + p.node.substr(4));
  l.master_port = 29500;
  l.task_per_gpu = task_per_gpu;
  l.checkpoint_dir = "/ckpt/job-42";
  return l;
}

// What torchrun, Lightning and submitit read, for every task of a 3-node, 2-task-per-GPU-pair job.
TEST(TaskEnv, RanksAcrossNodesAndTasks) {
  RunLayout l = Layout({On("node01", {0, 1}, 2), On("node02", {2, 3}, 2), On("node03", {0, 1}, 2)},
                       /*task_per_gpu=*/true);
  struct Want {
    int32_t replica, task;
    std::string rank, local_rank, node_rank, cuda;
  };
  for (const Want& w : std::vector<Want>{{0, 0, "0", "0", "0", "0"},
                                         {0, 1, "1", "1", "0", "1"},
                                         {1, 0, "2", "0", "1", "2"},
                                         {1, 1, "3", "1", "1", "3"},
                                         {2, 1, "5", "1", "2", "1"}}) {
    auto env = TaskEnv(l, w.replica, w.task);
    SCOPED_TRACE("replica " + std::to_string(w.replica) + " task " + std::to_string(w.task));
    EXPECT_EQ(env["RANK"], w.rank);
    EXPECT_EQ(env["SLURM_PROCID"], w.rank);
    EXPECT_EQ(env["LOCAL_RANK"], w.local_rank);
    EXPECT_EQ(env["SLURM_LOCALID"], w.local_rank);
    EXPECT_EQ(env["NODE_RANK"], w.node_rank);
    EXPECT_EQ(env["SLURM_NODEID"], w.node_rank);
    EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], w.cuda);
    EXPECT_EQ(env["WORLD_SIZE"], "6");
    EXPECT_EQ(env["SLURM_NTASKS"], "6");
    EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "2");
    EXPECT_EQ(env["NNODES"], "3");
    EXPECT_EQ(env["SLURM_NNODES"], "3");
    EXPECT_EQ(env["MASTER_ADDR"], "10.0.0.01");
    EXPECT_EQ(env["MASTER_PORT"], "29500");
    EXPECT_EQ(env["SLURM_JOB_NODELIST"], "node[01-03]");
    EXPECT_EQ(env["SLURM_NODELIST"], "node[01-03]");
    EXPECT_EQ(env["SLURM_NTASKS_PER_NODE"], "2(x3)");
    EXPECT_EQ(env["SLURM_GPUS_ON_NODE"], "2");
    EXPECT_EQ(env["CORRAL_TASK"], std::to_string(w.task));
    EXPECT_EQ(env["CORRAL_RUN"], "42.2");
  }
}

// Two replicas on one node are one node: NNODES counts machines, local ranks continue.
TEST(TaskEnv, ReplicasSharingANodeAreOneNode) {
  RunLayout l = Layout({On("node01", {0}, 1), On("node01", {1}, 1), On("node02", {0}, 1)});
  auto second = TaskEnv(l, 1, 0);
  EXPECT_EQ(second["NNODES"], "2");
  EXPECT_EQ(second["NODE_RANK"], "0");
  EXPECT_EQ(second["LOCAL_RANK"], "1");
  EXPECT_EQ(second["LOCAL_WORLD_SIZE"], "2");
  EXPECT_EQ(second["RANK"], "1");
  EXPECT_EQ(second["SLURM_NTASKS_PER_NODE"], "2,1");
  EXPECT_EQ(second["SLURM_JOB_NODELIST"], "node[01-02]");
  auto third = TaskEnv(l, 2, 0);
  EXPECT_EQ(third["NODE_RANK"], "1");
  EXPECT_EQ(third["LOCAL_RANK"], "0");
  EXPECT_EQ(third["LOCAL_WORLD_SIZE"], "1");
}

// Without one task per GPU every task sees all of its replica's GPUs.
TEST(TaskEnv, TasksShareTheReplicasGpusUnlessOnePerGpu) {
  RunLayout l = Layout({On("node01", {4, 5, 6}, 3)});
  EXPECT_EQ(TaskEnv(l, 0, 2)["CUDA_VISIBLE_DEVICES"], "4,5,6");
  l.task_per_gpu = true;
  EXPECT_EQ(TaskEnv(l, 0, 2)["CUDA_VISIBLE_DEVICES"], "6");
}

TEST(TaskEnv, TfConfigNamesEveryWorkerAndThisTask) {
  RunLayout l = Layout({On("node01", {0}, 2), On("node02", {0}, 1)});
  auto cfg = nlohmann::json::parse(TaskEnv(l, 1, 0)["TF_CONFIG"]);
  EXPECT_EQ(cfg["cluster"]["worker"],
            (nlohmann::json{"10.0.0.01:29501", "10.0.0.01:29502", "10.0.0.02:29503"}));
  EXPECT_EQ(cfg["task"]["type"], "worker");
  EXPECT_EQ(cfg["task"]["index"], 2);
}

// The user's environment is kept, but never overrides what Corral sets.
TEST(TaskEnv, UserEnvKeptButCorralWins) {
  RunLayout l = Layout({On("node01", {0}, 1)});
  l.user_env = {{"RANK", "7"}, {"MY_VAR", "x"}};
  auto env = TaskEnv(l, 0, 0);
  EXPECT_EQ(env["RANK"], "0");
  EXPECT_EQ(env["MY_VAR"], "x");
  EXPECT_EQ(env["SLURM_JOB_NAME"], "train");
  EXPECT_EQ(env.count("SLURM_ARRAY_TASK_ID"), 0u);
  l.array_id = 40;
  l.array_index = 2;
  env = TaskEnv(l, 0, 0);
  EXPECT_EQ(env["SLURM_ARRAY_JOB_ID"], "40");
  EXPECT_EQ(env["SLURM_ARRAY_TASK_ID"], "2");
  EXPECT_EQ(env["CORRAL_ARRAY_INDEX"], "2");
}

TEST(TaskEnv, TasksPerReplicaFromSpec) {
  JobSpec spec;
  ReplicaPlacement p = On("n1", {0, 1, 2, 3}, 0);
  EXPECT_EQ(TasksFor(spec, p), 1);
  spec.tasks_per_replica = 3;
  EXPECT_EQ(TasksFor(spec, p), 3);
  spec.tasks_per_replica = -1;
  EXPECT_EQ(TasksFor(spec, p), 4);
  p.gpus.clear();
  EXPECT_EQ(TasksFor(spec, p), 1);  // "gpu" on a CPU-only replica still runs one task
}

}  // namespace
}  // namespace corral
