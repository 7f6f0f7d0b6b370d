// The node health program (Slurm's HealthCheckProgram contract): exit status to verdict, the
// reason from stdout, a program that hangs killed at the limit and reported.
#include "agent/gpus/health_program.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "agent/node/fake_node_env.h"
#include "agent/test_util.h"

namespace corral::agent {
namespace {

class HealthProgramTest : public ::testing::Test {
 protected:
  std::string Script(const std::string& name, const std::string& body) {
    std::string path = "/tmp/corral-health-" + std::to_string(getpid()) + "-" + name;
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    chmod(path.c_str(), 0755);
    paths_.push_back(path);
    return path;
  }
  ~HealthProgramTest() override {
    for (const auto& p : paths_) unlink(p.c_str());
  }
  std::vector<std::string> paths_;
};

ProgramOutcome Exited(int code, std::string out = "") {
  return {.exited = true, .exit_code = code, .stdout_text = std::move(out)};
}

TEST(HealthVerdict, ExitStatusIsTheVerdictAndStdoutTheReason) {
  HealthProgramResult ok = HealthVerdict("/c", 5000, Exited(0, "fine\n"));
  EXPECT_EQ(ok.health, GpuHealth::kOk);
  HealthProgramResult warn = HealthVerdict("/c", 5000, Exited(1, "fan 2 slow\nmore\n"));
  EXPECT_EQ(warn.health, GpuHealth::kWarn);
  EXPECT_EQ(warn.reason, "fan 2 slow") << "the first line";
  HealthProgramResult crit = HealthVerdict("/c", 5000, Exited(2, "GPU 3 missing\n"));
  EXPECT_EQ(crit.health, GpuHealth::kCritical);
  EXPECT_EQ(crit.reason, "GPU 3 missing");
  EXPECT_EQ(HealthVerdict("/c", 5000, Exited(2)).reason, "health program /c exited 2");
  HealthProgramResult odd = HealthVerdict("/c", 5000, Exited(7));
  EXPECT_EQ(odd.health, GpuHealth::kWarn);
  EXPECT_EQ(odd.reason, "health program /c failed: exit status 7");
  HealthProgramResult signalled = HealthVerdict("/c", 5000, {.signal = 9});
  EXPECT_EQ(signalled.reason, "health program /c failed: signal 9");
  HealthProgramResult killed = HealthVerdict("/c", 5000, {.killed = true});
  EXPECT_TRUE(killed.killed);
  EXPECT_EQ(killed.health, GpuHealth::kWarn);
  EXPECT_EQ(killed.reason, "health program /c killed after 5 s (its limit)");
}

// The real program runner end to end: a script's status and first line, a missing program.
TEST_F(HealthProgramTest, ARealProgramsStatusAndFirstLineAreItsVerdict) {
  const ProgramRunner& real = RealNodeEnv().programs;
  auto crit =
      RunHealthProgram(Script("crit", "echo 'GPU 3 missing'; echo more; exit 2"), 5000, real);
  ASSERT_TRUE(crit.ok()) << crit.status().ToString();
  EXPECT_EQ(crit->health, GpuHealth::kCritical);
  EXPECT_EQ(crit->reason, "GPU 3 missing");
  auto missing = RunHealthProgram("/nonexistent/check", 5000, real);
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->health, GpuHealth::kWarn);
  EXPECT_NE(missing->reason.find("exit status 127"), std::string::npos) << missing->reason;
}

// A program that hangs (and a child it started) is killed at the limit, and that is reported.
TEST_F(HealthProgramTest, AHangingProgramIsKilledAtTheLimitAndReported) {
  const std::string child_pid = "/tmp/corral-health-" + std::to_string(getpid()) + "-child";
  paths_.push_back(child_pid);
  const std::string path =
      Script("hang", "sleep 30 & echo $! > " + child_pid + "; echo checking; sleep 30; exit 0");
  auto t0 = std::chrono::steady_clock::now();
  auto r = RunHealthProgram(path, 700, RealNodeEnv().programs);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->killed);
  EXPECT_EQ(r->health, GpuHealth::kWarn);
  EXPECT_NE(r->reason.find("killed after"), std::string::npos) << r->reason;
  EXPECT_GE(took, 0.6);
  EXPECT_LT(took, 5.0) << "killed at the limit, not waited for";
  const int child = std::stoi(testing::ReadFileOr(child_pid, "0"));
  ASSERT_GT(child, 0);
  EXPECT_TRUE(testing::WaitFor([&] { return !testing::Alive(child); }))
      << "its child was killed too";
}

// At once, then every interval on the agent's clock: not a millisecond before it.
TEST(HealthProgramRunnerTest, RunsAtOnceAndThenExactlyEveryInterval) {
  testing::FakeNodeEnv fake;
  fake.programs.Answer(Exited(2, "disk full\n"));
  HealthProgramRunner runner("/etc/corral/check", kMinute, 5000, fake.env());
  ASSERT_TRUE(fake.clock.BlockUntilWaiting(1));
  EXPECT_EQ(fake.programs.Runs(), 1);
  EXPECT_EQ(fake.programs.LastArgv(), std::vector<std::string>{"/etc/corral/check"});
  ASSERT_TRUE(runner.Last());
  EXPECT_EQ(runner.Last()->health, GpuHealth::kCritical);
  EXPECT_EQ(runner.Last()->reason, "disk full");
  fake.clock.Advance(kMinute - 1);
  ASSERT_TRUE(fake.clock.BlockUntilWaiting(1));
  EXPECT_EQ(fake.programs.Runs(), 1) << "a millisecond short of the interval";
  fake.programs.Answer(Exited(0));
  fake.clock.Advance(1);
  ASSERT_TRUE(fake.clock.BlockUntilWaiting(1));
  EXPECT_EQ(fake.programs.Runs(), 2);
  EXPECT_EQ(runner.Last()->health, GpuHealth::kOk) << "the last run's verdict";
  for (int i = 0; i < 3; ++i) {
    fake.clock.Advance(kMinute);
    ASSERT_TRUE(fake.clock.BlockUntilWaiting(1));
  }
  EXPECT_EQ(fake.programs.Runs(), 5);
}

}  // namespace
}  // namespace corral::agent
