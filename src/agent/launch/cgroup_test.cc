// The launcher with real cgroups (root only: skipped with a message elsewhere): a replica's
// processes, however they detach, live and die in its group; limits are written; usage is read.
#include "agent/launch/cgroup.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/launch/device_filter.h"
#include "agent/launch/launcher.h"
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

// cgroup v2's device control, as the agent uses it where the unified hierarchy has the
// controllers: a process in a group with the program cannot open a denied GPU device; the same
// device outside the group, another GPU and /dev/null stay open to it. Uses the unified
// hierarchy mounted here (hybrid hosts have one at /sys/fs/cgroup/unified), else mounts one.
std::string UnifiedMount() {
  std::ifstream mounts("/proc/mounts");
  for (std::string line; std::getline(mounts, line);) {
    std::istringstream f(line);
    std::string src, dir, type;
    f >> src >> dir >> type;
    if (type == "cgroup2") return dir;
  }
  return "";
}

// What opening `path` gave: "ok" or the errno's name.
std::string OpenResult(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    close(fd);
    return "ok";
  }
  return errno == EPERM ? "EPERM" : errno == ENXIO ? "ENXIO" : std::strerror(errno);
}

TEST(DeviceFilterTest, AProcessInAV2GroupWithTheProgramCannotOpenADeniedGpu) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to load a cgroup device program";
  if (!DeviceFilterSupported()) GTEST_SKIP() << "this kernel does not load cgroup device programs";
  TempDir tmp;
  std::string root = UnifiedMount();
  bool mounted = false;
  if (root.empty()) {
    root = tmp.path() + "/unified";
    std::filesystem::create_directories(root);
    if (mount("none", root.c_str(), "cgroup2", 0, nullptr) != 0) {
      GTEST_SKIP() << "no cgroup v2 hierarchy, and mounting one failed: " << std::strerror(errno);
    }
    mounted = true;
  }
  const std::string dev = "/dev/corral-bpf-test-" + std::to_string(getpid()) + "-nvidia";
  for (int minor : {0, 1}) {
    std::string path = dev + std::to_string(minor);
    ASSERT_EQ(mknod(path.c_str(), S_IFCHR | 0666, makedev(kNvidiaMajor, minor)), 0)
        << path << ": " << std::strerror(errno);
  }
  const std::string group = root + "/corral-bpf-test-" + std::to_string(getpid());
  ASSERT_EQ(mkdir(group.c_str(), 0755), 0) << std::strerror(errno);
  // A 16-GPU node's run of one GPU (minor 1): fifteen denials, a program of some length.
  std::vector<int32_t> denied = {0};
  for (int32_t m = 2; m < 16; ++m) denied.push_back(m);
  Status st = DenyCharDevices(group, kNvidiaMajor, denied);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    std::ofstream(group + "/cgroup.procs") << getpid() << std::flush;
    std::string r =
        OpenResult(dev + "0") + " " + OpenResult(dev + "1") + " " + OpenResult("/dev/null");
    (void)!write(fds[1], r.data(), r.size());
    _exit(0);
  }
  close(fds[1]);
  std::string inside;
  char buf[256];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0;) inside.append(buf, size_t(n));
  close(fds[0]);
  waitpid(child, nullptr, 0);
  const std::string outside = OpenResult(dev + "0");
  for (int minor : {0, 1}) (void)unlink((dev + std::to_string(minor)).c_str());
  (void)rmdir(group.c_str());
  if (mounted) (void)umount(root.c_str());
  ASSERT_TRUE(st.ok()) << st.ToString();
  // No driver behind the nodes: an allowed open fails later, with ENXIO.
  EXPECT_EQ(inside, "EPERM ENXIO ok") << "GPU 0 denied; GPU 1 and /dev/null allowed";
  EXPECT_EQ(outside, "ENXIO") << "the program applies to its group only";
}

}  // namespace
}  // namespace corral::agent
