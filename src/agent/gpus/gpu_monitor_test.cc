// The agent's GPU monitor: metrics from the probe's samples, and the DCGM job mapping files.
#include "agent/gpus/gpu_monitor.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "agent/node/fake_node_env.h"

namespace corral::agent {
namespace {

namespace fs = std::filesystem;

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class GpuMonitorTest : public ::testing::Test {
 protected:
  GpuMonitorTest()
      : dir_(fs::temp_directory_path() / ("gpu-monitor-" + std::to_string(getpid()))),
        probe_(3, "H100", "n1", (dir_ / "use").string()) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~GpuMonitorTest() override { fs::remove_all(dir_); }
  void SetUse(const std::string& text) { std::ofstream(dir_ / "use") << text; }

  fs::path dir_;
  SimulatedGpuProbe probe_;
  testing::FakeNodeEnv fake_;
};

TEST_F(GpuMonitorTest, MetricsCarryEachGpusUseWithIndexAndUuidLabels) {
  GpuMonitor m(&probe_, "", fake_.env());
  m.SetGpus(*probe_.Probe());
  SetUse("0 37 2048\n2 100\n");
  std::string text = m.RenderMetrics();
  EXPECT_NE(text.find("corral_gpu_utilization_ratio{gpu=\"0\",uuid=\"GPU-n1-0\"} 0.37"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("corral_gpu_utilization_ratio{gpu=\"1\",uuid=\"GPU-n1-1\"} 0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("corral_gpu_utilization_ratio{gpu=\"2\",uuid=\"GPU-n1-2\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("corral_gpu_memory_used_bytes{gpu=\"0\",uuid=\"GPU-n1-0\"} 2147483648"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("corral_gpu_memory_total_bytes{gpu=\"0\",uuid=\"GPU-n1-0\"} 85520809984"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE corral_gpu_utilization_ratio gauge"), std::string::npos);
  // A fresh sample at each scrape: the value follows the GPU.
  SetUse("0 5\n");
  EXPECT_NE(
      m.RenderMetrics().find("corral_gpu_utilization_ratio{gpu=\"0\",uuid=\"GPU-n1-0\"} 0.05"),
      std::string::npos);
}

// Each sync's sample is a health check: numbered, with its verdict (AssessGpu) and the Xids
// not yet delivered; /metrics shows the verdicts, Xid counts by code, ECC counts.
TEST_F(GpuMonitorTest, EachCheckAssessesTheGpusAndKeepsXidsUntilDelivered) {
  GpuMonitor m(&probe_, "", fake_.env());
  m.SetGpus(*probe_.Probe());
  auto first = m.SampleAndCheck();
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(first[0].check, 1u);
  EXPECT_EQ(first[0].health, GpuHealth::kOk);
  SetUse("0 xid 13\n1 xid 79\n2 dbe 1\n");
  auto second = m.SampleAndCheck();
  EXPECT_EQ(second[0].check, 2u);
  EXPECT_EQ(second[0].health, GpuHealth::kOk) << "an application Xid leaves the GPU ok";
  EXPECT_EQ(second[0].xids, std::vector<int32_t>{13});
  EXPECT_EQ(second[1].health, GpuHealth::kCritical);
  EXPECT_EQ(second[1].health_reason, "Xid 79 (fallen off the bus)");
  EXPECT_EQ(second[2].health, GpuHealth::kCritical);
  EXPECT_EQ(second[2].health_reason, "double-bit ECC errors 0 -> 1");
  // Not delivered (the sync failed): the next check carries the Xids again.
  auto third = m.SampleAndCheck();
  EXPECT_EQ(third[1].xids, std::vector<int32_t>{79});
  EXPECT_EQ(third[1].health, GpuHealth::kOk) << "nothing new since";
  m.HealthDelivered(third[1].check);
  EXPECT_TRUE(m.SampleAndCheck()[1].xids.empty());
  const std::string text = m.RenderMetrics();
  EXPECT_NE(text.find("corral_gpu_xid_total{gpu=\"1\",xid=\"79\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("corral_gpu_health{gpu=\"1\"} 0"), std::string::npos) << text;
  EXPECT_NE(text.find("corral_gpu_ecc_errors{gpu=\"2\",type=\"dbe\",counter=\"volatile\"} 1"),
            std::string::npos)
      << text;
}

// The node's health program speaks for every GPU: critical there is critical for each.
TEST_F(GpuMonitorTest, AHealthProgramsVerdictAppliesToEveryGpu) {
  const std::string script = (dir_ / "check").string();
  std::ofstream(script) << "#!/bin/sh\necho 'PCIe link degraded'\nexit 2\n";
  fs::permissions(script, fs::perms::owner_all);
  fake_.programs.Answer({.exited = true, .exit_code = 2, .stdout_text = "PCIe link degraded\n"});
  HealthProgramRunner runner(script, 60000, 5000, fake_.env());
  ASSERT_TRUE(fake_.clock.BlockUntilWaiting(1)) << "its first run ended: it waits an interval";
  GpuMonitor m(&probe_, "", fake_.env());
  m.SetGpus(*probe_.Probe());
  m.UseHealthProgram(&runner);
  auto s = m.SampleAndCheck();
  ASSERT_EQ(s.size(), 3u);
  for (const GpuSample& g : s) {
    EXPECT_EQ(g.health, GpuHealth::kCritical);
    EXPECT_EQ(g.health_reason, "health program: PCIe link degraded");
  }
}

TEST_F(GpuMonitorTest, SamplesNothingBeforeTheGpusAreKnown) {
  GpuMonitor m(&probe_, "", fake_.env());
  EXPECT_TRUE(m.Sample().empty());
  m.SetGpus(*probe_.Probe());
  SetUse("1 60 100\n");
  auto s = m.Sample();
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[1], (GpuSample{1, 60, 100LL * 1024 * 1024}));
  EXPECT_EQ(s[0], (GpuSample{0, 0, 0}));
}

TEST_F(GpuMonitorTest, EveryKnownGpuIsReportedAndOneThatFailsOrVanishesCarriesAFault) {
  GpuMonitor m(&probe_, "", fake_.env());
  m.SetGpus(*probe_.Probe());
  SetUse("0 fault NVML: GPU is lost\n2 gone\n1 70\n");
  auto s = m.Sample();
  ASSERT_EQ(s.size(), 3u) << "a vanished GPU is still reported, as faulty";
  EXPECT_EQ(s[0].fault, "NVML: GPU is lost");
  EXPECT_EQ(s[1], (GpuSample{1, 70, 0, ""}));
  EXPECT_EQ(s[2].index, 2);
  EXPECT_NE(s[2].fault.find("vanished"), std::string::npos) << s[2].fault;
  std::string metrics = m.RenderMetrics();
  EXPECT_NE(metrics.find("corral_gpu_healthy{gpu=\"0\",uuid=\"GPU-n1-0\"} 0"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("corral_gpu_healthy{gpu=\"1\",uuid=\"GPU-n1-1\"} 1"), std::string::npos);
  SetUse("");
  for (const GpuSample& x : m.Sample()) EXPECT_EQ(x.fault, "") << "GPU " << x.index << " healed";
}

// A check is numbered anew when the interval has passed on the agent's clock, not a
// millisecond before; in between, the last number is repeated.
TEST_F(GpuMonitorTest, ACheckIsNumberedAnewExactlyWhenTheIntervalHasPassed) {
  GpuMonitor m(&probe_, "", fake_.env());
  m.SetGpus(*probe_.Probe());
  m.SetCheckInterval(10 * kSecond);
  EXPECT_EQ(m.SampleAndCheck()[0].check, 1u);
  fake_.clock.Advance(10 * kSecond - 1);
  EXPECT_EQ(m.SampleAndCheck()[0].check, 1u) << "a millisecond short of the interval";
  fake_.clock.Advance(1);
  EXPECT_EQ(m.SampleAndCheck()[0].check, 2u);
  EXPECT_EQ(m.SampleAndCheck()[0].check, 2u);
  fake_.clock.Advance(kHour);
  EXPECT_EQ(m.SampleAndCheck()[0].check, 3u) << "an hour later is one new check, not 360";
}

// Mapping files are written only when what they say changes (a DCGM exporter rereads them).
TEST_F(GpuMonitorTest, AJobMapFileIsRewrittenOnlyWhenItsJobsChange) {
  GpuMonitor m(&probe_, "/map", fake_.env());
  m.SetGpus(*probe_.Probe());
  m.MapJobs({{0, {12}}});
  m.MapJobs({{0, {12}}});
  EXPECT_EQ(fake_.files.Writes(), 1);
  m.MapJobs({{0, {12, 15}}});
  EXPECT_EQ(fake_.files.Writes(), 2);
  EXPECT_EQ(fake_.files.Files(), (std::map<std::string, std::string>{{"/map/0", "12\n15\n"}}));
  m.MapJobs({});
  EXPECT_TRUE(fake_.files.Files().empty());
}

TEST_F(GpuMonitorTest, JobMapFilesFollowTheRunsOnEachGpu) {
  std::string map_dir = (dir_ / "map").string();
  fs::create_directories(map_dir);
  std::ofstream(map_dir + "/2") << "999\n";  // left by an earlier agent: GPU 2 is free now
  GpuMonitor m(&probe_, map_dir, RealNodeEnv());
  m.SetGpus(*probe_.Probe());
  m.MapJobs({{0, {12}}, {1, {12, 15}}});
  EXPECT_EQ(Read(map_dir + "/0"), "12\n");
  EXPECT_EQ(Read(map_dir + "/1"), "12\n15\n");  // a shared GPU lists both jobs
  EXPECT_FALSE(fs::exists(map_dir + "/2"));
  EXPECT_NE(m.RenderMetrics().find("corral_gpu_runs{gpu=\"1\",uuid=\"GPU-n1-1\"} 2"),
            std::string::npos);
  m.MapJobs({{1, {15}}});
  EXPECT_FALSE(fs::exists(map_dir + "/0"));
  EXPECT_EQ(Read(map_dir + "/1"), "15\n");
  m.MapJobs({});
  int files = 0;
  for (const auto& e : fs::directory_iterator(map_dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 0) << "no GPU file and no temporary file is left";
}

}  // namespace
}  // namespace corral::agent
