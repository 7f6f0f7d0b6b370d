// A share of a GPU end to end on the node: the head's layout of a run holding 0.25 of a 16 GiB
// GPU (4 GiB) becomes the task's environment, the agent's launcher preloads the share shim,
// and the job's process (a CUDA program in miniature, on the stub libcuda.so.1) sees the share
// and cannot allocate past it.
#include <gtest/gtest.h>

#include "agent/launcher.h"
#include "agent/test_util.h"
#include "core/agent_protocol.h"
#include "core/task_env.h"

namespace corral::agent {
namespace {

using testing::ReadFileOr;
using testing::TempDir;
using testing::WaitFor;

RunOrder ShareOrder(GpuIsolation isolation) {
  RunLayout layout;
  layout.job_id = 41;
  layout.attempt = 0;
  layout.owner = "ana";
  layout.placement = {{"node-1", {0}, {250}, 4096}};
  layout.gpu_isolation = isolation;
  RunOrder o;
  o.run_id = "41.0";
  o.job_id = 41;
  o.layout = layout;
  o.gpus = {0};
  o.command = {"/bin/sh", "-c",
               "env | grep -E '^(CORRAL_GPU|LD_PRELOAD|CUDA_MPS)' | sort; exec " +
                   std::string(CORRAL_GPUSHARE_PROBE) + " info alloc gpa 3072 alloc gpa 2048"};
  EXPECT_TRUE(ExpandOrderEnv(&o).ok());
  return o;
}

std::string RunAndRead(PosixLauncher& launcher, const RunOrder& o, const std::string& state) {
  Result<LaunchedRun> run = launcher.Launch(o);
  EXPECT_TRUE(run.ok()) << run.status().ToString();
  if (!run.ok()) return "";
  RunStatus st;
  EXPECT_TRUE(WaitFor([&] { return !(st = launcher.Check(*run)).running; }));
  EXPECT_EQ(st.exit_code, 0) << ReadFileOr(state + "/runs/41.0.0/logs/stderr");
  return ReadFileOr(state + "/runs/41.0.0/logs/stdout");
}

TEST(GpuShareLaunch, TheJobsProcessSeesItsShareAndIsCappedByTheShim) {
  TempDir state;
  PosixLauncher launcher(state.path(), "node-1", {{"LD_LIBRARY_PATH", CORRAL_STUB_CUDA_DIR}}, {},
                         Cgroups::None(), "", CORRAL_GPUSHARE_LIB);
  std::string out = RunAndRead(launcher, ShareOrder(GpuIsolation::kMemory), state.path());
  for (const std::string& want : std::vector<std::string>{
           "CORRAL_GPU_ISOLATION=memory\n", "CORRAL_GPU_MEMORY_LIMIT=4096m\n",
           "CORRAL_GPU_SHARE_ENFORCED=1\n",
           "CORRAL_GPU_SHARE_FILE=" + state.path() + "/runs/41.0.0/gpushare\n",
           "CORRAL_GPU_SHARE_MILLI=250\n", "LD_PRELOAD=" + std::string(CORRAL_GPUSHARE_LIB) + "\n",
           "total=4096 free=4096 device_total=4096\n", "rc=0\nrc=2\n"}) {
    EXPECT_NE(out.find(want), std::string::npos) << "missing " << want << " in:\n" << out;
  }
}

TEST(GpuShareLaunch, AnMpsShareGetsTheMpsLimitsAndNoShim) {
  TempDir state;
  PosixLauncher launcher(state.path(), "node-1", {{"LD_LIBRARY_PATH", CORRAL_STUB_CUDA_DIR}}, {},
                         Cgroups::None(), "", CORRAL_GPUSHARE_LIB);
  std::string out = RunAndRead(launcher, ShareOrder(GpuIsolation::kMps), state.path());
  for (const char* want : {"CORRAL_GPU_ISOLATION=mps\n", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25\n",
                           "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=4096M\n",
                           "total=16384 free=16384 device_total=16384\n"}) {
    EXPECT_NE(out.find(want), std::string::npos) << "missing " << want << " in:\n" << out;
  }
  EXPECT_EQ(out.find("LD_PRELOAD="), std::string::npos) << out;
}

}  // namespace
}  // namespace corral::agent
