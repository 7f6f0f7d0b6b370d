// The node environment: the machine's clocks, program runner and files, and the fakes the
// agent's tests use in their place, held to the same contract.
#include "agent/node/node_env.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "agent/node/fake_node_env.h"

namespace corral::agent {
namespace {

// Both file systems keep the same contract: whole files replaced, removed, missing ones named.
void CheckFileContract(FileSystem& files, const std::string& dir) {
  ASSERT_TRUE(files.MakeDirs(dir + "/a/b").ok());
  ASSERT_TRUE(files.MakeDirs(dir + "/a/b").ok()) << "already there is fine";
  const std::string path = dir + "/a/b/f";
  Result<std::string> missing = files.Read(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.status().message().find(path), std::string::npos);
  ASSERT_TRUE(files.Replace(path, dir + "/a/b/.f.tmp", "one\n").ok());
  ASSERT_TRUE(files.Replace(path, dir + "/a/b/.f.tmp", "two\n").ok());
  EXPECT_EQ(*files.Read(path), "two\n");
  EXPECT_FALSE(files.Read(dir + "/a/b/.f.tmp").ok()) << "the scratch file is renamed away";
  ASSERT_TRUE(files.Remove(path).ok());
  EXPECT_FALSE(files.Read(path).ok());
  EXPECT_TRUE(files.Remove(path).ok()) << "already absent is fine";
}

TEST(NodeEnv, PosixFilesKeepTheContract) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("node-env-" + std::to_string(getpid()))).string();
  CheckFileContract(RealNodeEnv().files, dir);
  std::filesystem::remove_all(dir);
}

TEST(NodeEnv, MemoryFilesKeepTheContract) {
  testing::MemoryFileSystem files;
  CheckFileContract(files, "/state");
  EXPECT_EQ(files.Writes(), 2);
}

TEST(NodeEnv, TheMachinesProgramRunnerReportsStatusOutputAndSignal) {
  const ProgramRunner& run = RealNodeEnv().programs;
  Result<ProgramOutcome> out = run.Run({"/bin/sh", "-c", "echo hello; exit 3"}, 5000);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE(out->exited);
  EXPECT_EQ(out->exit_code, 3);
  EXPECT_EQ(out->stdout_text, "hello\n");
  out = run.Run({"/bin/sh", "-c", "kill -TERM $$"}, 5000);
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->exited);
  EXPECT_EQ(out->signal, SIGTERM);
  out = run.Run({"/nonexistent/program"}, 5000);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->exit_code, 127) << "exec failed in the child";
  EXPECT_FALSE(run.Run({}, 5000).ok()) << "no program";
}

TEST(NodeEnv, TheMachinesClockWaitsUntilDoneOrTheTime) {
  const NodeClock& clock = RealNodeEnv().clock;
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock lock(mu);
  const TimeMs t0 = clock.Steady().Now();
  EXPECT_FALSE(clock.WaitFor(lock, cv, 30, [] { return false; }));
  EXPECT_GE(clock.Steady().Now() - t0, 30);
  EXPECT_TRUE(clock.WaitFor(lock, cv, 60'000, [] { return true; }));
  EXPECT_GT(clock.Wall().Now(), 1'700'000'000'000) << "milliseconds since the epoch";
}

// A wait on the fake clock ends when the clock reaches its deadline, exactly, however long
// that is in virtual time; or when it is done, whatever the clock says.
TEST(FakeNodeClock, AWaitEndsExactlyAtItsDeadline) {
  testing::FakeNodeClock clock;
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<int> ended{0};
  std::atomic<bool> result{true};
  std::thread waiter([&] {
    std::unique_lock lock(mu);
    result = clock.WaitFor(lock, cv, kHour, [] { return false; });
    ++ended;
  });
  ASSERT_TRUE(clock.BlockUntilWaiting(1));
  clock.Advance(kHour - 1);
  ASSERT_TRUE(clock.BlockUntilWaiting(1));
  EXPECT_EQ(ended.load(), 0) << "a millisecond short";
  clock.Advance(1);
  waiter.join();
  EXPECT_EQ(ended.load(), 1);
  EXPECT_FALSE(result.load()) << "it timed out";
  EXPECT_EQ(clock.Wall().Now(), 1'000'000 + kHour);
  EXPECT_EQ(clock.Steady().Now(), clock.Wall().Now());
}

TEST(FakeNodeClock, AWaitDoneBeforeItsDeadlineSaysSo) {
  testing::FakeNodeClock clock;
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::atomic<bool> result{false};
  std::thread waiter([&] {
    std::unique_lock lock(mu);
    result = clock.WaitFor(lock, cv, kHour, [&] { return stop; });
  });
  ASSERT_TRUE(clock.BlockUntilWaiting(1));
  {
    std::lock_guard l(mu);
    stop = true;
  }
  cv.notify_all();
  waiter.join();
  EXPECT_TRUE(result.load());
  EXPECT_EQ(clock.Now(), 1'000'000) << "no time passed";
}

TEST(FakeProgramRunner, AnswersInOrderThenRepeatsTheLast) {
  testing::FakeProgramRunner run;
  EXPECT_TRUE(run.Run({"/a"}, 1)->exited) << "a clean exit when nothing was scripted";
  run.Answer({.exited = true, .exit_code = 1});
  run.Answer({.killed = true});
  EXPECT_EQ(run.Run({"/b"}, 1)->exit_code, 1);
  EXPECT_TRUE(run.Run({"/c"}, 1)->killed);
  EXPECT_TRUE(run.Run({"/d"}, 1)->killed);
  EXPECT_EQ(run.Runs(), 4);
  EXPECT_EQ(run.LastArgv(), std::vector<std::string>{"/d"});
}

}  // namespace
}  // namespace corral::agent
