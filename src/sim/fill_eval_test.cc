// The Alibaba trace reader and the fill evaluation on a small hand-made trace.
#include "sim/fill_eval.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace corral::sim {
namespace {

const std::string kDir = std::string(CORRAL_SIM_TESTDATA) + "/alibaba_small";

TEST(AlibabaTrace, ReadsNodesAndTasks) {
  auto nodes = ReadAlibabaNodes(kDir + "/openb_node_list_gpu_node.csv");
  ASSERT_TRUE(nodes.ok()) << nodes.status().message();
  ASSERT_EQ(nodes->size(), 3u);
  EXPECT_EQ((*nodes)[2].model, "P100");
  EXPECT_EQ((*nodes)[2].gpus, 2);
  auto tasks = ReadAlibabaTasks(kDir + "/openb_pod_list_default.csv");
  ASSERT_TRUE(tasks.ok()) << tasks.status().message();
  ASSERT_EQ(tasks->size(), 6u);
  EXPECT_TRUE((*tasks)[0].IsShare());
  EXPECT_EQ((*tasks)[0].GpuMilli(), 500);
  EXPECT_FALSE((*tasks)[3].IsShare());
  EXPECT_EQ((*tasks)[3].GpuMilli(), 2000);
  EXPECT_EQ((*tasks)[4].GpuMilli(), 0);
}

TEST(AlibabaTrace, BadCellsNameTheFileLineAndColumn) {
  std::string path = ::testing::TempDir() + "/bad_pods.csv";
  std::ofstream(path) << "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
                      << "p0,2000,4096,1,1500,\n";
  auto t = ReadAlibabaTasks(path);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find(":2: column 'gpu_milli'"), std::string::npos)
      << t.status().message();
  std::ofstream(path) << "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
                      << "p0,two,4096,1,500,\n";
  t = ReadAlibabaTasks(path);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("column 'cpu_milli': got \"two\""), std::string::npos);
  std::remove(path.c_str());
}

TEST(FillEval, SharingLeavesLessUnallocatedThanRoundingUpAndRunsAreRepeatable) {
  auto nodes = ReadAlibabaNodes(kDir + "/openb_node_list_gpu_node.csv");
  auto tasks = ReadAlibabaTasks(kDir + "/openb_pod_list_default.csv");
  ASSERT_TRUE(nodes.ok() && tasks.ok());
  FillSummary corral = RunFill(*nodes, *tasks, FillPolicy::kCorral, 20, 7);
  FillSummary whole = RunFill(*nodes, *tasks, FillPolicy::kWholeGpus, 20, 7);
  FillSummary fgd = RunFill(*nodes, *tasks, FillPolicy::kFgd, 20, 7);
  FillSummary best = RunFill(*nodes, *tasks, FillPolicy::kBestFit, 20, 7);
  EXPECT_EQ(corral.capacity_milli, 10000);
  ASSERT_EQ(corral.runs.size(), 20u);
  for (const FillSummary* s : {&corral, &whole, &fgd, &best}) {
    for (const FillRun& r : s->runs) {
      EXPECT_GE(r.unallocated, 0.0) << FillPolicyName(s->policy);
      EXPECT_LE(r.unallocated, 1.0) << FillPolicyName(s->policy);
      EXPECT_GT(r.placed, 0);
    }
  }
  // Rounding a 0.25 share up to a GPU wastes 0.75 of it.
  EXPECT_LT(corral.Mean(&FillRun::unallocated), whole.Mean(&FillRun::unallocated));
  FillSummary again = RunFill(*nodes, *tasks, FillPolicy::kCorral, 20, 7);
  for (size_t k = 0; k < corral.runs.size(); ++k) {
    EXPECT_EQ(corral.runs[k].placed, again.runs[k].placed);
    EXPECT_EQ(corral.runs[k].unallocated, again.runs[k].unallocated);
  }
}

}  // namespace
}  // namespace corral::sim
