// The node health program (Slurm's HealthCheckProgram contract): exit status to verdict, the
// reason from stdout, a program that hangs killed at the limit and reported.
#include "agent/gpus/health_program.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

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

TEST_F(HealthProgramTest, ExitStatusIsTheVerdictAndStdoutTheReason) {
  auto ok = RunHealthProgram(Script("ok", "echo fine; exit 0"), 5000);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->health, GpuHealth::kOk);
  auto warn = RunHealthProgram(Script("warn", "echo 'fan 2 slow'; echo more; exit 1"), 5000);
  EXPECT_EQ(warn->health, GpuHealth::kWarn);
  EXPECT_EQ(warn->reason, "fan 2 slow") << "the first line";
  auto crit = RunHealthProgram(Script("crit", "echo 'GPU 3 missing'; exit 2"), 5000);
  EXPECT_EQ(crit->health, GpuHealth::kCritical);
  EXPECT_EQ(crit->reason, "GPU 3 missing");
  auto odd = RunHealthProgram(Script("odd", "exit 7"), 5000);
  EXPECT_EQ(odd->health, GpuHealth::kWarn);
  EXPECT_NE(odd->reason.find("exit status 7"), std::string::npos) << odd->reason;
  auto missing = RunHealthProgram("/nonexistent/check", 5000);
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->health, GpuHealth::kWarn);
  EXPECT_NE(missing->reason.find("exit status 127"), std::string::npos) << missing->reason;
}

// A program that hangs (and a child it started) is killed at the limit, and that is reported.
TEST_F(HealthProgramTest, AHangingProgramIsKilledAtTheLimitAndReported) {
  const std::string marker = "/tmp/corral-health-" + std::to_string(getpid()) + "-child";
  const std::string path =
      Script("hang", "(sleep 30; touch " + marker + ") & echo checking; sleep 30; exit 0");
  auto t0 = std::chrono::steady_clock::now();
  auto r = RunHealthProgram(path, 700);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->killed);
  EXPECT_EQ(r->health, GpuHealth::kWarn);
  EXPECT_NE(r->reason.find("killed after"), std::string::npos) << r->reason;
  EXPECT_GE(took, 0.6);
  EXPECT_LT(took, 5.0) << "killed at the limit, not waited for";
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_NE(access(marker.c_str(), F_OK), 0) << "its child was killed too";
}

TEST_F(HealthProgramTest, TheRunnerRunsAtOnceAndThenEveryInterval) {
  const std::string count = "/tmp/corral-health-" + std::to_string(getpid()) + "-count";
  paths_.push_back(count);
  HealthProgramRunner runner(Script("count", "echo x >> " + count + "; echo 'disk full'; exit 2"),
                             100, 5000);
  for (int i = 0; i < 100 && !runner.Last(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(runner.Last());
  EXPECT_EQ(runner.Last()->health, GpuHealth::kCritical);
  EXPECT_EQ(runner.Last()->reason, "disk full");
  std::this_thread::sleep_for(std::chrono::milliseconds(450));
  std::ifstream in(count);
  int lines = 0;
  for (std::string l; std::getline(in, l);) ++lines;
  EXPECT_GE(lines, 3) << "every 100 ms";
}

}  // namespace
}  // namespace corral::agent
