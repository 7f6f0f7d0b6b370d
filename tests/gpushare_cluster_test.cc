// Shares of a GPU end to end: a real head and agent (2 simulated GPUs), jobs submitted with
// `corral submit --gpus 0.25 --gpu-memory 4G` through the CLI. The agent preloads the share
// shim into each job's process; the process (a CUDA program in miniature on a stub
// libcuda.so.1) sees a 4 GiB device and cannot allocate past it; both shares sit on one GPU
// and `corral nodes` shows them with their holders.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "cluster_fixture.h"

namespace corral::testing {
namespace {

using Json = nlohmann::json;

TEST(GpuShareCluster, TwoSharesPackOnOneGpuAndEachProcessIsCappedAtItsShare) {
  LocalCluster c("gpushare", 1, 2);
  // Each job holds its share until the test has seen both (or a minute passed), however
  // slowly a loaded machine places them.
  const std::string release = c.dir() + "/release";
  const std::string script =
      "echo GPU=$CUDA_VISIBLE_DEVICES MILLI=$CORRAL_GPU_SHARE_MILLI "
      "ENFORCED=$CORRAL_GPU_SHARE_ENFORCED PRELOAD=$LD_PRELOAD; " +
      std::string(CORRAL_GPUSHARE_PROBE) +
      " info alloc gpa 3072 alloc gpa 2048; for i in $(seq 600); do [ -e " + release +
      " ] && break; sleep 0.1; done";
  std::vector<std::string> ids;
  for (int k = 0; k < 2; ++k) {
    ids.push_back(c.Submit({"--gpus", "0.25", "--gpu-memory", "4G", "--env",
                            std::string("LD_LIBRARY_PATH=") + CORRAL_STUB_CUDA_DIR, "--", "/bin/sh",
                            "-c", script}));
  }
  // While they run, the node lists both shares of the one GPU and who holds them.
  Json shared;
  EXPECT_TRUE(WaitUntil(60000, [&] {
    auto r = c.Corral({"nodes", "-o", "json"});
    Json nodes = Json::parse(r.out, nullptr, false);
    if (!nodes.is_array()) nodes = nodes.value("nodes", Json::array());
    for (const Json& n : nodes) {
      for (const Json& g : n.value("gpus", Json::array())) {
        if (g.value("shared_milli", 0) == 500) shared = g;
      }
    }
    return !shared.is_null();
  }));
  if (!shared.is_null()) {
    std::set<std::string> holders;
    for (const Json& s : shared["shares"]) holders.insert(std::to_string(s.value("job", 0)));
    EXPECT_EQ(holders, std::set<std::string>(ids.begin(), ids.end()));
    EXPECT_EQ(shared["shares"][0]["memory_mb"], 4096);
    EXPECT_EQ(shared["shares"][0]["isolation"], "memory");
  }
  std::ofstream(release) << "go\n";
  std::map<std::string, std::string> state;
  ASSERT_TRUE(WaitAllSucceeded([&](const std::vector<std::string>& a) { return c.Corral(a); }, ids,
                               60000, &state));
  std::set<std::string> gpus;
  for (const std::string& id : ids) {
    std::string out = c.Corral({"logs", id}).out;
    EXPECT_NE(out.find("MILLI=250 ENFORCED=1 PRELOAD=" + std::string(CORRAL_GPUSHARE_LIB)),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("total=4096 free=4096 device_total=4096\nrc=0\nrc=2\n"), std::string::npos)
        << out;
    gpus.insert(out.substr(out.find("GPU="), 5));
  }
  EXPECT_EQ(gpus.size(), 1u) << "the two shares should pack onto one GPU";
}

}  // namespace
}  // namespace corral::testing
