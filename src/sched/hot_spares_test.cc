// Hot spares of elastic runs (elastic.h): held on nodes without the run's replicas while no job
// waits, a lost replica replaced on one in the pass that learns of the loss, given up to any
// pending job before a shrink or a preemption, held again in the growth order.
#include <gtest/gtest.h>

#include "sched/scheduler.h"
#include "sched/testing_builders.h"

namespace corral::sched {
namespace {

using testing::MakeJob;
using testing::MakeNode;
using testing::NoMinimumRuntime;
using testing::Placed;
using testing::PlaceOf;
using testing::ResizeOf;
using testing::Running;

// Four one-GPU hosts; job 1 (1:2, one replica per host, `spares` hot spares) runs on h1 and h2,
// and job 100 holds h4: h3 is the one free host.
void StartOnHostsOneAndTwo(Scheduler& s, int spares, bool preemptible = false) {
  for (const char* n : {"h1", "h2", "h3", "h4"}) s.UpsertNode(MakeNode(n).Gpus(1));
  s.AddRunning(Running(MakeJob(100).Gpus(1), {{"h4", {0}}}));
  s.AddRunning(Running(
      MakeJob(1).Gpus(1).Elastic(1, 2).PerNode(1).HotSpares(spares).Preemptible(preemptible),
      {{"h1", {0}}, {"h2", {0}}}));
}

// Host h2 is lost with job 1's second replica: the driver marks it down and the run goes on
// with the replica on h1 (what the head does for a lost node).
void LoseHostTwo(Scheduler& s) {
  s.UpsertNode(MakeNode("h2").Gpus(1).Unschedulable());
  s.ResizeRunning(1, {{"h1", {0}}});
}

TEST(HotSpareTest, HeldAtTheMaximumOnAFreeHostWithoutAReplica) {
  Scheduler s(NoMinimumRuntime());
  StartOnHostsOneAndTwo(s, 1);
  Decisions d = s.Schedule(1000);
  EXPECT_EQ(ResizeOf(d, 1), nullptr);  // a spare is no replica: the run keeps two
  const std::vector<ReplicaPlacement> spares = s.HotSpares(1);
  ASSERT_EQ(spares.size(), 1u);
  EXPECT_EQ(spares[0].node, "h3");
  // Held: counted against the queue and no longer free.
  EXPECT_EQ(s.QueueAllocatedGpus("default"), 4);
  EXPECT_EQ(s.GetStats().free_gpus, 0);
  // The next pass holds the same one.
  (void)s.Schedule(2000);
  ASSERT_EQ(s.HotSpares(1).size(), 1u);
  EXPECT_EQ(s.HotSpares(1)[0].node, "h3");
}

TEST(HotSpareTest, NoneWithoutHotSpares) {
  Scheduler s(NoMinimumRuntime());
  StartOnHostsOneAndTwo(s, 0);
  (void)s.Schedule(1000);
  EXPECT_TRUE(s.HotSpares(1).empty());
  EXPECT_EQ(s.GetStats().free_gpus, 1);
}

TEST(HotSpareTest, ALostReplicaIsReplacedOnTheSpareInThePassThatLearnsOfTheLoss) {
  Scheduler s(NoMinimumRuntime());
  StartOnHostsOneAndTwo(s, 1);
  (void)s.Schedule(1000);
  ASSERT_EQ(s.HotSpares(1).size(), 1u);
  LoseHostTwo(s);
  // A job arrives at the same time: without the spare it would take h3 first (the run grows
  // only when nothing waits). Its priority is below the run's, so it shrinks nothing.
  s.AddPending(MakeJob(5).Gpus(1).Priority(-1));
  Decisions d = s.Schedule(2000);
  const ResizeDecision* r = ResizeOf(d, 1);
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(r->added.size(), 1u);
  EXPECT_EQ(r->added[0].node, "h3");
  EXPECT_TRUE(r->removed.empty());
  EXPECT_NE(r->reason.find("hot spare"), std::string::npos) << r->reason;
  EXPECT_FALSE(Placed(d, 5));
  EXPECT_TRUE(s.HotSpares(1).empty());  // no free host left to hold another
}

TEST(HotSpareTest, WithoutASpareTheWaitingJobTakesTheFreeHostFirst) {
  Scheduler s(NoMinimumRuntime());
  StartOnHostsOneAndTwo(s, 0);
  (void)s.Schedule(1000);
  LoseHostTwo(s);
  s.AddPending(MakeJob(5).Gpus(1).Priority(-1));
  Decisions d = s.Schedule(2000);
  EXPECT_EQ(ResizeOf(d, 1), nullptr);
  const PlaceDecision* p = PlaceOf(d, 5);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->placement[0].node, "h3");
}

TEST(HotSpareTest, APendingJobTakesASpareBeforeShrinkingTheRun) {
  Scheduler s(NoMinimumRuntime());
  StartOnHostsOneAndTwo(s, 1, /*preemptible=*/true);
  (void)s.Schedule(1000);
  ASSERT_EQ(s.HotSpares(1).size(), 1u);
  // A job of a higher priority: with h3 held it would take the run's replica above its
  // minimum; the spare goes first.
  s.AddPending(MakeJob(2).Gpus(1).Priority(10));
  Decisions d = s.Schedule(2000);
  const PlaceDecision* p = PlaceOf(d, 2);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->placement[0].node, "h3");
  EXPECT_EQ(ResizeOf(d, 1), nullptr);
  EXPECT_TRUE(d.preempt.empty());
  EXPECT_TRUE(s.HotSpares(1).empty());
}

TEST(HotSpareTest, SparesAreHeldAgainWhenTheHostFrees) {
  Scheduler s(NoMinimumRuntime());
  StartOnHostsOneAndTwo(s, 1, /*preemptible=*/true);
  (void)s.Schedule(1000);
  s.AddPending(MakeJob(2).Gpus(1).Priority(10));
  ASSERT_TRUE(Placed(s.Schedule(2000), 2));
  EXPECT_TRUE(s.HotSpares(1).empty());
  s.RemoveRunning(2);
  (void)s.Schedule(3000);
  ASSERT_EQ(s.HotSpares(1).size(), 1u);
  EXPECT_EQ(s.HotSpares(1)[0].node, "h3");
}

TEST(HotSpareTest, AnotherRunsGrowthComesBeforeASpare) {
  Scheduler s(NoMinimumRuntime());
  for (const char* n : {"h1", "h2", "h3", "h4"}) s.UpsertNode(MakeNode(n).Gpus(1));
  s.AddRunning(Running(MakeJob(1).Gpus(1).Elastic(1, 2).PerNode(1).HotSpares(1),
                       {{"h1", {0}}, {"h2", {0}}}));
  s.AddRunning(Running(MakeJob(3).Gpus(1).Elastic(1, 2).PerNode(1), {{"h4", {0}}}));
  Decisions d = s.Schedule(1000);
  const ResizeDecision* r = ResizeOf(d, 3);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->added[0].node, "h3");
  EXPECT_TRUE(s.HotSpares(1).empty());
  // A fifth host: now the spare.
  s.UpsertNode(MakeNode("h5").Gpus(1));
  (void)s.Schedule(2000);
  ASSERT_EQ(s.HotSpares(1).size(), 1u);
  EXPECT_EQ(s.HotSpares(1)[0].node, "h5");
}

TEST(HotSpareTest, ASpareOnAHostThatGoesDownIsDroppedNotUsed) {
  Scheduler s(NoMinimumRuntime());
  StartOnHostsOneAndTwo(s, 1);
  (void)s.Schedule(1000);
  ASSERT_EQ(s.HotSpares(1).size(), 1u);
  s.UpsertNode(MakeNode("h3").Gpus(1).Unschedulable());
  LoseHostTwo(s);
  Decisions d = s.Schedule(2000);
  EXPECT_EQ(ResizeOf(d, 1), nullptr);
  EXPECT_TRUE(s.HotSpares(1).empty());
  EXPECT_EQ(s.QueueAllocatedGpus("default"), 2);  // job 100 and the replica on h1
}

TEST(HotSpareTest, ASpareOnARemovedNodeIsUnchargedAndTheRunEndsClean) {
  Scheduler s(NoMinimumRuntime());
  StartOnHostsOneAndTwo(s, 1);
  (void)s.Schedule(1000);
  s.RemoveNode("h3");
  EXPECT_TRUE(s.HotSpares(1).empty());
  EXPECT_EQ(s.QueueAllocatedGpus("default"), 3);
  s.RemoveRunning(1);
  EXPECT_EQ(s.QueueAllocatedGpus("default"), 1);
  EXPECT_EQ(s.GetStats().free_gpus, 2);
}

TEST(HotSpareTest, TheModelSummaryCountsSparesAsFree) {
  Scheduler a(NoMinimumRuntime()), b(NoMinimumRuntime());
  StartOnHostsOneAndTwo(a, 1);
  StartOnHostsOneAndTwo(b, 1);
  (void)a.Schedule(1000);
  ASSERT_EQ(a.HotSpares(1).size(), 1u);
  EXPECT_EQ(a.ModelSummary(), b.ModelSummary());
}

}  // namespace
}  // namespace corral::sched
