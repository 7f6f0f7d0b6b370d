// Elastic jobs in the scheduler (elastic.h): start at the minimum, grow into idle GPUs only
// when nothing waits (by fair share), shrink instead of being preempted (a queue reclaiming its
// quota takes what a run borrows beyond its own), preempted whole below the minimum.
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

// Four one-GPU nodes, one replica per node (torchrun's one agent per host).
void AddFourHosts(Scheduler& s) {
  for (const char* n : {"h1", "h2", "h3", "h4"}) s.UpsertNode(MakeNode(n).Gpus(1));
}

TEST(ElasticTest, StartsWithTheMinimumWhileOtherNodesAreBusy) {
  Scheduler s(NoMinimumRuntime());
  AddFourHosts(s);
  s.AddRunning(Running(MakeJob(100).Gpus(1), {{"h1", {0}}}));
  s.AddRunning(Running(MakeJob(101).Gpus(1), {{"h2", {0}}}));
  s.AddRunning(Running(MakeJob(102).Gpus(1), {{"h3", {0}}}));
  s.AddPending(MakeJob(1).Gpus(1).Elastic(1, 3).PerNode(1));
  Decisions d = s.Schedule(1000);
  const PlaceDecision* p = PlaceOf(d, 1);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(p->placement.size(), 1u);
  EXPECT_EQ(p->placement[0].node, "h4");
}

TEST(ElasticTest, RigidGangOfTheSameSizeWaits) {
  Scheduler s(NoMinimumRuntime());
  AddFourHosts(s);
  s.AddRunning(Running(MakeJob(100).Gpus(1), {{"h1", {0}}}));
  s.AddRunning(Running(MakeJob(101).Gpus(1), {{"h2", {0}}}));
  s.AddPending(MakeJob(1).Gpus(1).Replicas(3).PerNode(1));
  Decisions d = s.Schedule(1000);
  EXPECT_FALSE(Placed(d, 1));
}

TEST(ElasticTest, StartsWithAsManyAsFitUpToTheMaximum) {
  Scheduler s(NoMinimumRuntime());
  AddFourHosts(s);
  s.AddRunning(Running(MakeJob(100).Gpus(1), {{"h1", {0}}}));
  s.AddPending(MakeJob(1).Gpus(1).Elastic(1, 4).PerNode(1));
  Decisions d = s.Schedule(1000);
  const PlaceDecision* p = PlaceOf(d, 1);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->placement.size(), 3u);
}

TEST(ElasticTest, GrowsWhenNodesFreeAndNothingWaits) {
  Scheduler s(NoMinimumRuntime());
  AddFourHosts(s);
  s.AddRunning(Running(MakeJob(100).Gpus(1), {{"h1", {0}}}));
  s.AddRunning(Running(MakeJob(101).Gpus(1), {{"h2", {0}}}));
  s.AddRunning(Running(MakeJob(102).Gpus(1), {{"h3", {0}}}));
  s.AddPending(MakeJob(1).Gpus(1).Elastic(1, 3).PerNode(1));
  ASSERT_TRUE(Placed(s.Schedule(1000), 1));
  s.RemoveRunning(100);
  s.RemoveRunning(101);
  Decisions d = s.Schedule(2000);
  const ResizeDecision* r = ResizeOf(d, 1);
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(r->added.size(), 2u);
  EXPECT_TRUE(r->removed.empty());
  EXPECT_NE(r->added[0].node, r->added[1].node);  // one replica per node
  for (const ReplicaPlacement& p : r->added) EXPECT_TRUE(p.node == "h1" || p.node == "h2");
  // At its maximum: no further growth even with h3 free.
  s.RemoveRunning(102);
  EXPECT_EQ(ResizeOf(s.Schedule(3000), 1), nullptr);
}

TEST(ElasticTest, DoesNotGrowWhileAJobWaitsForGpus) {
  Scheduler s(NoMinimumRuntime());
  AddFourHosts(s);
  s.AddRunning(Running(MakeJob(100).Gpus(1), {{"h1", {0}}}));
  s.AddRunning(Running(MakeJob(101).Gpus(1), {{"h2", {0}}}));
  s.AddRunning(Running(MakeJob(1).Gpus(1).Elastic(1, 4).PerNode(1), {{"h3", {0}}}));
  // A two-host gang waits for h4 and one more host: the elastic job must not take h4.
  s.AddPending(MakeJob(2).Gpus(1).Replicas(2).PerNode(1));
  Decisions d = s.Schedule(1000);
  EXPECT_FALSE(Placed(d, 2));
  EXPECT_EQ(ResizeOf(d, 1), nullptr);
  // Once the gang has started, the elastic job grows into what is left.
  s.RemoveRunning(100);
  s.RemoveRunning(101);
  d = s.Schedule(2000);
  EXPECT_TRUE(Placed(d, 2));
  const ResizeDecision* r = ResizeOf(d, 1);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->added.size(), 1u);
}

TEST(ElasticTest, HigherPriorityJobShrinksInsteadOfPreempting) {
  Scheduler s(NoMinimumRuntime());
  AddFourHosts(s);
  s.AddRunning(Running(MakeJob(1).Gpus(1).Elastic(2, 4).PerNode(1).Preemptible(),
                       {{"h1", {0}}, {"h2", {0}}, {"h3", {0}}, {"h4", {0}}}));
  s.AddPending(MakeJob(2).Gpus(1).Priority(10));
  Decisions d = s.Schedule(1000);
  EXPECT_TRUE(d.preempt.empty());
  const ResizeDecision* r = ResizeOf(d, 1);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->for_job, 2u);
  ASSERT_EQ(r->removed.size(), 1u);
  EXPECT_EQ(r->removed[0].node, "h4");  // its last replica leaves
  EXPECT_FALSE(Placed(d, 2));           // waits for the leaving replica
  // The same pass again decides nothing new while the replica leaves.
  d = s.Schedule(1500);
  EXPECT_TRUE(d.resize.empty());
  EXPECT_TRUE(d.preempt.empty());
  // The replica has exited: the run holds three, and the job starts on h4.
  s.ResizeRunning(1, {{"h1", {0}}, {"h2", {0}}, {"h3", {0}}});
  d = s.Schedule(2000);
  const PlaceDecision* p = PlaceOf(d, 2);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->placement[0].node, "h4");
  EXPECT_EQ(ResizeOf(d, 1), nullptr);  // and it does not grow back into it
}

TEST(ElasticTest, NeverShrinksBelowTheMinimumButPreemptsWhole) {
  Scheduler s(NoMinimumRuntime());
  AddFourHosts(s);
  s.AddRunning(Running(MakeJob(1).Gpus(1).Elastic(2, 4).PerNode(1).Preemptible(),
                       {{"h1", {0}}, {"h2", {0}}, {"h3", {0}}}));
  s.AddRunning(Running(MakeJob(100).Gpus(1), {{"h4", {0}}}));
  // Needs three hosts: only one replica is above the minimum, so the run goes whole.
  s.AddPending(MakeJob(2).Gpus(1).Replicas(3).PerNode(1).Priority(10));
  Decisions d = s.Schedule(1000);
  EXPECT_TRUE(d.resize.empty());
  ASSERT_EQ(d.preempt.size(), 1u);
  EXPECT_EQ(d.preempt[0].job, 1u);
}

TEST(ElasticTest, LowerPriorityJobDoesNotShrink) {
  Scheduler s(NoMinimumRuntime());
  AddFourHosts(s);
  s.AddRunning(Running(MakeJob(1).Gpus(1).Elastic(1, 4).PerNode(1).Priority(5),
                       {{"h1", {0}}, {"h2", {0}}, {"h3", {0}}, {"h4", {0}}}));
  s.AddPending(MakeJob(2).Gpus(1).Priority(1));
  Decisions d = s.Schedule(1000);
  EXPECT_TRUE(d.resize.empty());
  EXPECT_FALSE(Placed(d, 2));
}

TEST(ElasticTest, ShrinksTheLowestPriorityElasticRunFirst) {
  Scheduler s(NoMinimumRuntime());
  AddFourHosts(s);
  s.AddRunning(
      Running(MakeJob(1).Gpus(1).Elastic(1, 2).PerNode(1).Priority(3), {{"h1", {0}}, {"h2", {0}}}));
  s.AddRunning(
      Running(MakeJob(3).Gpus(1).Elastic(1, 2).PerNode(1).Priority(1), {{"h3", {0}}, {"h4", {0}}}));
  s.AddPending(MakeJob(2).Gpus(1).Priority(10));
  Decisions d = s.Schedule(1000);
  ASSERT_EQ(d.resize.size(), 1u);
  EXPECT_EQ(d.resize[0].job, 3u);
}

TEST(ElasticTest, RunEndingWhileShrinkingLetsTheJobStart) {
  Scheduler s(NoMinimumRuntime());
  AddFourHosts(s);
  s.AddRunning(Running(MakeJob(1).Gpus(1).Elastic(1, 4).PerNode(1),
                       {{"h1", {0}}, {"h2", {0}}, {"h3", {0}}, {"h4", {0}}}));
  s.AddPending(MakeJob(2).Gpus(1).Priority(10));
  ASSERT_NE(ResizeOf(s.Schedule(1000), 1), nullptr);
  s.RemoveRunning(1);  // the whole run ended before its replica left
  EXPECT_TRUE(Placed(s.Schedule(2000), 2));
}

TEST(ElasticTest, BatchElasticJobIsSizedAtStartOnly) {
  Scheduler s(NoMinimumRuntime());
  AddFourHosts(s);
  s.AddRunning(Running(MakeJob(100).Gpus(1), {{"h1", {0}}}));
  PendingJob batch = MakeJob(1).Gpus(1).Elastic(1, 4).PerNode(1);
  batch.resizable = false;
  s.AddPending(batch);
  Decisions d = s.Schedule(1000);
  ASSERT_NE(PlaceOf(d, 1), nullptr);
  EXPECT_EQ(PlaceOf(d, 1)->placement.size(), 3u);
  s.RemoveRunning(100);
  EXPECT_TRUE(s.Schedule(2000).resize.empty());
}

// Fair share (kCorral): growth goes first to the queue under its share, and what a run
// borrows beyond its queue's quota is what others take back, first.

TEST(ElasticShareTest, GrowsTheQueueUnderItsQuotaBeforeAnOlderRunOfAQueueAtIt) {
  Scheduler s(NoMinimumRuntime());
  AddFourHosts(s);
  s.SetQueue({"a", 2, -1, 1.0});
  s.SetQueue({"b", 2, -1, 1.0});
  s.AddRunning(Running(MakeJob(1).Gpus(1).Elastic(1, 4).PerNode(1).Queue("a"),
                       {{"h1", {0}}, {"h2", {0}}}, 0));
  s.AddRunning(Running(MakeJob(2).Gpus(1).Elastic(1, 4).PerNode(1).Queue("b"), {{"h3", {0}}}, 500));
  Decisions d = s.Schedule(1000);
  // The older run's queue holds its quota: the one free host goes to queue b's run.
  EXPECT_EQ(ResizeOf(d, 1), nullptr);
  const ResizeDecision* r = ResizeOf(d, 2);
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(r->added.size(), 1u);
  EXPECT_EQ(r->added[0].node, "h4");
}

TEST(ElasticShareTest, FreeHostsAreSharedByFairShareNotFilledByTheOldestRun) {
  Scheduler s(NoMinimumRuntime());
  for (const char* n : {"h1", "h2", "h3", "h4", "h5", "h6"}) s.UpsertNode(MakeNode(n).Gpus(1));
  s.SetQueue({"a", 3, -1, 1.0});
  s.SetQueue({"b", 3, -1, 1.0});
  s.AddRunning(Running(MakeJob(1).Gpus(1).Elastic(1, 6).PerNode(1).Queue("a"), {{"h1", {0}}}, 0));
  s.AddRunning(Running(MakeJob(2).Gpus(1).Elastic(1, 6).PerNode(1).Queue("b"), {{"h2", {0}}}, 500));
  Decisions d = s.Schedule(1000);
  const ResizeDecision* a = ResizeOf(d, 1);
  const ResizeDecision* b = ResizeOf(d, 2);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  // Each queue grows to its quota of three (the oldest run alone would have taken all four).
  EXPECT_EQ(a->added.size(), 2u);
  EXPECT_EQ(b->added.size(), 2u);
}

TEST(ElasticShareTest, GrowthIntoItsParentsIdleShareComesBeforeBorrowingFromTheCluster) {
  Scheduler s(NoMinimumRuntime());
  AddFourHosts(s);
  s.SetQueue({"org", 3, -1, 1.0});
  s.SetQueue({"org/a", 1, -1, 1.0});
  s.SetQueue({"x", 0, -1, 1.0});
  s.AddRunning(Running(MakeJob(1).Gpus(1).Elastic(1, 4).PerNode(1).Queue("x"), {{"h1", {0}}}, 0));
  s.AddRunning(Running(MakeJob(2).Gpus(1).Elastic(1, 4).PerNode(1).Queue("org/a"),
                       {{"h2", {0}}, {"h3", {0}}}, 500));
  // org/a is over its own quota but org has room for one more: the host goes to job 2,
  // although job 1 is older.
  Decisions d = s.Schedule(1000);
  EXPECT_EQ(ResizeOf(d, 1), nullptr);
  const ResizeDecision* r = ResizeOf(d, 2);
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(r->added.size(), 1u);
  EXPECT_EQ(r->added[0].node, "h4");
}

TEST(ElasticShareTest, GrowthBeyondTheQuotaSaysItIsBorrowed) {
  Scheduler s(NoMinimumRuntime());
  AddFourHosts(s);
  s.SetQueue({"a", 2, -1, 1.0});
  s.AddRunning(Running(MakeJob(1).Gpus(1).Elastic(1, 4).PerNode(1).Queue("a"), {{"h1", {0}}}, 0));
  Decisions d = s.Schedule(1000);
  const ResizeDecision* r = ResizeOf(d, 1);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->added.size(), 3u);  // nothing waits: idle GPUs are used
  EXPECT_NE(r->reason.find("beyond queue a's quota"), std::string::npos) << r->reason;
}

TEST(ElasticShareTest, AQueueReclaimingItsQuotaTakesBorrowedReplicasBackWhateverThePriority) {
  Scheduler s(NoMinimumRuntime());
  AddFourHosts(s);
  s.SetQueue({"a", 1, -1, 1.0});
  s.SetQueue({"b", 3, -1, 1.0});
  s.AddRunning(Running(MakeJob(1).Gpus(1).Elastic(1, 4).PerNode(1).Queue("a").Priority(5),
                       {{"h1", {0}}, {"h2", {0}}, {"h3", {0}}, {"h4", {0}}}, 0));
  PendingJob low = MakeJob(2).Gpus(1).Queue("b").Priority(0);
  low.may_preempt = false;  // a reclaim needs no right to preempt
  s.AddPending(low);
  Decisions d = s.Schedule(1000);
  EXPECT_TRUE(d.preempt.empty());
  const ResizeDecision* r = ResizeOf(d, 1);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->for_job, 2u);
  ASSERT_EQ(r->removed.size(), 1u);
  EXPECT_EQ(r->removed[0].node, "h4");
}

TEST(ElasticShareTest, ALowerPriorityJobThatDoesNotReclaimTakesNothing) {
  Scheduler s(NoMinimumRuntime());
  AddFourHosts(s);
  s.SetQueue({"a", 1, -1, 1.0});
  s.SetQueue({"b", 1, -1, 1.0});
  s.AddRunning(Running(MakeJob(1).Gpus(1).Elastic(1, 4).PerNode(1).Queue("a").Priority(5),
                       {{"h1", {0}}, {"h2", {0}}, {"h3", {0}}, {"h4", {0}}}, 0));
  s.UpsertNode(MakeNode("h5").Gpus(1));
  s.AddRunning(Running(MakeJob(100).Gpus(1).Queue("b"), {{"h5", {0}}}, 0));
  // Queue b already holds its quota: a job of it beyond that is no reclaim.
  s.AddPending(MakeJob(2).Gpus(1).Queue("b").Priority(0));
  Decisions d = s.Schedule(1000);
  EXPECT_TRUE(d.resize.empty());
  EXPECT_FALSE(Placed(d, 2));
}

// Queue a (quota 2) holds four hosts with one elastic run of priority 5; a job of queue b
// (quota 3) of priority 0 needs `hosts` of them.
Decisions ReclaimHostsFromABorrowingRun(int hosts) {
  Scheduler s(NoMinimumRuntime());
  AddFourHosts(s);
  s.SetQueue({"a", 2, -1, 1.0});
  s.SetQueue({"b", 3, -1, 1.0});
  s.AddRunning(Running(MakeJob(1).Gpus(1).Elastic(1, 4).PerNode(1).Queue("a").Priority(5),
                       {{"h1", {0}}, {"h2", {0}}, {"h3", {0}}, {"h4", {0}}}, 0));
  s.AddPending(MakeJob(2).Gpus(1).Replicas(hosts).PerNode(1).Queue("b").Priority(0));
  return s.Schedule(1000);
}

TEST(ElasticShareTest, AReclaimTakesOnlyTheBorrowedReplicas) {
  // Two hosts: the run's last two, which it borrows beyond queue a's quota.
  Decisions d = ReclaimHostsFromABorrowingRun(2);
  const ResizeDecision* r = ResizeOf(d, 1);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->for_job, 2u);
  ASSERT_EQ(r->removed.size(), 2u);
  EXPECT_EQ(r->removed[0].node, "h4");
  EXPECT_EQ(r->removed[1].node, "h3");
  // Three: the third would be within queue a's quota, so the run is not shrunk.
  EXPECT_TRUE(ReclaimHostsFromABorrowingRun(3).resize.empty());
}

TEST(ElasticShareTest, ReplicasAlreadyLeavingCountAgainstWhatAQueueBorrows) {
  Scheduler s(NoMinimumRuntime());
  for (const char* n : {"h1", "h2", "h3", "h4", "h5", "h6"}) s.UpsertNode(MakeNode(n).Gpus(1));
  s.SetQueue({"a", 4, -1, 1.0});
  s.SetQueue({"b", 3, -1, 1.0});
  // Queue a holds six GPUs, two beyond its quota, in three runs of two.
  s.AddRunning(Running(MakeJob(1).Gpus(1).Elastic(1, 2).PerNode(1).Queue("a").Priority(5),
                       {{"h1", {0}}, {"h2", {0}}}, 0));
  s.AddRunning(Running(MakeJob(2).Gpus(1).Elastic(1, 2).PerNode(1).Queue("a").Priority(5),
                       {{"h3", {0}}, {"h4", {0}}}, 100));
  s.AddRunning(Running(MakeJob(3).Gpus(1).Elastic(1, 2).PerNode(1).Queue("a").Priority(5),
                       {{"h5", {0}}, {"h6", {0}}}, 200));
  for (JobId id : {10, 11, 12}) s.AddPending(MakeJob(id).Gpus(1).Queue("b"));
  Decisions d = s.Schedule(1000);
  // Two jobs of queue b take the two borrowed replicas; the third takes none of queue a's
  // quota, although a still holds six GPUs until the two have left.
  ASSERT_EQ(d.resize.size(), 2u);
  EXPECT_EQ(ResizeOf(d, 1), nullptr);
  EXPECT_EQ(ResizeOf(s.Schedule(2000), 1), nullptr);
}

}  // namespace
}  // namespace corral::sched
