// The share contract end to end without a GPU: the head's variables for a replica on a share
// (TaskEnv) are what the agent reads back as a typed share (ShareOfOrder), and what the agent
// adds for it is rendered once (GpuShareEnv) into every task's environment (JobEnvironment).
#include "agent/gpus/gpu_share_env.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "agent/launch/launcher.h"
#include "core/task_env.h"
#include "gpushare/share_contract.h"

namespace corral::agent {
namespace {

// Replica 0 of a one-replica job on a quarter of GPU 0 of n1 with 4 GiB of its memory.
RunOrder ShareOrder(GpuIsolation isolation, int64_t memory_mb = 4096) {
  RunLayout l;
  l.job_id = 7;
  l.attempt = 1;
  ReplicaPlacement p;
  p.node = "n1";
  p.gpus = {0};
  p.gpu_milli = {250};
  p.gpu_memory_mb = memory_mb;
  l.placement = {p};
  l.replica_hosts = {"10.0.0.1"};
  l.gpu_isolation = isolation;
  RunOrder o;
  o.run_id = "7.1";
  o.job_id = 7;
  o.gpus = {0};
  o.env = TaskEnv(l, 0, 0);
  return o;
}

bool Has(const std::vector<std::string>& env, const std::string& kv) {
  return std::find(env.begin(), env.end(), kv) != env.end();
}

TEST(GpuShareEnv, TheAgentReadsTheHeadsVariablesAsATypedShare) {
  std::optional<GpuShareOrder> memory = ShareOfOrder(ShareOrder(GpuIsolation::kMemory));
  ASSERT_TRUE(memory.has_value());
  EXPECT_EQ(memory->isolation, GpuIsolation::kMemory);
  EXPECT_TRUE(memory->memory_limited);
  std::optional<GpuShareOrder> mps = ShareOfOrder(ShareOrder(GpuIsolation::kMps, 0));
  ASSERT_TRUE(mps.has_value());
  EXPECT_EQ(mps->isolation, GpuIsolation::kMps);
  EXPECT_FALSE(mps->memory_limited);

  RunOrder whole = ShareOrder(GpuIsolation::kMemory);
  whole.env.erase(CORRAL_ENV_GPU_ISOLATION);
  EXPECT_FALSE(ShareOfOrder(whole).has_value()) << "no share: nothing to isolate";
  RunOrder unknown = ShareOrder(GpuIsolation::kMemory);
  unknown.env[CORRAL_ENV_GPU_ISOLATION] = "hypervisor";
  EXPECT_FALSE(ShareOfOrder(unknown).has_value()) << "an isolation this agent cannot apply";
}

TEST(GpuShareEnv, AMemoryShareGetsTheShimOrSaysItIsNotEnforced) {
  GpuShareOrder share{GpuIsolation::kMemory, true};
  std::map<std::string, std::string> env =
      GpuShareEnv(share, "/opt/shim.so", "/run/x/ledger", nullptr);
  EXPECT_EQ(env, (std::map<std::string, std::string>{{"LD_PRELOAD", "/opt/shim.so"},
                                                     {"CORRAL_GPU_SHARE_FILE", "/run/x/ledger"},
                                                     {"CORRAL_GPU_SHARE_ENFORCED", "1"}}));
  EXPECT_EQ(GpuShareEnv(share, "", "/run/x/ledger", nullptr),
            (std::map<std::string, std::string>{{"CORRAL_GPU_SHARE_ENFORCED", "0"}}));
  EXPECT_TRUE(GpuShareEnv({GpuIsolation::kMemory, false}, "/opt/shim.so", "l", nullptr).empty())
      << "without a memory limit there is nothing for the shim to cap";
}

TEST(GpuShareEnv, AnMpsShareGetsItsServersDirectories) {
  MpsClient server{"/state/mps/u1-gpu0/pipe", "/state/mps/u1-gpu0/log"};
  GpuShareOrder share{GpuIsolation::kMps, true};
  EXPECT_EQ(
      GpuShareEnv(share, "/opt/shim.so", "l", &server),
      (std::map<std::string, std::string>{{"CUDA_MPS_PIPE_DIRECTORY", "/state/mps/u1-gpu0/pipe"},
                                          {"CUDA_MPS_LOG_DIRECTORY", "/state/mps/u1-gpu0/log"},
                                          {"CORRAL_GPU_SHARE_ENFORCED", "1"}}));
  EXPECT_TRUE(GpuShareEnv(share, "/opt/shim.so", "l", nullptr).empty())
      << "no MPS control on the node: nothing added";
}

TEST(GpuShareEnv, EveryTaskGetsTheRenderedShareWithTheShimPreloadedFirst) {
  RunOrder o = ShareOrder(GpuIsolation::kMemory);
  o.env["LD_PRELOAD"] = "/usr/lib/libjob.so";
  o.task_envs = {o.env, o.env};
  std::map<std::string, std::string> share =
      GpuShareEnv(*ShareOfOrder(o), "/opt/shim.so", "/run/x/ledger", nullptr);
  for (int32_t task : {0, 1}) {
    std::vector<std::string> env = JobEnvironment(o, "n1", task, {}, share);
    EXPECT_TRUE(Has(env, "LD_PRELOAD=/opt/shim.so:/usr/lib/libjob.so")) << task;
    EXPECT_TRUE(Has(env, "CORRAL_GPU_SHARE_FILE=/run/x/ledger")) << task;
    EXPECT_TRUE(Has(env, "CORRAL_GPU_MEMORY_LIMIT=4096m")) << task;
    EXPECT_TRUE(Has(env, "CORRAL_GPU_SHARE_MILLI=250")) << task;
  }
}

}  // namespace
}  // namespace corral::agent
