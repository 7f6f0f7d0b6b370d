// A share of a GPU end to end on the node: the head's layout of a run holding 0.25 of a 16 GiB
// GPU (4 GiB) becomes the task's environment, the agent's launcher preloads the share shim,
// and the job's process (a CUDA program in miniature, on the stub libcuda.so.1) sees the share
// and cannot allocate past it.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "agent/launch/launcher.h"
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

// A node without the shim runs the share unenforced, and says so: a note the head makes an
// event of (visible in `corral show`), beside the agent's log line.
TEST(GpuShareLaunch, AShareWithoutTheShimRunsAndIsNotedUnenforced) {
  TempDir state;
  PosixLauncher launcher(state.path(), "node-1", {{"LD_LIBRARY_PATH", CORRAL_STUB_CUDA_DIR}}, {},
                         Cgroups::None(), "", /*gpushare_lib=*/"");
  RunOrder o = ShareOrder(GpuIsolation::kMemory);
  o.command = {"/bin/sh", "-c", "echo ENFORCED=$CORRAL_GPU_SHARE_ENFORCED"};
  Result<LaunchedRun> run = launcher.Launch(o);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  RunStatus st;
  EXPECT_TRUE(WaitFor([&] { return !(st = launcher.Check(*run)).running; }));
  EXPECT_EQ(st.exit_code, 0);
  EXPECT_EQ(ReadFileOr(state.path() + "/runs/41.0.0/logs/stdout"), "ENFORCED=0\n");
  EXPECT_EQ(st.note.rfind(kShareNotEnforced, 0), 0u) << st.note;
  EXPECT_NE(st.note.find("node node-1 has no GPU share shim"), std::string::npos) << st.note;
  PosixLauncher with_shim(state.path() + "/b", "node-1",
                          {{"LD_LIBRARY_PATH", CORRAL_STUB_CUDA_DIR}}, {}, Cgroups::None(), "",
                          CORRAL_GPUSHARE_LIB);
  run = with_shim.Launch(o);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_TRUE(WaitFor([&] { return !(st = with_shim.Check(*run)).running; }));
  EXPECT_EQ(st.note, "") << "enforced: nothing to say";
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

// With nvidia-cuda-mps-control (here a fake that records what it is asked: there is no GPU on
// the test machines), MPS shares of one owner on one GPU are clients of one daemon, started
// for the first and told to quit after the last.
TEST(GpuShareLaunch, MpsSharesOfAnOwnerShareItsDaemonUntilTheLastEnds) {
  TempDir state;
  const std::string record = state.path() + "/mps-control.log";
  const std::string control = state.path() + "/nvidia-cuda-mps-control";
  {
    std::ofstream f(control);
    f << "#!/bin/sh\nin=\nif [ $# -eq 0 ]; then in=$(cat); fi\n"
      << "echo \"uid=$(id -u) gpu=$CUDA_VISIBLE_DEVICES pipe=$CUDA_MPS_PIPE_DIRECTORY "
      << "log=$CUDA_MPS_LOG_DIRECTORY args=$* stdin=$in\" >> " << record << "\n"
      << "[ \"$1\" = -d ] && touch \"$CUDA_MPS_PIPE_DIRECTORY/control\"\nexit 0\n";
  }
  ASSERT_EQ(chmod(control.c_str(), 0755), 0);
  PosixLauncher launcher(state.path(), "node-1", {{"LD_LIBRARY_PATH", CORRAL_STUB_CUDA_DIR}}, {},
                         Cgroups::None(), "", CORRAL_GPUSHARE_LIB);
  launcher.SetMpsControl(control);
  const std::string go = state.path() + "/go";
  auto order = [&](JobId id, const std::string& wait) {
    RunOrder o = ShareOrder(GpuIsolation::kMps);
    o.run_id = std::to_string(id) + ".0";
    o.job_id = id;
    o.command = {"/bin/sh", "-c",
                 wait +
                     "env | grep -E '^(CUDA_MPS|CORRAL_GPU_SHARE_ENFORCED)' | sort; "
                     "test -e \"$CUDA_MPS_PIPE_DIRECTORY/control\" && echo daemon-up"};
    return o;
  };
  Result<LaunchedRun> first =
      launcher.Launch(order(51, "while [ ! -e " + go + " ]; do sleep 0.05; done; "));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  Result<LaunchedRun> second = launcher.Launch(order(52, ""));
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  RunStatus st;
  ASSERT_TRUE(WaitFor([&] { return !(st = launcher.Check(*second)).running; }));
  EXPECT_EQ(st.exit_code, 0);
  const std::string dir = state.path() + "/mps/u" + std::to_string(geteuid()) + "-gpu0";
  const std::string out2 = ReadFileOr(state.path() + "/runs/52.0.0/logs/stdout");
  for (const std::string& want :
       {"CUDA_MPS_PIPE_DIRECTORY=" + dir + "/pipe\n", "CUDA_MPS_LOG_DIRECTORY=" + dir + "/log\n",
        std::string("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25\n"),
        std::string("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=4096M\n"),
        std::string("CORRAL_GPU_SHARE_ENFORCED=1\n"), std::string("daemon-up\n")}) {
    EXPECT_NE(out2.find(want), std::string::npos) << "missing " << want << " in:\n" << out2;
  }
  // One daemon for both, still up while the first runs.
  const std::string started = "uid=" + std::to_string(geteuid()) + " gpu=0 pipe=" + dir +
                              "/pipe log=" + dir + "/log args=-d stdin=\n";
  EXPECT_EQ(ReadFileOr(record), started);
  std::ofstream(go).put('\n');
  ASSERT_TRUE(WaitFor([&] { return !(st = launcher.Check(*first)).running; }));
  EXPECT_EQ(st.exit_code, 0);
  EXPECT_NE(ReadFileOr(state.path() + "/runs/51.0.0/logs/stdout").find("daemon-up"),
            std::string::npos);
  EXPECT_EQ(ReadFileOr(record), started + "uid=" + std::to_string(geteuid()) + " gpu=0 pipe=" +
                                    dir + "/pipe log=" + dir + "/log args= stdin=quit\n");
  // The next share starts a daemon again.
  Result<LaunchedRun> third = launcher.Launch(order(53, ""));
  ASSERT_TRUE(third.ok());
  ASSERT_TRUE(WaitFor([&] { return !(st = launcher.Check(*third)).running; }));
  std::string all = ReadFileOr(record);
  EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), 4) << all;
}

// The agent restarts while an owner's MPS shares run (its runs go on): the restarted agent
// knows which runs use the daemon (STATE/mps/.../runs), and tells it to quit after the last of
// them ends, not before.
TEST(GpuShareLaunch, AnMpsDaemonGetsItsQuitAcrossAnAgentRestart) {
  TempDir state;
  const std::string record = state.path() + "/mps-control.log";
  const std::string control = state.path() + "/nvidia-cuda-mps-control";
  {
    std::ofstream f(control);
    f << "#!/bin/sh\nin=\nif [ $# -eq 0 ]; then in=$(cat); fi\n"
      << "echo \"gpu=$CUDA_VISIBLE_DEVICES args=$* stdin=$in\" >> " << record << "\nexit 0\n";
  }
  ASSERT_EQ(chmod(control.c_str(), 0755), 0);
  const std::string go1 = state.path() + "/go1", go2 = state.path() + "/go2";
  auto order = [&](JobId id, const std::string& go) {
    RunOrder o = ShareOrder(GpuIsolation::kMps);
    o.run_id = std::to_string(id) + ".0";
    o.job_id = id;
    o.command = {"/bin/sh", "-c", "while [ ! -e " + go + " ]; do sleep 0.05; done"};
    return o;
  };
  const std::string started = "gpu=0 args=-d stdin=\n";
  const std::string quit = "gpu=0 args= stdin=quit\n";
  Result<LaunchedRun> a = Internal("not launched"), b = Internal("not launched");
  {
    PosixLauncher first(state.path(), "node-1", {{"LD_LIBRARY_PATH", CORRAL_STUB_CUDA_DIR}}, {},
                        Cgroups::None(), "", CORRAL_GPUSHARE_LIB);
    first.SetMpsControl(control);
    a = first.Launch(order(71, go1));
    b = first.Launch(order(72, go2));
    ASSERT_TRUE(a.ok() && b.ok());
  }  // the agent goes; its runs and the daemon stay
  const std::string runs_file = state.path() + "/mps/u" + std::to_string(geteuid()) + "-gpu0/runs";
  EXPECT_NE(ReadFileOr(runs_file).find("71.0"), std::string::npos) << ReadFileOr(runs_file);
  EXPECT_NE(ReadFileOr(runs_file).find("72.0"), std::string::npos) << ReadFileOr(runs_file);

  PosixLauncher second(state.path(), "node-1", {{"LD_LIBRARY_PATH", CORRAL_STUB_CUDA_DIR}}, {},
                       Cgroups::None(), "", CORRAL_GPUSHARE_LIB);
  second.SetMpsControl(control);
  RunStatus st;
  std::ofstream(go1).put('\n');
  ASSERT_TRUE(WaitFor([&] { return !(st = second.Check(*a)).running; }));
  EXPECT_EQ(ReadFileOr(record), started) << "quit while run 72 still uses the daemon";
  // A share that starts now joins the daemon the first agent started.
  Result<LaunchedRun> c = second.Launch(order(73, go2));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::ofstream(go2).put('\n');
  ASSERT_TRUE(WaitFor([&] { return !(st = second.Check(*b)).running; }));
  EXPECT_EQ(ReadFileOr(record), started);
  ASSERT_TRUE(WaitFor([&] { return !(st = second.Check(*c)).running; }));
  EXPECT_EQ(ReadFileOr(record), started + quit);
  EXPECT_EQ(ReadFileOr(runs_file), "") << "no run uses it: the file is gone";
  EXPECT_NE(access(runs_file.c_str(), F_OK), 0);
}

// A daemon that does not start fails the run with the reason, naming the GPU.
TEST(GpuShareLaunch, AnMpsDaemonThatCannotStartFailsTheRun) {
  TempDir state;
  const std::string control = state.path() + "/nvidia-cuda-mps-control";
  std::ofstream(control) << "#!/bin/sh\necho no GPU >&2\nexit 1\n";
  ASSERT_EQ(chmod(control.c_str(), 0755), 0);
  PosixLauncher launcher(state.path(), "node-1", {}, {}, Cgroups::None(), "", CORRAL_GPUSHARE_LIB);
  launcher.SetMpsControl(control);
  Result<LaunchedRun> run = launcher.Launch(ShareOrder(GpuIsolation::kMps));
  std::string reason =
      run.ok() ? ReadFileOr(state.path() + "/runs/41.0.0/logs/stderr") : run.status().message();
  EXPECT_NE(reason.find("cannot start an MPS daemon"), std::string::npos) << reason;
  EXPECT_NE(reason.find("for GPU 0 failed"), std::string::npos) << reason;
}

}  // namespace
}  // namespace corral::agent
