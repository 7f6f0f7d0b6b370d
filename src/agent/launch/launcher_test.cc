#include "agent/launch/launcher.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/fs.h>
#include <pwd.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "agent/launch/agent_lease.h"
#include "agent/launch/monitor.h"
#include "agent/launch/run_record.h"
#include "agent/test_util.h"

namespace corral::agent {
namespace {

using testing::ReadFileOr;
using testing::ShellOrder;
using testing::TempDir;
using testing::WaitFor;

// Each test runs with the monitor forked from the launcher's process and with the corral-monitor
// executable, as an agent beside it starts it.
class LauncherTest : public ::testing::TestWithParam<bool> {
 protected:
  std::string Monitor() const { return GetParam() ? CORRAL_MONITOR_EXE : ""; }
};
INSTANTIATE_TEST_SUITE_P(Monitors, LauncherTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Executable" : "Forked";
                         });

// Launches `order` and waits for it to end.
RunStatus RunToEnd(PosixLauncher& launcher, const RunOrder& order) {
  Result<LaunchedRun> run = launcher.Launch(order);
  EXPECT_TRUE(run.ok()) << run.status().ToString();
  if (!run.ok()) return {};
  RunStatus st;
  EXPECT_TRUE(WaitFor([&] { return !(st = launcher.Check(*run)).running; }));
  return st;
}

TEST_P(LauncherTest, EnvironmentWorkdirAndLogs) {
  TempDir state, work;
  PosixLauncher launcher(state.path(), "node-1", {}, {}, Cgroups::None(), Monitor());
  RunOrder o = ShellOrder("7.0", "pwd; env; echo to-stderr >&2", /*replica=*/2);
  o.job_id = 7;
  o.env = {{"FOO", "bar baz"}, {"CORRAL_NODE_RANK", "1"}};
  o.gpus = {1, 3};
  o.workdir = work.path();
  RunStatus st = RunToEnd(launcher, o);
  EXPECT_EQ(st.exit_code, 0);
  EXPECT_GT(st.ended_at, 0);
  std::string dir = state.path() + "/runs/7.0.2";
  std::string out = ReadFileOr(dir + "/logs/stdout");
  EXPECT_EQ(out.substr(0, out.find('\n')), work.path());
  for (const char* want : {"\nFOO=bar baz\n", "\nCUDA_VISIBLE_DEVICES=1,3\n", "\nCORRAL_JOB_ID=7\n",
                           "\nCORRAL_RUN=7.0\n", "\nCORRAL_NODE=node-1\n", "\nCORRAL_REPLICA=2\n",
                           "\nCORRAL_NODE_RANK=1\n", "\nCUDA_DEVICE_ORDER=PCI_BUS_ID\n"}) {
    EXPECT_NE(out.find(want), std::string::npos) << "missing " << want << " in:\n" << out;
  }
  EXPECT_EQ(ReadFileOr(dir + "/logs/stderr"), "to-stderr\n");
}

// A directory's inode flags; -1 where its file system has none.
int InodeFlags(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int flags = 0;
  bool ok = fd >= 0 && ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
  if (fd >= 0) close(fd);
  return ok ? flags : -1;
}

TEST_P(LauncherTest, RunDirectoriesAreSpreadOverTheFileSystem) {
  TempDir state;
  if (InodeFlags(state.path()) < 0) {
    GTEST_SKIP() << state.path() << "'s file system has no inode flags (not ext4): nothing to set";
  }
  ASSERT_EQ(InodeFlags(state.path()) & FS_TOPDIR_FL, 0);
  PosixLauncher launcher(state.path(), "node-1", {}, {}, Cgroups::None(), Monitor());
  EXPECT_NE(InodeFlags(state.path() + "/runs") & FS_TOPDIR_FL, 0)
      << "runs/ should carry the TOPDIR flag, so that run directories spread over block groups";
  EXPECT_EQ(InodeFlags(state.path()) & FS_TOPDIR_FL, 0) << "only runs/ is marked";
  // So is the checkpoint root, where the first run that needs it makes it.
  RunOrder o = ShellOrder("9.0", "echo hi > \"$CORRAL_CHECKPOINT_DIR/file\"");
  o.env["CORRAL_CHECKPOINT_DIR"] = state.path() + "/ckpt/job-9";
  EXPECT_EQ(RunToEnd(launcher, o).exit_code, 0);
  EXPECT_EQ(ReadFileOr(state.path() + "/ckpt/job-9/file"), "hi\n");
  EXPECT_NE(InodeFlags(state.path() + "/ckpt") & FS_TOPDIR_FL, 0);
}

// The checkpoint root is shared and job ids are sequential: a directory someone else made
// first for the next job is refused, with the reason in the run's stderr and launch error, and
// nothing is read from or written into it.
TEST_P(LauncherTest, ACheckpointDirectoryMadeBySomeoneElseIsRefused) {
  if (geteuid() != 0) {
    // CI runs as root: there a skip would hide this test, so it fails instead.
    const char* ci = std::getenv("CI");
    if (ci != nullptr && std::string(ci) == "true") FAIL() << "needs root (chown), and CI=true";
    GTEST_SKIP() << "needs root: gives a directory to another user";
  }
  TempDir state;
  PosixLauncher launcher(state.path(), "node-1", {}, {}, Cgroups::None(), Monitor());
  const std::string taken = state.path() + "/ckpt/job-11";
  std::filesystem::create_directories(taken);
  ASSERT_EQ(chown(taken.c_str(), 65534, 65534), 0);
  RunOrder o = ShellOrder("11.0", "echo planted > \"$CORRAL_CHECKPOINT_DIR/file\"");
  o.env["CORRAL_CHECKPOINT_DIR"] = taken;
  Result<LaunchedRun> run = launcher.Launch(o);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(run.status().message().find(taken + " exists and belongs to uid 65534"),
            std::string::npos)
      << run.status().message();
  EXPECT_NE(ReadFileOr(state.path() + "/runs/11.0.0/logs/stderr").find("belongs to uid 65534"),
            std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(taken + "/file"));

  // A link in its place is refused too; the job's own directory (a restart's) is used.
  const std::string linked = state.path() + "/ckpt/job-12";
  std::filesystem::create_directory_symlink(state.path(), linked);
  RunOrder l = ShellOrder("12.0", "true");
  l.env["CORRAL_CHECKPOINT_DIR"] = linked;
  Result<LaunchedRun> via_link = launcher.Launch(l);
  ASSERT_FALSE(via_link.ok());
  EXPECT_NE(via_link.status().message().find("not a directory"), std::string::npos)
      << via_link.status().message();
  const std::string own = state.path() + "/ckpt/job-13";
  std::filesystem::create_directories(own);
  RunOrder r = ShellOrder("13.0", "echo again > \"$CORRAL_CHECKPOINT_DIR/file\"");
  r.env["CORRAL_CHECKPOINT_DIR"] = own;
  EXPECT_EQ(RunToEnd(launcher, r).exit_code, 0);
  EXPECT_EQ(ReadFileOr(own + "/file"), "again\n");
}

// Two agents sharing one checkpoint root start a job's two replicas at once: the second finds
// the directory the first made a moment ago, still the agents' own user's and not yet handed
// to the job's owner. It finishes the hand-over rather than failing the job; a directory of
// any other user is still refused (above).
TEST_P(LauncherTest, ACheckpointDirectoryAnotherAgentJustMadeIsHandedToTheOwner) {
  if (geteuid() != 0) {
    const char* ci = std::getenv("CI");
    if (ci != nullptr && std::string(ci) == "true") FAIL() << "needs root (run as), and CI=true";
    GTEST_SKIP() << "needs root: runs a job as another user";
  }
  const struct passwd* nobody = getpwnam("nobody");
  ASSERT_NE(nobody, nullptr);
  TempDir state;
  ASSERT_EQ(chmod(state.path().c_str(), 0755), 0);  // the owner reaches its checkpoints
  PosixLauncher launcher(state.path(), "node-1", {}, RunAsPolicy{/*as_owner=*/true},
                         Cgroups::None(), Monitor());
  const std::string dir = state.path() + "/ckpt/job-14";
  // The other agent's mkdir, before its chown.
  ASSERT_EQ(mkdir((state.path() + "/ckpt").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  RunOrder o = ShellOrder("14.0", "echo mine > \"$CORRAL_CHECKPOINT_DIR/file\"");
  o.user = "nobody";
  o.workdir = "/";
  o.env["CORRAL_CHECKPOINT_DIR"] = dir;
  RunStatus st = RunToEnd(launcher, o);
  EXPECT_EQ(st.exit_code, 0) << ReadFileOr(state.path() + "/runs/14.0.0/logs/stderr");
  struct stat made {};
  ASSERT_EQ(stat(dir.c_str(), &made), 0);
  EXPECT_EQ(made.st_uid, nobody->pw_uid) << "handed to the job's owner";
  EXPECT_EQ(ReadFileOr(dir + "/file"), "mine\n");
}

// The agent keeps one file per run (its record) beside the job's logs: each inode a run makes
// is a cost on the launch path.
TEST_P(LauncherTest, ARunsDirectoryHoldsItsRecordAndItsLogsAlone) {
  TempDir state;
  PosixLauncher launcher(state.path(), "node-1", {}, {}, Cgroups::None(), Monitor());
  RunOrder o = ShellOrder("10.0", "echo out");
  LaunchedRun run = *launcher.Launch(o);
  RunStatus st;
  ASSERT_TRUE(WaitFor([&] { return !(st = launcher.Check(run)).running; }));
  EXPECT_EQ(st.exit_code, 0);
  launcher.Release(run.key());
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(state.path() + "/runs/10.0.0")) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"logs", "record"}));
  const std::string record = ReadFileOr(state.path() + "/runs/10.0.0/record");
  EXPECT_EQ(record.rfind("start {", 0), 0u) << record;
  for (const char* line : {"\npids ", "\nexit 0 ", "\nreleased\n"}) {
    EXPECT_NE(record.find(line), std::string::npos) << "no " << line << " in:\n" << record;
  }
  std::vector<RecoveredRun> recovered = launcher.Recover();
  ASSERT_EQ(recovered.size(), 1u);
  EXPECT_TRUE(recovered[0].released);
  EXPECT_EQ(recovered[0].run.order.run_id, "10.0");
}

TEST_P(LauncherTest, OrderEnvWinsAndNoGpusHidesAll) {
  TempDir state;
  PosixLauncher launcher(state.path(), "node-1", {}, {}, Cgroups::None(), Monitor());
  RunOrder o = ShellOrder(
      "8.1", "echo \"[$CORRAL_NODE][$CUDA_VISIBLE_DEVICES][${CUDA_VISIBLE_DEVICES+set}]\"");
  o.env = {{"CORRAL_NODE", "from-head"}, {"CUDA_VISIBLE_DEVICES", "0,1,2"}};
  EXPECT_EQ(RunToEnd(launcher, o).exit_code, 0);
  EXPECT_EQ(ReadFileOr(state.path() + "/runs/8.1.0/logs/stdout"), "[from-head][][set]\n");
}

// With MIG devices the node names its GPUs by UUID (GpuProbe::VisibleDeviceNames): a run's
// CUDA_VISIBLE_DEVICES lists its devices' names, not their indices.
TEST_P(LauncherTest, MigDevicesAreNamedByUuidInCudaVisibleDevices) {
  TempDir state;
  PosixLauncher launcher(state.path(), "node-1", {}, {}, Cgroups::None(), Monitor());
  launcher.SetGpuNames({{0, "GPU-fake-0"}, {1, "MIG-fake-1-0"}, {2, "MIG-fake-1-1"}});
  RunOrder o = ShellOrder("9.1", "echo \"[$CUDA_VISIBLE_DEVICES]\"");
  o.gpus = {0, 2};
  EXPECT_EQ(RunToEnd(launcher, o).exit_code, 0);
  EXPECT_EQ(ReadFileOr(state.path() + "/runs/9.1.0/logs/stdout"), "[GPU-fake-0,MIG-fake-1-1]\n");
}

TEST_P(LauncherTest, ExitCodes) {
  TempDir state;
  PosixLauncher launcher(state.path(), "n", {}, {}, Cgroups::None(), Monitor());
  EXPECT_EQ(RunToEnd(launcher, ShellOrder("1.0", "exit 0")).exit_code, 0);
  EXPECT_EQ(RunToEnd(launcher, ShellOrder("2.0", "exit 3")).exit_code, 3);
  EXPECT_EQ(RunToEnd(launcher, ShellOrder("3.0", "exit 255")).exit_code, 255);
  EXPECT_EQ(RunToEnd(launcher, ShellOrder("4.0", "kill -USR1 $$")).exit_code, -SIGUSR1);
  EXPECT_EQ(RunToEnd(launcher, ShellOrder("5.0", "kill -KILL $$")).exit_code, -SIGKILL);
}

TEST_P(LauncherTest, MissingCommandAndWorkdirExit127WithAMessage) {
  TempDir state;
  PosixLauncher launcher(state.path(), "n", {}, {}, Cgroups::None(), Monitor());
  RunOrder o = ShellOrder("1.0", "");
  o.command = {"no-such-command-corral"};
  o.env["PATH"] = "/usr/bin:/bin";
  // Known before anything starts: refused with the reason in words (the head shows it).
  Result<LaunchedRun> missing = launcher.Launch(o);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            "cannot execute no-such-command-corral: No such file or directory (not found on "
            "PATH /usr/bin:/bin)");
  EXPECT_NE(ReadFileOr(state.path() + "/runs/1.0.0/logs/stderr")
                .find("cannot execute no-such-command-corral: No such file or directory"),
            std::string::npos);
  LaunchedRun missing_rec;
  missing_rec.order = o;
  EXPECT_EQ(launcher.Check(missing_rec).exit_code, kExitCannotExec);
  // Found but not executable: execve's error, in words, on the task's stderr.
  TempDir bin;
  std::ofstream(bin.path() + "/not-exec") << "#!/bin/sh\n";  // mode 0644: no x bit for anyone
  o = ShellOrder("1.1", "");
  o.command = {bin.path() + "/not-exec"};
  EXPECT_EQ(RunToEnd(launcher, o).exit_code, kExitCannotExec);
  EXPECT_NE(ReadFileOr(state.path() + "/runs/1.1.0/logs/stderr")
                .find("cannot execute " + bin.path() + "/not-exec: Permission denied (errno 13)"),
            std::string::npos)
      << ReadFileOr(state.path() + "/runs/1.1.0/logs/stderr");
  o = ShellOrder("2.0", "true");
  o.workdir = "/nonexistent/dir";
  EXPECT_EQ(RunToEnd(launcher, o).exit_code, kExitCannotExec);
  EXPECT_NE(ReadFileOr(state.path() + "/runs/2.0.0/logs/stderr").find("workdir /nonexistent/dir"),
            std::string::npos);
  o = ShellOrder("3.0", "");
  o.command.clear();
  Result<LaunchedRun> r = launcher.Launch(o);
  EXPECT_FALSE(r.ok());
  LaunchedRun rec;
  rec.order = o;
  EXPECT_EQ(launcher.Check(rec).exit_code, kExitCannotExec);  // recorded, so it is reported
}

TEST_P(LauncherTest, ARunIsStartedAtMostOnce) {
  TempDir state;
  PosixLauncher launcher(state.path(), "n", {}, {}, Cgroups::None(), Monitor());
  RunOrder o = ShellOrder("9.0", "echo once >> " + state.path() + "/starts");
  RunToEnd(launcher, o);
  Result<LaunchedRun> again = launcher.Launch(o);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), ErrorCode::kAlreadyExists);
  EXPECT_EQ(ReadFileOr(state.path() + "/starts"), "once\n");
}

TEST_P(LauncherTest, RejectsRunIdsThatAreNotDirectoryNames) {
  TempDir state;
  PosixLauncher launcher(state.path(), "n", {}, {}, Cgroups::None(), Monitor());
  for (const char* id : {"", "..", "a/b", "x y"}) {
    Result<LaunchedRun> r = launcher.Launch(ShellOrder(id, "true"));
    ASSERT_FALSE(r.ok()) << id;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  }
}

TEST_P(LauncherTest, ReadRunLogWithOffsets) {
  TempDir state;
  PosixLauncher launcher(state.path(), "n", {}, {}, Cgroups::None(), Monitor());
  RunToEnd(launcher, ShellOrder("3.0", "printf 0123456789; printf oops >&2"));
  auto read = [&](const char* stream, int64_t off, int64_t max) {
    return ReadRunLog(state.path(), "3.0", 0, 0, stream, off, max);
  };
  EXPECT_EQ(*read("stdout", 0, 1 << 20), "0123456789");
  EXPECT_EQ(*read("stdout", 4, 3), "456");
  EXPECT_EQ(*read("stdout", 10, 100), "");
  EXPECT_EQ(*read("stdout", 50, 100), "");
  EXPECT_EQ(*read("stderr", 0, 100), "oops");
  EXPECT_EQ(read("stdin", 0, 100).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(read("stdout", -1, 100).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ReadRunLog(state.path(), "4.0", 0, 0, "stdout", 0, 10).status().code(),
            ErrorCode::kNotFound);
  EXPECT_EQ(ReadRunLog(state.path(), "../x", 0, 0, "stdout", 0, 10).status().code(),
            ErrorCode::kInvalidArgument);
}

TEST_P(LauncherTest, JobRunsInItsOwnProcessGroupAndSession) {
  TempDir state;
  PosixLauncher launcher(state.path(), "n", {}, {}, Cgroups::None(), Monitor());
  Result<LaunchedRun> run = launcher.Launch(ShellOrder("1.0", "sleep 30"));
  ASSERT_TRUE(run.ok());
  EXPECT_GT(run->pgid, 0);
  EXPECT_EQ(getpgid(run->pgid), run->pgid);
  EXPECT_NE(getpgid(run->pgid), getpgrp());
  EXPECT_NE(getsid(run->pgid), getsid(0));
  std::string monitor_stat = ReadFileOr("/proc/" + std::to_string(run->monitor_pid) + "/stat");
  ASSERT_NE(monitor_stat.find(')'), std::string::npos);
  int monitor_ppid = std::atoi(monitor_stat.c_str() + monitor_stat.rfind(')') + 4);
  // The agent's child, leading a session of its own: a signal to the agent's group does not
  // reach it, and a kill -9 of the agent re-parents it (AgentRestartKeepsARunningJob).
  EXPECT_EQ(monitor_ppid, getpid());
  EXPECT_EQ(getsid(run->monitor_pid), run->monitor_pid);
  // Which program the monitor is: the executable, or a fork of this one.
  std::error_code ec;
  EXPECT_EQ(std::filesystem::read_symlink("/proc/" + std::to_string(run->monitor_pid) + "/exe", ec),
            GetParam() ? std::filesystem::path(CORRAL_MONITOR_EXE)
                       : std::filesystem::read_symlink("/proc/self/exe"));
  EXPECT_TRUE(launcher.Check(*run).running);
  launcher.Signal(*run, SIGKILL);
  RunStatus st;
  ASSERT_TRUE(WaitFor([&] { return !(st = launcher.Check(*run)).running; }));
  EXPECT_EQ(st.exit_code, -SIGKILL);
  // And the agent reaps it: no zombie is left once it has ended.
  ASSERT_TRUE(WaitFor([&] {
    launcher.DrainExitFd();
    return !std::filesystem::exists("/proc/" + std::to_string(run->monitor_pid));
  }));
}

TEST_P(LauncherTest, KilledMonitorMeansTheRunIsWatchedByGroupThenLost) {
  TempDir state;
  PosixLauncher launcher(state.path(), "n", {}, {}, Cgroups::None(), Monitor());
  std::string go = state.path() + "/go";
  Result<LaunchedRun> run =
      launcher.Launch(ShellOrder("1.0", "while [ ! -f " + go + " ]; do sleep 0.02; done"));
  ASSERT_TRUE(run.ok());
  ASSERT_EQ(kill(run->monitor_pid, SIGKILL), 0);
  ASSERT_TRUE(WaitFor([&] { return !testing::Alive(run->monitor_pid); }));
  EXPECT_TRUE(launcher.Check(*run).running);  // the job lives on without its monitor
  testing::Touch(go);
  RunStatus st;
  ASSERT_TRUE(WaitFor([&] { return !(st = launcher.Check(*run)).running; }));
  EXPECT_EQ(st.exit_code, kExitLost);
  EXPECT_TRUE(st.vanished) << "no status was recorded: a loss, not a failure";
  EXPECT_TRUE(launcher.Check(*run).vanished) << "and so it stays when read again";
}

// A short job's launch is one process start: the exec'd monitor of an ended run takes the next
// run (its own environment, logs, exit code and record), where a forked one never does.
TEST_P(LauncherTest, AnEndedRunsMonitorTakesTheNextRun) {
  TempDir state;
  PosixLauncher launcher(state.path(), "n", {}, {}, Cgroups::None(), Monitor());
  Result<LaunchedRun> a = launcher.Launch(ShellOrder("1.0", "echo a"));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(WaitFor([&] { return !launcher.Check(*a).running; }));
  Result<LaunchedRun> b = launcher.Launch(ShellOrder("2.0", "echo \"$CORRAL_RUN\"; exit 4"));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->monitor_pid == a->monitor_pid, GetParam()) << "reused only where exec'd";
  EXPECT_NE(b->pgid, a->pgid);
  RunStatus st;
  ASSERT_TRUE(WaitFor([&] { return !(st = launcher.Check(*b)).running; }));
  EXPECT_EQ(st.exit_code, 4);
  EXPECT_FALSE(st.vanished);
  EXPECT_EQ(ReadFileOr(state.path() + "/runs/1.0.0/logs/stdout"), "a\n");
  EXPECT_EQ(ReadFileOr(state.path() + "/runs/2.0.0/logs/stdout"), "2.0\n");
  RunRecord rec = ReadRunRecord(state.path() + "/runs/2.0.0");
  EXPECT_EQ(rec.monitor_pid, b->monitor_pid);
  EXPECT_EQ(rec.pgids, b->pgids);
  // A third, still running, keeps the same monitor busy: a fourth launched meanwhile gets its own.
  Result<LaunchedRun> c = launcher.Launch(ShellOrder("3.0", "sleep 30"));
  Result<LaunchedRun> d = launcher.Launch(ShellOrder("4.0", "exit 0"));
  ASSERT_TRUE(c.ok() && d.ok());
  EXPECT_EQ(c->monitor_pid == a->monitor_pid, GetParam());
  EXPECT_NE(d->monitor_pid, c->monitor_pid);
  ASSERT_TRUE(WaitFor([&] { return !launcher.Check(*d).running; }));
  EXPECT_TRUE(launcher.Check(*c).running);
  launcher.Signal(*c, SIGKILL);
  ASSERT_TRUE(WaitFor([&] { return !(st = launcher.Check(*c)).running; }));
  EXPECT_EQ(st.exit_code, -SIGKILL);
}

// An idle monitor the agent no longer wants exits (no process is left behind), and so does one
// killed while idle: neither is handed a run, which starts in a new monitor.
TEST_P(LauncherTest, AMonitorLeftIdleOrKilledIsNotHandedARun) {
  TempDir state;
  PosixLauncher launcher(state.path(), "n", {}, {}, Cgroups::None(), Monitor());
  Result<LaunchedRun> a = launcher.Launch(ShellOrder("1.0", "true"));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(WaitFor([&] { return !launcher.Check(*a).running; }));
  ASSERT_TRUE(WaitFor(
      [&] {
        launcher.DrainExitFd();
        return !std::filesystem::exists("/proc/" + std::to_string(a->monitor_pid));
      },
      std::chrono::seconds(8)))
      << "idle past kMonitorReuseMs, then reaped";
  RunStatus st = RunToEnd(launcher, ShellOrder("2.0", "exit 5"));
  EXPECT_EQ(st.exit_code, 5);
  Result<LaunchedRun> c = launcher.Launch(ShellOrder("3.0", "true"));
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(WaitFor([&] { return !launcher.Check(*c).running; }));
  ASSERT_EQ(kill(c->monitor_pid, SIGKILL), 0);
  ASSERT_TRUE(WaitFor([&] { return !testing::Alive(c->monitor_pid); }));
  Result<LaunchedRun> d = launcher.Launch(ShellOrder("4.0", "exit 6"));
  ASSERT_TRUE(d.ok());
  EXPECT_NE(d->monitor_pid, c->monitor_pid);
  ASSERT_TRUE(WaitFor([&] { return !(st = launcher.Check(*d)).running; }));
  EXPECT_EQ(st.exit_code, 6);
  EXPECT_FALSE(st.vanished);
}

// The window for handing a monitor work runs from its replica's exit by the monitor's clock,
// not from when the agent saw it: an agent slow to look does not hand a run to a monitor that
// may be giving up waiting.
TEST_P(LauncherTest, AMonitorIsHandedARunOnlySoonAfterItsExit) {
  TempDir state;
  PosixLauncher launcher(state.path(), "n", {}, {}, Cgroups::None(), Monitor());
  Result<LaunchedRun> a = launcher.Launch(ShellOrder("1.0", "true"));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(WaitFor([&] { return ReadRunRecord(state.path() + "/runs/1.0.0").exited; }));
  usleep((internal::kMonitorReuseMs + 300) * 1000);
  ASSERT_FALSE(launcher.Check(*a).running);  // the agent sees the exit only now
  Result<LaunchedRun> b = launcher.Launch(ShellOrder("2.0", "exit 2"));
  ASSERT_TRUE(b.ok());
  EXPECT_NE(b->monitor_pid, a->monitor_pid);
  RunStatus st;
  ASSERT_TRUE(WaitFor([&] { return !(st = launcher.Check(*b)).running; }));
  EXPECT_EQ(st.exit_code, 2);
}

// The agent goes away (its launcher with it) while a run is on: the monitor sees it ends, records
// its exit for the next agent, and then exits instead of waiting for work.
TEST_P(LauncherTest, AMonitorWhoseAgentIsGoneFinishesItsRunThenExits) {
  TempDir state;
  std::string go = state.path() + "/go";
  Result<LaunchedRun> run = Internal("not launched");
  {
    PosixLauncher first(state.path(), "n", {}, {}, Cgroups::None(), Monitor());
    run = first.Launch(ShellOrder("1.0", "while [ ! -f " + go + " ]; do sleep 0.02; done; exit 7"));
    ASSERT_TRUE(run.ok());
  }
  PosixLauncher second(state.path(), "n", {}, {}, Cgroups::None(), Monitor());
  EXPECT_TRUE(second.Check(*run).running);
  testing::Touch(go);
  RunStatus st;
  ASSERT_TRUE(WaitFor([&] { return !(st = second.Check(*run)).running; }));
  EXPECT_EQ(st.exit_code, 7);
  // Not the second launcher's child, so this process reaps it: it must exit by itself, soon.
  int status = 0;
  EXPECT_TRUE(
      WaitFor([&] { return waitpid(run->monitor_pid, &status, WNOHANG) == run->monitor_pid; },
              std::chrono::seconds(3)));
}

// An interactive session's monitor ends it once its agent's lease goes unrenewed (the agent is
// gone), and an elastic replica's too (the head drops it from its run); a batch job beside them
// is never ended for that, and a session whose lease is renewed (a live agent, or a new one on
// the same state directory) goes on.
TEST_P(LauncherTest, AnUnrenewedAgentLeaseEndsSessionsAndElasticReplicasOnly) {
  TempDir gone_dir, live_dir;
  PosixLauncher gone(gone_dir.path(), "n", {}, {}, Cgroups::None(), Monitor());
  PosixLauncher live(live_dir.path(), "n", {}, {}, Cgroups::None(), Monitor());
  const std::string gone_lease = AgentLeasePath(gone_dir.path());
  const std::string live_lease = AgentLeasePath(live_dir.path());
  constexpr int64_t kLeaseMs = 600;
  gone.SetSessionLease(gone_lease, kLeaseMs);
  live.SetSessionLease(live_lease, kLeaseMs);
  // The lease runs from its last renewal, not from the launches after it (slow under ASan).
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(RenewAgentLease(gone_lease));
  ASSERT_TRUE(RenewAgentLease(live_lease));
  RunOrder session = ShellOrder("1.0", "sleep 60 & wait");
  session.interactive = true;
  RunOrder renewed = session;
  renewed.run_id = "2.0";
  RunOrder replica = ShellOrder("4.0", "sleep 60 & wait");
  replica.elastic = true;
  auto s = gone.Launch(session);
  auto b = gone.Launch(ShellOrder("3.0", "sleep 60"));
  auto r = live.Launch(renewed);
  auto e = gone.Launch(replica);
  ASSERT_TRUE(s.ok() && b.ok() && r.ok() && e.ok());
  RunStatus ended;
  ASSERT_TRUE(WaitFor([&] {
    (void)RenewAgentLease(live_lease);
    return !(ended = gone.Check(*s)).running;
  })) << "the session outlived its agent's lease";
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(took, kLeaseMs / 1000.0 - 0.1) << "ended before its lease ran out";
  EXPECT_LT(took, 3.0);
  EXPECT_EQ(ended.exit_code, -SIGKILL);
  EXPECT_FALSE(testing::Alive(s->pgid));
  ASSERT_TRUE(WaitFor([&] { return !(ended = gone.Check(*e)).running; }))
      << "the elastic replica outlived its agent's lease";
  EXPECT_EQ(ended.exit_code, -SIGKILL);
  EXPECT_FALSE(testing::Alive(e->pgid));
  for (int i = 0; i < 10; ++i) {  // two more terms: the others go on
    (void)RenewAgentLease(live_lease);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(gone.Check(*b).running) << "a batch job outlives its agent";
  EXPECT_TRUE(live.Check(*r).running) << "a renewed lease keeps its session";
  gone.Signal(*b, SIGKILL);
  live.Signal(*r, SIGKILL);
  EXPECT_TRUE(WaitFor([&] { return !gone.Check(*b).running && !live.Check(*r).running; }));
}

// An agent killed between recording a run and learning its monitor's pids: a restarted agent
// finds the run with no pids. It waits the monitor's start time before giving the run up (a
// slow monitor may still be coming), and then reports it vanished, not failed.
TEST_P(LauncherTest, ARunRecordedWithoutPidsIsGivenTimeThenReportedVanished) {
  TempDir state;
  PosixLauncher launcher(state.path(), "n", {}, {}, Cgroups::None(), Monitor());
  LaunchedRun run;
  run.order = ShellOrder("2.1", "true");
  run.started_at = SystemClock().Now();
  std::filesystem::create_directories(launcher.RunDir(run.key()));
  EXPECT_TRUE(launcher.Check(run).running) << "within the monitor's start time";
  run.started_at = SystemClock().Now() - kMonitorStartMs - 1;
  RunStatus st = launcher.Check(run);
  EXPECT_FALSE(st.running);
  EXPECT_EQ(st.exit_code, kExitLost);
  EXPECT_TRUE(st.vanished);
}

// A replica of T tasks: T processes, each in its own process group, with its own environment
// and its own log files.
RunOrder TaskOrder(const std::string& run_id, const std::string& script, int tasks) {
  RunOrder o = ShellOrder(run_id, script);
  o.gpus = {0, 1, 2};
  for (int t = 0; t < tasks; ++t) {
    o.task_envs.push_back({{"CORRAL_TASK", std::to_string(t)},
                           {"RANK", std::to_string(10 + t)},
                           {"CUDA_VISIBLE_DEVICES", std::to_string(t)}});
  }
  o.env = o.task_envs[0];
  return o;
}

TEST_P(LauncherTest, TasksEachGetTheirEnvironmentGroupAndLogs) {
  TempDir state;
  PosixLauncher launcher(state.path(), "n", {}, {}, Cgroups::None(), Monitor());
  std::string go = state.path() + "/go";
  RunOrder o = TaskOrder("5.1",
                         "echo rank=$RANK task=$CORRAL_TASK gpus=$CUDA_VISIBLE_DEVICES; "
                         "echo err$CORRAL_TASK >&2; while [ ! -f " +
                             go + " ]; do sleep 0.02; done",
                         3);
  Result<LaunchedRun> run = launcher.Launch(o);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  ASSERT_EQ(run->pgids.size(), 3u);
  EXPECT_EQ(run->pgids[0], run->pgid);
  for (int32_t pgid : run->pgids) {
    EXPECT_EQ(getpgid(pgid), pgid);  // each task leads its own group
  }
  EXPECT_NE(run->pgids[0], run->pgids[1]);
  EXPECT_TRUE(launcher.Check(*run).running);
  testing::Touch(go);
  RunStatus st;
  ASSERT_TRUE(WaitFor([&] { return !(st = launcher.Check(*run)).running; }));
  EXPECT_EQ(st.exit_code, 0);
  EXPECT_EQ(st.failed_task, -1);
  const std::string dir = state.path() + "/runs/5.1.0";
  EXPECT_EQ(ReadFileOr(dir + "/logs/stdout"), "rank=10 task=0 gpus=0\n");
  EXPECT_EQ(ReadFileOr(dir + "/logs/stdout.1"), "rank=11 task=1 gpus=1\n");
  EXPECT_EQ(ReadFileOr(dir + "/logs/stdout.2"), "rank=12 task=2 gpus=2\n");
  EXPECT_EQ(ReadFileOr(dir + "/logs/stderr.2"), "err2\n");
  EXPECT_EQ(*ReadRunLog(state.path(), "5.1", 0, 1, "stdout", 0, 100), "rank=11 task=1 gpus=1\n");
  EXPECT_EQ(ReadRunLog(state.path(), "5.1", 0, 7, "stdout", 0, 100).status().code(),
            ErrorCode::kNotFound);
}

// A task that ends 0 while others run is normal (rank 0 often ends last): the replica runs on.
TEST_P(LauncherTest, ATaskEndingCleanlyLeavesTheOthersRunning) {
  TempDir state;
  PosixLauncher launcher(state.path(), "n", {}, {}, Cgroups::None(), Monitor());
  std::string go = state.path() + "/go";
  Result<LaunchedRun> run = launcher.Launch(TaskOrder(
      "6.1", "[ $CORRAL_TASK = 0 ] && exit 0; while [ ! -f " + go + " ]; do sleep 0.02; done", 2));
  ASSERT_TRUE(run.ok());
  ASSERT_TRUE(
      WaitFor([&] { return getpgid(run->pgids[0]) < 0 || !testing::Alive(run->pgids[0]); }));
  EXPECT_TRUE(launcher.Check(*run).running);
  EXPECT_TRUE(testing::Alive(run->pgids[1]));
  testing::Touch(go);
  RunStatus st;
  ASSERT_TRUE(WaitFor([&] { return !(st = launcher.Check(*run)).running; }));
  EXPECT_EQ(st.exit_code, 0);
}

// The first task to fail stops the others: the stop signal, then SIGKILL after the grace for
// one that ignores it. The replica's exit code and failed task are the first failure's.
TEST_P(LauncherTest, AFailingTaskStopsTheOthers) {
  TempDir state;
  PosixLauncher launcher(state.path(), "n", {}, {}, Cgroups::None(), Monitor());
  RunOrder o = TaskOrder("7.1",
                         "case $CORRAL_TASK in 1) sleep 0.2; exit 3;; 2) trap '' TERM;; esac; "
                         "sleep 60 & wait; sleep 60",
                         3);
  o.stop_signal = SIGTERM;
  o.grace_ms = 1000;
  Result<LaunchedRun> run = launcher.Launch(o);
  ASSERT_TRUE(run.ok());
  RunStatus st;
  ASSERT_TRUE(WaitFor([&] { return !(st = launcher.Check(*run)).running; }));
  EXPECT_EQ(st.exit_code, 3);
  EXPECT_EQ(st.failed_task, 1);
  for (int32_t pgid : run->pgids) {
    EXPECT_NE(kill(-pgid, 0), 0) << "group " << pgid << " outlived the replica";
  }
}

}  // namespace
}  // namespace corral::agent
