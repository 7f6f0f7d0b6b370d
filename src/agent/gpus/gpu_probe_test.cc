#include "agent/gpus/gpu_probe.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>

namespace corral::agent {
namespace {

TEST(NvmlGpuProbeTest, ReadsExactlyWhatTheFakeLibraryReports) {
  setenv("FAKE_NVML_GPUS", "A100-SXM4-40GB:40960,A100-SXM4-40GB:40960:1,H100 80GB HBM3:81559", 1);
  unsetenv("FAKE_NVML_INIT_ERROR");
  NvmlGpuProbe probe(FAKE_NVML_PATH);
  Result<std::vector<Gpu>> gpus = probe.Probe();
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  ASSERT_EQ(gpus->size(), 3u);
  EXPECT_EQ((*gpus)[0], (Gpu{0, "GPU-fake-0", "A100", 40960, 0, true}));
  EXPECT_EQ((*gpus)[1], (Gpu{1, "GPU-fake-1", "A100", 40960, 1, true}));
  EXPECT_EQ((*gpus)[2], (Gpu{2, "GPU-fake-2", "H100", 81559, 0, true}));
  // Each GPU's /dev/nvidia minor, as the driver numbers them (runs' device cgroups use it).
  EXPECT_EQ(probe.DeviceMinors(), (std::map<int32_t, int32_t>{{0, 7}, {1, 6}, {2, 5}}));
  EXPECT_TRUE(SimulatedGpuProbe(2, "SimGPU").DeviceMinors().empty()) << "no devices to guard";
}

// A GPU in MIG mode is offered as its MIG devices, each a GPU of its own: its memory, its
// UUID (by which CUDA_VISIBLE_DEVICES names it), its parent's group and device node, and its
// parent's utilisation (NVML has none per MIG device).
TEST(NvmlGpuProbeTest, MigDevicesAreGpusOfTheirOwn) {
  setenv("FAKE_NVML_GPUS", "A100-SXM4-40GB:40960,A100-SXM4-40GB:40960:1,H100 80GB HBM3:81559", 1);
  setenv("FAKE_NVML_MIG", "1:1g.5gb:4864,1:3g.20gb:19968", 1);
  setenv("FAKE_NVML_USE", "0:0,60:2048,10:0", 1);
  unsetenv("FAKE_NVML_INIT_ERROR");
  NvmlGpuProbe probe(FAKE_NVML_PATH);
  Result<std::vector<Gpu>> gpus = probe.Probe();
  Result<std::vector<GpuSample>> samples = probe.Sample();
  unsetenv("FAKE_NVML_MIG");
  unsetenv("FAKE_NVML_USE");
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  ASSERT_EQ(gpus->size(), 4u);
  EXPECT_EQ((*gpus)[0], (Gpu{0, "GPU-fake-0", "A100", 40960, 0, true}));
  EXPECT_EQ((*gpus)[1], (Gpu{1, "MIG-fake-1-0", "A100-MIG-1g.5gb", 4864, 1, true}));
  EXPECT_EQ((*gpus)[2], (Gpu{2, "MIG-fake-1-1", "A100-MIG-3g.20gb", 19968, 1, true}));
  EXPECT_EQ((*gpus)[3], (Gpu{3, "GPU-fake-2", "H100", 81559, 0, true}));
  EXPECT_EQ(probe.DeviceMinors(), (std::map<int32_t, int32_t>{{0, 7}, {1, 6}, {2, 6}, {3, 5}}));
  EXPECT_EQ(probe.VisibleDeviceNames(),
            (std::map<int32_t, std::string>{
                {0, "GPU-fake-0"}, {1, "MIG-fake-1-0"}, {2, "MIG-fake-1-1"}, {3, "GPU-fake-2"}}));
  ASSERT_TRUE(samples.ok()) << samples.status().ToString();
  ASSERT_EQ(samples->size(), 4u);
  EXPECT_EQ((*samples)[1], (GpuSample{1, 60, 2048LL * 1024 * 1024}));
  EXPECT_EQ((*samples)[2], (GpuSample{2, 60, 2048LL * 1024 * 1024}));
  EXPECT_EQ((*samples)[3], (GpuSample{3, 10, 0}));
  // A MIG device has its parent's temperature (the fake's default, 40).
  EXPECT_EQ(probe.Temperatures(), (std::map<int32_t, int32_t>{{0, 40}, {1, 40}, {2, 40}, {3, 40}}));
  // Without MIG, GPUs keep their indices in CUDA_VISIBLE_DEVICES.
  ASSERT_TRUE(probe.Probe().ok());
  EXPECT_TRUE(probe.VisibleDeviceNames().empty());
}

TEST(NvmlGpuProbeTest, SamplesUtilizationAndMemoryInUse) {
  setenv("FAKE_NVML_GPUS", "A100:40960,H100:81559", 1);
  setenv("FAKE_NVML_USE", "35:1024,100:0", 1);
  setenv("FAKE_NVML_TEMP", "38,71", 1);
  unsetenv("FAKE_NVML_INIT_ERROR");
  NvmlGpuProbe probe(FAKE_NVML_PATH);
  EXPECT_TRUE(probe.Temperatures().empty()) << "nothing read before a sample";
  Result<std::vector<GpuSample>> s = probe.Sample();
  unsetenv("FAKE_NVML_USE");
  unsetenv("FAKE_NVML_TEMP");
  EXPECT_EQ(probe.Temperatures(), (std::map<int32_t, int32_t>{{0, 38}, {1, 71}}));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->size(), 2u);
  EXPECT_EQ((*s)[0], (GpuSample{0, 35, 1024LL * 1024 * 1024}));
  EXPECT_EQ((*s)[1], (GpuSample{1, 100, 0}));
}

// ECC counters, retired pages and Xid events through NVML's calls and event set (the fake's
// FAKE_NVML_HEALTH file): each Xid is read once, and only those after the set was opened.
TEST(NvmlGpuProbeTest, ReadsEccCountersRetiredPagesAndXidEvents) {
  setenv("FAKE_NVML_GPUS", "A100:40960,A100:40960", 1);
  unsetenv("FAKE_NVML_INIT_ERROR");
  const std::string health = "/tmp/fake-nvml-health-" + std::to_string(getpid());
  std::ofstream(health) << "0 xid 13\n";  // before the agent watched: not delivered
  setenv("FAKE_NVML_HEALTH", health.c_str(), 1);
  NvmlGpuProbe probe(FAKE_NVML_PATH);
  auto first = probe.ReadHealth();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->size(), 2u);
  EXPECT_TRUE((*first)[0].xids.empty());
  EXPECT_EQ((*first)[0].counters.ecc_dbe_volatile, 0);
  EXPECT_EQ((*first)[1].counters.retired_pages, 0);
  std::ofstream(health, std::ios::app) << "1 xid 79\n1 dbe 2\n1 sbe 5\n1 retired 3\n1 pending\n"
                                       << "0 xid 31\n";
  auto second = probe.ReadHealth();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ((*second)[0].xids, std::vector<int32_t>{31});
  EXPECT_EQ((*second)[1].xids, std::vector<int32_t>{79});
  EXPECT_EQ((*second)[1].counters.ecc_dbe_volatile, 2);
  EXPECT_EQ((*second)[1].counters.ecc_dbe_aggregate, 2);
  EXPECT_EQ((*second)[1].counters.ecc_sbe_volatile, 5);
  EXPECT_EQ((*second)[1].counters.retired_pages, 3);
  EXPECT_TRUE((*second)[1].counters.retirement_pending);
  EXPECT_EQ((*second)[0].counters.ecc_dbe_volatile, 0);
  auto third = probe.ReadHealth();
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE((*third)[0].xids.empty() && (*third)[1].xids.empty()) << "each Xid once";
  unsetenv("FAKE_NVML_HEALTH");
  std::remove(health.c_str());
}

TEST(NvmlGpuProbeTest, SampleInitFailureIsAnError) {
  setenv("FAKE_NVML_INIT_ERROR", "9", 1);
  Result<std::vector<GpuSample>> s = NvmlGpuProbe(FAKE_NVML_PATH).Sample();
  unsetenv("FAKE_NVML_INIT_ERROR");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("nvmlInit_v2"), std::string::npos);
}

TEST(NvmlGpuProbeTest, ALostGpuIsAFaultAndTheOthersAreStillMeasured) {
  setenv("FAKE_NVML_GPUS", "A100:40960,A100:40960,A100:40960", 1);
  setenv("FAKE_NVML_USE", "10:0,20:0,30:0", 1);
  setenv("FAKE_NVML_LOST", "1", 1);
  unsetenv("FAKE_NVML_INIT_ERROR");
  Result<std::vector<GpuSample>> s = NvmlGpuProbe(FAKE_NVML_PATH).Sample();
  unsetenv("FAKE_NVML_USE");
  unsetenv("FAKE_NVML_LOST");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->size(), 3u);
  EXPECT_EQ((*s)[0], (GpuSample{0, 10, 0, ""}));
  EXPECT_EQ((*s)[2], (GpuSample{2, 30, 0, ""}));
  EXPECT_EQ((*s)[1].index, 1);
  EXPECT_NE((*s)[1].fault.find("nvmlDeviceGetMemoryInfo"), std::string::npos) << (*s)[1].fault;
  EXPECT_NE((*s)[1].fault.find("GPU is lost"), std::string::npos) << (*s)[1].fault;
}

TEST(SimulatedGpuProbeTest, FaultAndGoneLinesFailTheirGpusProbe) {
  std::string file = ::testing::TempDir() + "/sim-fault-" + std::to_string(getpid());
  std::ofstream(file) << "0 fault Xid 79: fell off the bus\n1 gone\n2 40\n";
  auto s = SimulatedGpuProbe(3, "SimGPU", "n", file).Sample();
  std::remove(file.c_str());
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, (std::vector<GpuSample>{{0, 0, 0, "Xid 79: fell off the bus"}, {2, 40, 0, ""}}));
}

TEST(SimulatedGpuProbeTest, UseComesFromItsFileAndIgnoresBadLines) {
  std::string file = ::testing::TempDir() + "/sim-use-" + std::to_string(getpid());
  SimulatedGpuProbe probe(3, "SimGPU", "n", file);
  auto none = probe.Sample();  // no file yet: idle GPUs
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, (std::vector<GpuSample>{{0, 0, 0}, {1, 0, 0}, {2, 0, 0}}));
  {
    std::ofstream out(file);
    out << "1 80 512\nbanana\n7 50\n2 250\n";
  }
  auto s = probe.Sample();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)[1], (GpuSample{1, 80, 512LL * 1024 * 1024}));
  EXPECT_EQ((*s)[2].utilization_percent, 100) << "clamped to 100";
  EXPECT_EQ((*s)[0].utilization_percent, 0);
  std::remove(file.c_str());
}

TEST(NvmlGpuProbeTest, ZeroGpus) {
  setenv("FAKE_NVML_GPUS", "", 1);
  unsetenv("FAKE_NVML_INIT_ERROR");
  Result<std::vector<Gpu>> gpus = NvmlGpuProbe(FAKE_NVML_PATH).Probe();
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  EXPECT_TRUE(gpus->empty());
}

TEST(NvmlGpuProbeTest, InitFailureIsAnErrorNamingTheCall) {
  setenv("FAKE_NVML_GPUS", "A100:40960", 1);
  setenv("FAKE_NVML_INIT_ERROR", "9", 1);
  Result<std::vector<Gpu>> gpus = NvmlGpuProbe(FAKE_NVML_PATH).Probe();
  unsetenv("FAKE_NVML_INIT_ERROR");
  ASSERT_FALSE(gpus.ok());
  EXPECT_NE(gpus.status().message().find("nvmlInit_v2"), std::string::npos)
      << gpus.status().message();
  EXPECT_NE(gpus.status().message().find("Driver Not Loaded"), std::string::npos);
}

TEST(NvmlGpuProbeTest, MissingLibraryIsAClearError) {
  Result<std::vector<Gpu>> gpus = NvmlGpuProbe("/nonexistent/libnvidia-ml.so.1").Probe();
  ASSERT_FALSE(gpus.ok());
  EXPECT_EQ(gpus.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(gpus.status().message().find("cannot load NVML"), std::string::npos);
  EXPECT_NE(gpus.status().message().find("/nonexistent/libnvidia-ml.so.1"), std::string::npos);
}

TEST(NvmlGpuProbeTest, LibraryWithoutNvmlSymbolsIsAnError) {
  Result<std::vector<Gpu>> gpus = NvmlGpuProbe("libm.so.6").Probe();
  ASSERT_FALSE(gpus.ok());
  EXPECT_NE(gpus.status().message().find("lacks nvmlInit_v2"), std::string::npos)
      << gpus.status().message();
}

TEST(SimulatedGpuProbeTest, TwoGroupsOfHalf) {
  Result<std::vector<Gpu>> gpus = SimulatedGpuProbe(4, "H100", "n1").Probe();
  ASSERT_TRUE(gpus.ok());
  ASSERT_EQ(gpus->size(), 4u);
  EXPECT_EQ((*gpus)[0], (Gpu{0, "GPU-n1-0", "H100", 81559, 0, true}));
  EXPECT_EQ((*gpus)[1].group, 0);
  EXPECT_EQ((*gpus)[2].group, 1);
  EXPECT_EQ((*gpus)[3], (Gpu{3, "GPU-n1-3", "H100", 81559, 1, true}));
  EXPECT_EQ(SimulatedGpuProbe(1, "X").Probe()->at(0).group, 0);
}

TEST(ParseSimulateGpusTest, AcceptsCountAndModel) {
  struct Case {
    const char* text;
    int32_t count;
    const char* model;
  };
  for (const Case& c : {Case{"4", 4, "SimGPU"}, Case{"8xH100", 8, "H100"}, Case{"0", 0, "SimGPU"},
                        Case{"2XA100-40GB", 2, "A100-40GB"}}) {
    Result<SimulatedGpus> r = ParseSimulateGpus(c.text);
    ASSERT_TRUE(r.ok()) << c.text << ": " << r.status().message();
    EXPECT_EQ(r->count, c.count) << c.text;
    EXPECT_EQ(r->model, c.model) << c.text;
  }
}

TEST(ParseSimulateGpusTest, RejectsBadInputNamingFlagAndValue) {
  for (const char* text : {"", "x", "abc", "-1", "8x", "4.5", "2000", "8xH 100", "x8"}) {
    Result<SimulatedGpus> r = ParseSimulateGpus(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("--simulate-gpus"), std::string::npos);
    EXPECT_NE(r.status().message().find(std::string("\"") + text + "\""), std::string::npos)
        << r.status().message();
  }
}

TEST(ShortGpuModelTest, StripsVendorAndVariant) {
  EXPECT_EQ(ShortGpuModel("NVIDIA H100 80GB HBM3"), "H100");
  EXPECT_EQ(ShortGpuModel("NVIDIA A100-SXM4-40GB"), "A100");
  EXPECT_EQ(ShortGpuModel("Tesla V100-SXM2-16GB"), "V100");
  EXPECT_EQ(ShortGpuModel("NVIDIA GeForce RTX 4090"), "RTX-4090");
  EXPECT_EQ(ShortGpuModel("NVIDIA L4"), "L4");
}

}  // namespace
}  // namespace corral::agent
