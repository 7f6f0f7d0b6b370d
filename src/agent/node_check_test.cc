// `corral agent --check`'s parts on the fake NVML (src/testing), a fake nvidia-smi, CDI specs
// and health programs written here, and on a machine with no GPU at all.
#include "agent/node_check.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include "agent/test_util.h"

namespace corral::agent {
namespace {

using testing::TempDir;

std::string Script(const std::string& path, const std::string& body) {
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  chmod(path.c_str(), 0755);
  return path;
}

const CheckPart& Part(const std::vector<CheckPart>& parts, const std::string& name) {
  for (const CheckPart& p : parts) {
    if (p.name == name) return p;
  }
  static const CheckPart none{"(missing)", CheckVerdict::kFail, "", {}};
  return none;
}

class NodeCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("FAKE_NVML_GPUS", "H100 80GB HBM3:81559,A100-SXM4-40GB:40960", 1);
    setenv("FAKE_NVML_MIG", "1:1g.5gb:4864", 1);
    setenv("FAKE_NVML_DRIVER", "550.54.15", 1);
    unsetenv("FAKE_NVML_INIT_ERROR");
    in_.cgroups = false;
    in_.crun = dir_.path() + "/no-crun";
    in_.cdi_dirs = {dir_.path() + "/cdi"};
    in_.cdi_kind = "nvidia.com/gpu";
  }
  void TearDown() override {
    unsetenv("FAKE_NVML_MIG");
    unsetenv("FAKE_NVML_DRIVER");
  }
  std::vector<CheckPart> Check(GpuProbe* probe, const NvmlGpuProbe* nvml) {
    in_.probe = probe;
    in_.nvml = nvml;
    return CheckNode(in_);
  }
  TempDir dir_;
  NodeCheckInputs in_;
};

TEST_F(NodeCheckTest, FakeNvmlAgreesWithNvidiaSmiAndEachPartSaysWhatItFound) {
  NvmlGpuProbe probe(FAKE_NVML_PATH);
  in_.nvidia_smi = Script(dir_.path() + "/nvidia-smi",
                          "echo 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-fake-0)'\n"
                          "echo 'GPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-fake-1)'\n"
                          "echo '  MIG 1g.5gb      Device  0: (UUID: MIG-fake-1-0)'");
  mkdir((dir_.path() + "/cdi").c_str(), 0755);
  std::ofstream(dir_.path() + "/cdi/nvidia.json")
      << R"({"cdiVersion":"0.6.0","kind":"nvidia.com/gpu","devices":[)"
      << R"({"name":"0","containerEdits":{"deviceNodes":[{"path":"/dev/null"}]}},)"
      << R"({"name":"1","containerEdits":{"deviceNodes":[{"path":"/dev/null"}]}}]})";
  in_.gpushare_lib = "/opt/corral/bin/libcorral_gpushare.so";
  in_.health_program = Script(dir_.path() + "/health", "echo fine; exit 0");
  in_.reach_head = [] { return Status::Ok(); };
  auto parts = Check(&probe, &probe);
  const CheckPart& nvml = Part(parts, "NVML");
  EXPECT_EQ(nvml.verdict, CheckVerdict::kOk) << nvml.summary;
  EXPECT_NE(nvml.summary.find("driver 550.54.15, 2 GPU(s)"), std::string::npos) << nvml.summary;
  ASSERT_EQ(nvml.detail.size(), 4u);
  EXPECT_EQ(nvml.detail[0], "physical GPU 0: MIG off");
  EXPECT_EQ(nvml.detail[1], "physical GPU 1: MIG on");
  EXPECT_NE(nvml.detail[2].find("GPU 0: H100, 81559 MiB, GPU-fake-0"), std::string::npos);
  EXPECT_NE(nvml.detail[3].find("MIG-fake-1-0"), std::string::npos) << nvml.detail[3];
  EXPECT_EQ(Part(parts, "nvidia-smi").verdict, CheckVerdict::kOk)
      << Part(parts, "nvidia-smi").summary;
  EXPECT_EQ(Part(parts, "cgroups").verdict, CheckVerdict::kSkip);
  EXPECT_EQ(Part(parts, "container runtime").verdict, CheckVerdict::kWarn);
  EXPECT_EQ(Part(parts, "CDI spec").verdict, CheckVerdict::kOk) << Part(parts, "CDI spec").summary;
  EXPECT_EQ(Part(parts, "share shim").verdict, CheckVerdict::kOk);
  EXPECT_EQ(Part(parts, "MPS").verdict, CheckVerdict::kWarn);
  EXPECT_EQ(Part(parts, "health program").verdict, CheckVerdict::kOk);
  EXPECT_EQ(Part(parts, "head").verdict, CheckVerdict::kOk);
  std::string text;
  EXPECT_EQ(RenderCheck(parts, &text), 0) << text;
  EXPECT_NE(text.find("the agent can run here"), std::string::npos) << text;
}

TEST_F(NodeCheckTest, EachFailedPartMakesTheCheckFailAndIsNamed) {
  NvmlGpuProbe probe(FAKE_NVML_PATH);
  unsetenv("FAKE_NVML_MIG");
  // nvidia-smi lists a GPU the agent does not see; the CDI spec is missing; the health program
  // says critical; the head is down.
  in_.nvidia_smi = Script(dir_.path() + "/nvidia-smi",
                          "echo 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-fake-0)'\n"
                          "echo 'GPU 1: NVIDIA A100 (UUID: GPU-other)'");
  in_.health_program = Script(dir_.path() + "/health", "echo fan 3 failed; exit 2");
  in_.reach_head = [] { return Unavailable("http://10.0.0.1:7070: connection refused"); };
  auto parts = Check(&probe, &probe);
  const CheckPart& smi = Part(parts, "nvidia-smi");
  EXPECT_EQ(smi.verdict, CheckVerdict::kFail);
  ASSERT_EQ(smi.detail.size(), 2u);
  EXPECT_EQ(smi.detail[0], "the agent's GPU-fake-1 is not listed");
  EXPECT_EQ(smi.detail[1], "GPU-other is listed but the agent does not see it");
  EXPECT_EQ(Part(parts, "CDI spec").verdict, CheckVerdict::kWarn);
  EXPECT_NE(Part(parts, "CDI spec").summary.find("nvidia.com/gpu=0"), std::string::npos);
  EXPECT_EQ(Part(parts, "health program").verdict, CheckVerdict::kFail);
  EXPECT_NE(Part(parts, "health program").summary.find("critical: fan 3 failed"), std::string::npos)
      << Part(parts, "health program").summary;
  std::string text;
  EXPECT_EQ(RenderCheck(parts, &text), 1);
  EXPECT_NE(text.find("failed: nvidia-smi, health program, head\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  FAIL  head"), std::string::npos) << text;
}

TEST_F(NodeCheckTest, NoGpuAtAllFailsNvmlWithTheReason) {
  NvmlGpuProbe probe(dir_.path() + "/libnvidia-ml.so.1");  // no driver here
  in_.cgroups = true;
  in_.cgroup_root = dir_.path() + "/no-cgroups";
  auto parts = Check(&probe, &probe);
  const CheckPart& nvml = Part(parts, "NVML");
  EXPECT_EQ(nvml.verdict, CheckVerdict::kFail);
  EXPECT_NE(nvml.summary.find("cannot load NVML"), std::string::npos) << nvml.summary;
  EXPECT_EQ(Part(parts, "nvidia-smi").verdict, CheckVerdict::kSkip);
  EXPECT_EQ(Part(parts, "CDI spec").verdict, CheckVerdict::kSkip);
  EXPECT_EQ(Part(parts, "cgroups").verdict, CheckVerdict::kWarn) << Part(parts, "cgroups").summary;
  EXPECT_EQ(Part(parts, "head").verdict, CheckVerdict::kSkip);
  std::string text;
  EXPECT_EQ(RenderCheck(parts, &text), 1);
  EXPECT_NE(text.find("failed: NVML\n"), std::string::npos) << text;
}

TEST_F(NodeCheckTest, SimulatedGpusNeedNoDriver) {
  SimulatedGpuProbe probe(2, "SimGPU");
  auto parts = Check(&probe, nullptr);
  EXPECT_EQ(Part(parts, "NVML").verdict, CheckVerdict::kOk);
  EXPECT_EQ(Part(parts, "NVML").summary, "simulated GPUs (--simulate-gpus): 2");
  EXPECT_EQ(Part(parts, "nvidia-smi").verdict, CheckVerdict::kSkip);
}

TEST(NodeCheck, UuidsOfARealNvidiaSmiListing) {
  const std::string listing =
      "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-5c1e2c4f-8a34-11ee-b9d1-0242ac120002)\n"
      "  MIG 3g.40gb     Device  0: (UUID: MIG-1f3c8a9e-0b2d-5e6f-9a7b-3c4d5e6f7a8b)\n"
      "GPU 1: NVIDIA H200 (UUID: GPU-0a1b2c3d-4e5f-6789-abcd-ef0123456789)\n";
  EXPECT_EQ(UuidsOfSmiList(listing),
            (std::vector<std::string>{"GPU-5c1e2c4f-8a34-11ee-b9d1-0242ac120002",
                                      "MIG-1f3c8a9e-0b2d-5e6f-9a7b-3c4d5e6f7a8b",
                                      "GPU-0a1b2c3d-4e5f-6789-abcd-ef0123456789"}));
}

}  // namespace
}  // namespace corral::agent
