// The launcher with real cgroups (root only: skipped with a message elsewhere): a replica's
// processes, however they detach, live and die in its group; limits are written; usage is read.
#include "agent/cgroup.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "agent/launcher.h"
#include "agent/test_util.h"

namespace corral::agent {
namespace {

using testing::Alive;
using testing::ReadFileOr;
using testing::ShellOrder;
using testing::TempDir;
using testing::WaitFor;

class CgroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to make cgroups";
    cgroups_ = Cgroups::Detect();
    if (cgroups_.none()) GTEST_SKIP() << "no writable cgroup hierarchy with memory and pids";
  }
  Cgroups cgroups_;
};

TEST_F(CgroupTest, AReplicasDetachedProcessesAreKilledWithItAndItsGroupRemoved) {
  TempDir state;
  const std::string node = "cg-test-" + std::to_string(getpid());
  PosixLauncher launcher(state.path(), node, {}, {}, cgroups_);
  RunOrder o = ShellOrder("31.0", "setsid /bin/sh -c 'echo $$ > " + state.path() +
                                      "/escaped; exec sleep 300' & "
                                      "while [ ! -s " +
                                      state.path() + "/escaped ]; do sleep 0.01; done; exit 3");
  o.memory_mb = 256;
  o.cpu_milli = 1500;
  auto run = launcher.Launch(o);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  const std::string group = launcher.CgroupName(run->key());
  EXPECT_EQ(group.rfind(node + ".", 0), 0u) << group;
  EXPECT_EQ(group.substr(group.size() - 7), "/31.0.0");
  ASSERT_TRUE(WaitFor([&] { return !ReadFileOr(state.path() + "/escaped").empty(); }));
  const int escaped = std::stoi(ReadFileOr(state.path() + "/escaped"));
  ASSERT_TRUE(Alive(escaped));
  bool found = false;
  for (int32_t pid : cgroups_.Pids(group)) found = found || pid == escaped;
  EXPECT_TRUE(found) << "a process that left its session is still in the replica's cgroup";
  if (std::filesystem::exists("/sys/fs/cgroup/memory/corral/" + group)) {
    EXPECT_EQ(ReadFileOr("/sys/fs/cgroup/memory/corral/" + group + "/memory.limit_in_bytes"),
              std::to_string(256 << 20) + "\n");
    EXPECT_EQ(ReadFileOr("/sys/fs/cgroup/cpu/corral/" + group + "/cpu.cfs_quota_us"), "150000\n");
  }

  RunStatus st;
  ASSERT_TRUE(WaitFor([&] { return !(st = launcher.Check(*run)).running; }));
  EXPECT_EQ(st.exit_code, 3);
  EXPECT_TRUE(WaitFor([&] { return !Alive(escaped); })) << "the detached sleep outlived its run";
  EXPECT_FALSE(cgroups_.Exists(group));
  EXPECT_GT(st.usage.peak_memory_bytes, 0);
  EXPECT_FALSE(st.usage.oom_killed);
  // The usage survives the group: a later look (an agent restart) reads it from the run dir.
  EXPECT_EQ(launcher.Check(*run).usage.peak_memory_bytes, st.usage.peak_memory_bytes);
  cgroups_.Remove(group.substr(0, group.rfind('/')));
}

TEST_F(CgroupTest, AReplicaPastItsMemoryCapIsKilledAndSaysOutOfMemory) {
  TempDir state;
  const std::string node = "cg-oom-" + std::to_string(getpid());
  PosixLauncher launcher(state.path(), node, {}, {}, cgroups_);
  RunOrder o = ShellOrder("32.0", "exec /usr/bin/python3 -c 'x = bytearray(400 << 20)'");
  o.memory_mb = 48;
  auto run = launcher.Launch(o);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  RunStatus st;
  ASSERT_TRUE(WaitFor([&] { return !(st = launcher.Check(*run)).running; }));
  EXPECT_EQ(st.exit_code, -SIGKILL);
  EXPECT_TRUE(st.usage.oom_killed);
  EXPECT_LE(st.usage.peak_memory_bytes, int64_t{48} << 20);
  const std::string group = launcher.CgroupName(run->key());
  cgroups_.Remove(group.substr(0, group.rfind('/')));
}

// On a node of real GPUs a run may open only its own GPUs' devices. Two device nodes of
// NVIDIA's major are made here (there is no driver: opening an allowed one fails with ENXIO,
// a denied one with EPERM, before any driver is asked).
TEST_F(CgroupTest, ARunMayOpenOnlyItsOwnGpuDevices) {
  if (!cgroups_.isolates_devices()) GTEST_SKIP() << "no cgroup v1 devices controller here";
  TempDir state;
  const std::string node = "cg-dev-" + std::to_string(getpid());
  const std::string dev = "/dev/corral-test-" + std::to_string(getpid()) + "-nvidia";
  for (int minor : {0, 1}) {
    std::string path = dev + std::to_string(minor);
    if (mknod(path.c_str(), S_IFCHR | 0666, makedev(kNvidiaMajor, minor)) != 0) {
      int err = errno;
      (void)unlink((dev + "0").c_str());
      GTEST_SKIP() << "cannot make device nodes here (mknod " << path << ": " << std::strerror(err)
                   << ")";
    }
  }
  PosixLauncher launcher(state.path(), node, {}, {}, cgroups_);
  launcher.SetGpuDevices({{0, 0}, {1, 1}});
  RunOrder o = ShellOrder("33.0",
                          "exec /usr/bin/python3 -c '\n"
                          "import errno, os\n"
                          "for d in (0, 1):\n"
                          "    try:\n"
                          "        os.close(os.open(\"" +
                              dev +
                              "%d\" % d, os.O_RDONLY))\n"
                              "        print(d, \"opened\")\n"
                              "    except OSError as e:\n"
                              "        print(d, errno.errorcode[e.errno])\n'");
  o.gpus = {1};
  auto run = launcher.Launch(o);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  RunStatus st;
  ASSERT_TRUE(WaitFor([&] { return !(st = launcher.Check(*run)).running; }));
  for (int minor : {0, 1}) (void)unlink((dev + std::to_string(minor)).c_str());
  std::string out = ReadFileOr(launcher.RunDir(run->key()) + "/logs/stdout");
  EXPECT_EQ(st.exit_code, 0) << ReadFileOr(launcher.RunDir(run->key()) + "/logs/stderr");
  EXPECT_EQ(out, "0 EPERM\n1 ENXIO\n") << "GPU 0 is not the run's; GPU 1 is";
  const std::string group = launcher.CgroupName(run->key());
  cgroups_.Remove(group.substr(0, group.rfind('/')));
}

}  // namespace
}  // namespace corral::agent
