// The cluster's series for the dashboard: one point a step, bounded, filtered by time, and a
// point's counts taken from the head's views of nodes and queues.
#include "head/cluster_series.h"

#include <gtest/gtest.h>

namespace corral::head {
namespace {

NodeView NodeWith(const std::string& name, int32_t gpus, int32_t used, std::vector<int32_t> utils,
                  Liveness liveness = Liveness::kAlive) {
  NodeView v;
  v.node.name = name;
  v.node.liveness = liveness;
  for (int32_t i = 0; i < gpus; ++i) v.node.gpus.push_back(Gpu{.index = i});
  v.gpus_used = used;
  for (size_t i = 0; i < utils.size(); ++i) {
    v.gpu_samples.push_back(
        GpuSample{.index = static_cast<int32_t>(i), .utilization_percent = utils[i]});
  }
  return v;
}

QueueView QueueWith(const std::string& name, int32_t pending, int32_t running) {
  QueueView q;
  q.config.name = name;
  q.pending = pending;
  q.running = running;
  return q;
}

TEST(ClusterSeries, APointCountsTheLiveNodesGpusTheirMeanUseAndEveryQueuesJobs) {
  std::vector<NodeView> nodes = {NodeWith("n1", 4, 3, {90, 60, 0, 11}), NodeWith("n2", 2, 1, {}),
                                 NodeWith("n3", 8, 8, {100, 100}, Liveness::kDown)};
  nodes[1].gpu_samples.push_back(GpuSample{.index = 0, .utilization_percent = 50});
  nodes[1].gpu_samples.push_back(GpuSample{.index = 1, .utilization_percent = 99, .fault = "gone"});
  ClusterPoint p = SampleCluster(nodes, {QueueWith("a", 2, 1), QueueWith("a/b", 3, 2)}, 5000);
  EXPECT_EQ(p.at, 5000);
  EXPECT_EQ(p.gpus, 6) << "a down node's GPUs are not counted";
  EXPECT_EQ(p.gpus_used, 4);
  EXPECT_EQ(p.gpu_util, 42) << "(90+60+0+11+50)/5, a faulted GPU and a down node left out";
  EXPECT_EQ(p.pending, 5);
  EXPECT_EQ(p.running, 3);
  EXPECT_EQ(SampleCluster({NodeWith("n", 2, 0, {})}, {}, 0).gpu_util, -1) << "nothing measured";
}

TEST(ClusterSeries, OnePointAStepTheNewestKeptAndFilteredByTime) {
  ClusterSeries s(kMinute, 3);
  EXPECT_TRUE(s.Due(10 * kMinute + 5)) << "no point yet";
  s.Add({.at = 10 * kMinute + 5, .pending = 1});
  EXPECT_FALSE(s.Due(10 * kMinute + 59 * kSecond)) << "same step";
  EXPECT_TRUE(s.Due(11 * kMinute)) << "the next step, even under a minute after the point";
  for (int i = 1; i <= 3; ++i) s.Add({.at = (10 + i) * kMinute, .pending = 1 + i});
  ASSERT_EQ(s.size(), 3u) << "bounded";
  ClusterSeriesView all = s.Since(0);
  ASSERT_EQ(all.points.size(), 3u);
  EXPECT_EQ(all.points.front().pending, 2) << "the oldest went first";
  EXPECT_EQ(all.points.back().pending, 4);
  EXPECT_EQ(all.step_ms, kMinute);
  EXPECT_EQ(all.capacity, 3);
  ClusterSeriesView recent = s.Since(12 * kMinute);
  ASSERT_EQ(recent.points.size(), 2u);
  EXPECT_EQ(recent.points.front().at, 12 * kMinute);
}

TEST(ClusterSeries, JsonPointsAreCompactArraysWithNullForUnmeasured) {
  ClusterSeriesView v{kMinute, 360, {{1000, 8, 3, 57, 4, 2}, {61000, 8, 0, -1, 0, 0}}};
  Json j = ToJson(v);
  EXPECT_EQ(j["step_ms"], kMinute);
  EXPECT_EQ(j["capacity"], 360);
  EXPECT_EQ(j["points"][0], Json::parse("[1000, 8, 3, 57, 4, 2]"));
  EXPECT_EQ(j["points"][1], Json::parse("[61000, 8, 0, null, 0, 0]"));
}

}  // namespace
}  // namespace corral::head
