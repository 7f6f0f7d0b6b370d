// A gang with a limit of replicas per node (Slurm's --nodes N: N distinct machines).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "sched/scheduler.h"
#include "sched/testing_builders.h"

namespace corral::sched {
namespace {

using testing::MakeJob;
using testing::MakeNode;
using testing::ReasonOf;
using testing::Running;

// Replicas of job `id` on each node, in the pass's decisions; empty if it was not placed.
std::map<std::string, int> PerNode(const Decisions& d, JobId id) {
  std::map<std::string, int> out;
  for (const PlaceDecision& p : d.place) {
    if (p.job != id) continue;
    for (const ReplicaPlacement& r : p.placement) ++out[r.node];
  }
  return out;
}

TEST(SpreadTest, OnePerNodePutsEachReplicaOnADifferentNode) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.UpsertNode(MakeNode("n2").Gpus(8));
  s.AddPending(MakeJob(1).Gpus(1).Replicas(2));             // packs: one node
  s.AddPending(MakeJob(2).Gpus(1).Replicas(2).PerNode(1));  // spreads: two nodes
  Decisions d = s.Schedule(1000);
  EXPECT_EQ(PerNode(d, 1).size(), 1u);
  EXPECT_EQ(PerNode(d, 2), (std::map<std::string, int>{{"n1", 1}, {"n2", 1}}));
}

TEST(SpreadTest, EachNodesPartGoesToTheTightestNodeThatHoldsIt) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.UpsertNode(MakeNode("n2").Gpus(8));
  s.UpsertNode(MakeNode("n3").Gpus(8));
  s.UpsertNode(MakeNode("n4").Gpus(8));
  // n2 and n3 have 4 GPUs free: two 4-GPU replicas, one per node, go there and leave n1 and
  // n4 whole.
  s.AddRunning(Running(MakeJob(100).Gpus(4), {{"n2", {0, 1, 2, 3}}}));
  s.AddRunning(Running(MakeJob(101).Gpus(4), {{"n3", {0, 1, 2, 3}}}));
  s.AddPending(MakeJob(1).Gpus(4).Replicas(2).PerNode(1));
  Decisions d = s.Schedule(1000);
  EXPECT_EQ(PerNode(d, 1), (std::map<std::string, int>{{"n2", 1}, {"n3", 1}}));
}

TEST(SpreadTest, ALimitAboveOneCapsEachNode) {
  Scheduler s;
  for (const char* n : {"n1", "n2", "n3"}) s.UpsertNode(MakeNode(n).Gpus(8));
  s.AddPending(MakeJob(1).Gpus(1).Replicas(5).PerNode(2));
  Decisions d = s.Schedule(1000);
  std::map<std::string, int> per = PerNode(d, 1);
  int total = 0;
  for (const auto& [node, k] : per) {
    EXPECT_LE(k, 2) << node;
    total += k;
  }
  EXPECT_EQ(total, 5);
  EXPECT_EQ(per.size(), 3u);
}

TEST(SpreadTest, MoreReplicasThanNodesNeverFitsAndSaysWhy) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.UpsertNode(MakeNode("n2").Gpus(8));
  std::string why;
  EXPECT_EQ(s.Admit(MakeJob(1).Gpus(1).Replicas(3).PerNode(1), &why), Fit::kInfeasible);
  EXPECT_NE(why.find("at most 1 on one node"), std::string::npos) << why;
  EXPECT_NE(why.find("hold only 2"), std::string::npos) << why;
  EXPECT_NE(s.Admit(MakeJob(2).Gpus(1).Replicas(3), &why), Fit::kInfeasible);
}

TEST(SpreadTest, WaitsForASecondNodeRatherThanDoublingUp) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.UpsertNode(MakeNode("n2").Gpus(8));
  // n2 is full until t=5000; n1 alone could hold both replicas, but not one per node.
  s.AddRunning(Running(MakeJob(100).Gpus(8).Limit(5000), {{"n2", {0, 1, 2, 3, 4, 5, 6, 7}}}));
  s.AddPending(MakeJob(1).Gpus(2).Replicas(2).PerNode(1).Limit(10000));
  Decisions d = s.Schedule(1000);
  EXPECT_TRUE(PerNode(d, 1).empty());
  // It holds a reservation on both nodes (the what-if and the placer agree on the limit).
  ASSERT_EQ(d.reservations.size(), 1u);
  EXPECT_EQ(d.reservations[0].nodes, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_NE(ReasonOf(d, 1).find("reserved"), std::string::npos) << ReasonOf(d, 1);
  // A later packed job of the same shape is not skipped as "the same class".
  s.AddPending(MakeJob(2).Gpus(2).Replicas(2).Limit(1000));
  d = s.Schedule(2000);
  EXPECT_EQ(PerNode(d, 2), (std::map<std::string, int>{{"n1", 2}}));
}

TEST(SpreadTest, SharesOfAGpuSpreadToo) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(2));
  s.UpsertNode(MakeNode("n2").Gpus(2));
  s.AddPending(MakeJob(1).ShareMilli(250).Replicas(2).PerNode(1));
  Decisions d = s.Schedule(1000);
  EXPECT_EQ(PerNode(d, 1), (std::map<std::string, int>{{"n1", 1}, {"n2", 1}}));
}

TEST(SpreadTest, PreemptionFreesOneReplicaOnEachNode) {
  SchedulerConfig c;
  c.min_runtime_before_preempt_ms = 0;
  Scheduler s(c);
  s.UpsertNode(MakeNode("n1").Gpus(4));
  s.UpsertNode(MakeNode("n2").Gpus(4));
  // n1 has 3 GPUs free; n2 is held by a preemptible low-priority run.
  s.AddRunning(Running(MakeJob(100).Gpus(1), {{"n1", {0}}}));
  s.AddRunning(Running(MakeJob(101).Gpus(4).Preemptible(), {{"n2", {0, 1, 2, 3}}}));
  s.AddPending(MakeJob(1).Gpus(2).Replicas(2).PerNode(1).Priority(10));
  Decisions d = s.Schedule(1000);
  ASSERT_EQ(d.preempt.size(), 1u);
  EXPECT_EQ(d.preempt[0].job, 101u);
}

}  // namespace
}  // namespace corral::sched
