// The frame of `corral top` from canned API answers: what it shows and how it fits.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/commands.h"

namespace corral::cli {
namespace {

using ::testing::HasSubstr;

TopSnapshot Snapshot() {
  TopSnapshot s;
  NodeView node1;
  node1.node.name = "node1";
  for (int i = 0; i < 4; ++i) {
    node1.node.gpus.push_back(Gpu{.index = i, .model = "H100"});
    if (i < 3) node1.gpu_samples.push_back(GpuSample{.index = i, .utilization_percent = i * 45});
  }  // 0, 45, 90; GPU 3 unmeasured
  node1.gpus_used = 3;
  node1.runs = {"7.1", "8.1"};
  NodeView node2;
  node2.node.name = "node2";
  node2.node.liveness = Liveness::kDown;
  node2.node.gpus.push_back(Gpu{.index = 0});
  s.nodes = {node1, node2};
  QueueView q;
  q.config.name = "default";
  q.config.quota_gpus = 2;
  q.used_gpus = 3;
  q.pending = 4;
  q.running = 2;
  s.queues = {q};
  s.revision = 42;
  return s;
}

TEST(TopRender, SummaryNodesHeatAndQueues) {
  std::vector<std::string> lines = RenderTop(Snapshot(), -1, -1);
  ASSERT_GE(lines.size(), 7u);
  // 3 of 5 GPUs allocated; mean of the measured ones (0, 45, 90) is 45%.
  EXPECT_THAT(lines[0], HasSubstr("2 nodes  3/5 GPUs allocated  45% busy  2 running  4 pending"));
  EXPECT_THAT(lines[0], HasSubstr("rev 42"));
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  EXPECT_THAT(all, ::testing::ContainsRegex("node1 +ready +3/4 +45% +\\[ =@\\?\\] +2"));
  EXPECT_THAT(all, ::testing::ContainsRegex("node2 +down +0/1 +- +\\[\\?\\] +0"));
  EXPECT_THAT(all, ::testing::ContainsRegex("default +2 +3 +4 +2"));
}

TEST(TopRender, CutToTheScreen) {
  std::vector<std::string> lines = RenderTop(Snapshot(), 20, 3);
  ASSERT_EQ(lines.size(), 3u);
  for (const auto& l : lines) EXPECT_LE(l.size(), 20u);
  EXPECT_EQ(lines[0], std::string("corral top  2 nodes ").substr(0, 20));
  EXPECT_TRUE(RenderTop(Snapshot(), 80, 0).empty());
}

TEST(TopRender, ShowsAnErrorLine) {
  TopSnapshot s;
  s.error = "cannot reach the head";
  std::vector<std::string> lines = RenderTop(s, -1, -1);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[1], "! cannot reach the head");
  EXPECT_THAT(lines[0], HasSubstr("0/0 GPUs allocated  busy unknown"));
}

}  // namespace
}  // namespace corral::cli
