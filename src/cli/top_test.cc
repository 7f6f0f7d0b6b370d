// The frame of `corral top` from canned API answers: what it shows and how it fits.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/commands.h"

namespace corral::cli {
namespace {

using ::testing::HasSubstr;

TopSnapshot Snapshot() {
  TopSnapshot s;
  Json gpus = Json::array();
  for (int i = 0; i < 4; ++i) {
    Json g = {{"index", i}, {"model", "H100"}};
    if (i < 3) g["utilization_percent"] = i * 45;  // 0, 45, 90; GPU 3 unmeasured
    gpus.push_back(g);
  }
  s.nodes = Json::array({Json{{"name", "node1"},
                              {"state", "ready"},
                              {"gpus", gpus},
                              {"gpus_used", 3},
                              {"runs", {"7.1", "8.1"}}},
                         Json{{"name", "node2"},
                              {"state", "down"},
                              {"gpus", Json::array({Json{{"index", 0}}})},
                              {"gpus_used", 0},
                              {"runs", Json::array()}}});
  s.queues = Json::array({Json{
      {"name", "default"}, {"quota_gpus", 2}, {"used_gpus", 3}, {"pending", 4}, {"running", 2}}});
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
