// The agent's GPU monitor: metrics from the probe's samples, and the DCGM job mapping files.
#include "agent/gpu_monitor.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

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
};

TEST_F(GpuMonitorTest, MetricsCarryEachGpusUseWithIndexAndUuidLabels) {
  GpuMonitor m(&probe_, "");
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

TEST_F(GpuMonitorTest, SamplesNothingBeforeTheGpusAreKnown) {
  GpuMonitor m(&probe_, "");
  EXPECT_TRUE(m.Sample().empty());
  m.SetGpus(*probe_.Probe());
  SetUse("1 60 100\n");
  auto s = m.Sample();
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[1], (GpuSample{1, 60, 100LL * 1024 * 1024}));
  EXPECT_EQ(s[0], (GpuSample{0, 0, 0}));
}

TEST_F(GpuMonitorTest, EveryKnownGpuIsReportedAndOneThatFailsOrVanishesCarriesAFault) {
  GpuMonitor m(&probe_, "");
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

TEST_F(GpuMonitorTest, JobMapFilesFollowTheRunsOnEachGpu) {
  std::string map_dir = (dir_ / "map").string();
  fs::create_directories(map_dir);
  std::ofstream(map_dir + "/2") << "999\n";  // left by an earlier agent: GPU 2 is free now
  GpuMonitor m(&probe_, map_dir);
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
