// A service's replica outranks training of its priority (PendingJob::serving): a blocked replica
// preempts preemptible training as a higher priority would, and nothing else; a running replica
// above its service's minimum is preemptible by priority, never by attained service.
#include <gtest/gtest.h>

#include "sched/scheduler.h"
#include "sched/testing_builders.h"

namespace corral::sched {
namespace {

using testing::MakeJob;
using testing::MakeNode;
using testing::NoMinimumRuntime;
using testing::Running;

TEST(ServingPreemptionTest, AReplicaPreemptsPreemptibleTrainingOfItsPriority) {
  Scheduler s(NoMinimumRuntime());
  s.UpsertNode(MakeNode("n1").Gpus(4));
  s.AddRunning(Running(MakeJob(100).Gpus(3).User("bob").Preemptible(), {{"n1", {0, 1, 2}}}));
  s.AddRunning(Running(MakeJob(101).Gpus(1).User("ana").Serving(), {{"n1", {3}}}));
  s.AddPending(MakeJob(1).Gpus(1).User("ana").Serving().Preemptible());
  Decisions d = s.Schedule(1000);
  ASSERT_EQ(d.preempt.size(), 1u);
  EXPECT_EQ(d.preempt[0].job, 100u);
  EXPECT_EQ(d.preempt[0].for_job, 1u);
  EXPECT_EQ(d.preempt[0].kind, PreemptKind::kPriority);
  EXPECT_NE(d.preempt[0].reason.find("serving comes before training"), std::string::npos)
      << d.preempt[0].reason;
  // Its training, requeued, waits: it does not outrank the replica that took its GPUs.
  s.RemoveRunning(100);
  s.AddPending(MakeJob(100).Gpus(3).User("bob").Preemptible());
  d = s.Schedule(2000);
  ASSERT_EQ(d.place.size(), 1u);
  EXPECT_EQ(d.place[0].job, 1u);
  d = s.Schedule(3000);
  EXPECT_TRUE(d.preempt.empty());
  EXPECT_TRUE(d.place.empty());
}

TEST(ServingPreemptionTest, TheSameJobNotServingWaits) {
  Scheduler s(NoMinimumRuntime());
  s.UpsertNode(MakeNode("n1").Gpus(4));
  s.AddRunning(Running(MakeJob(100).Gpus(4).User("bob").Preemptible(), {{"n1", {0, 1, 2, 3}}}));
  s.AddPending(MakeJob(1).Gpus(1).User("ana").Preemptible());
  Decisions d = s.Schedule(1000);
  EXPECT_TRUE(d.preempt.empty());
}

TEST(ServingPreemptionTest, AReplicaSparesHigherPriorityTrainingAndOtherReplicas) {
  Scheduler s(NoMinimumRuntime());
  s.UpsertNode(MakeNode("n1").Gpus(4));
  // Higher-priority training, non-preemptible training, and another service's preemptible
  // replica: none is a victim of a replica of priority 0.
  s.AddRunning(
      Running(MakeJob(100).Gpus(2).User("bob").Preemptible().Priority(10), {{"n1", {0, 1}}}));
  s.AddRunning(Running(MakeJob(101).Gpus(1).User("bob"), {{"n1", {2}}}));
  s.AddRunning(Running(MakeJob(102).Gpus(1).User("cy").Serving().Preemptible(), {{"n1", {3}}}));
  s.AddPending(MakeJob(1).Gpus(1).User("ana").Serving().Preemptible());
  Decisions d = s.Schedule(1000);
  EXPECT_TRUE(d.preempt.empty());
  // Higher-priority training takes the replica above its minimum (a preemptible one).
  s.AddPending(MakeJob(2).Gpus(1).User("bob").Priority(20));
  d = s.Schedule(2000);
  ASSERT_EQ(d.preempt.size(), 1u);
  EXPECT_EQ(d.preempt[0].job, 102u);
}

TEST(ServingPreemptionTest, AReplicaIsNoVictimOfAttainedService) {
  SchedulerConfig c = NoMinimumRuntime();
  c.las_thresholds_gpu_ms = {kMinute};
  c.corral.las_preempt_hysteresis = 1;
  Scheduler s(c);
  s.UpsertNode(MakeNode("n1").Gpus(4));
  // A replica that ran for hours, far above the training job's LAS level: the same run as
  // training would be displaced by the job below the threshold.
  s.AddRunning(
      Running(MakeJob(100).Gpus(4).User("bob").Serving().Preemptible(), {{"n1", {0, 1, 2, 3}}}, 0));
  s.AddPending(MakeJob(1).Gpus(4).User("ana").Preemptible());
  Decisions d = s.Schedule(10 * kHour);
  EXPECT_TRUE(d.preempt.empty());
  s.RemoveRunning(100);
  s.RemovePending(1);
  s.AddRunning(Running(MakeJob(100).Gpus(4).User("bob").Preemptible(), {{"n1", {0, 1, 2, 3}}}, 0));
  s.AddPending(MakeJob(1).Gpus(4).User("ana").Preemptible());
  d = s.Schedule(10 * kHour + 1);
  ASSERT_EQ(d.preempt.size(), 1u);
  EXPECT_EQ(d.preempt[0].job, 100u);
}

}  // namespace
}  // namespace corral::sched
