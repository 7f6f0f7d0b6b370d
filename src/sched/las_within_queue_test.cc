// Unit tests of kCorral's least-attained-service order inside a queue
// (CorralConfig::las_within_queue): levels at the default 1 and 10 GPU-hours, preemption
// only of preemptible runs of the same queue and priority in a strictly higher level, after
// the minimum runtime, with the default hysteresis (the run past twice the threshold between
// the levels, the job below half of it).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sched/scheduler.h"
#include "sched/testing_builders.h"

namespace corral::sched {
namespace {

using testing::MakeJob;
using testing::MakeNode;
using testing::Running;
using testing::Victims;

// One node of `gpus` GPUs; queue "q" owns all of them, queue "r" none.
void OneNodeTwoQueues(Scheduler& s, int gpus) {
  s.UpsertNode(MakeNode("n1").Gpus(gpus));
  s.SetQueue({"q", gpus, -1, 1.0});
  s.SetQueue({"r", 0, -1, 1.0});
}

std::vector<JobId> Placed(const Decisions& d) {
  std::vector<JobId> out;
  for (const PlaceDecision& p : d.place) out.push_back(p.job);
  return out;
}

TEST(LasWithinQueueTest, LongRunPreemptedForNewJobOfItsQueueOnceWellPastTheThreshold) {
  Scheduler s;
  OneNodeTwoQueues(s, 1);
  s.AddRunning(Running(MakeJob(100).Gpus(1).Queue("q").Preemptible(), {{"n1", {0}}}, 0));
  s.AddPending(MakeJob(1).Gpus(1).Queue("q").Submit(30 * kMinute));
  // 50 GPU-minutes attained: still level 0, like the new job.
  EXPECT_TRUE(s.Schedule(50 * kMinute).preempt.empty());
  // 61 GPU-minutes: level 1, but within the hysteresis (below 2 x 1 GPU-hour).
  EXPECT_TRUE(s.Schedule(61 * kMinute).preempt.empty());
  EXPECT_TRUE(s.Schedule(119 * kMinute).preempt.empty());
  // 120 GPU-minutes: twice the threshold.
  Decisions d = s.Schedule(120 * kMinute);
  ASSERT_EQ(Victims(d), std::vector<JobId>{100});
  EXPECT_EQ(d.preempt[0].for_job, 1u);
  EXPECT_NE(d.preempt[0].reason.find("attained less service"), std::string::npos)
      << d.preempt[0].reason;
  // The driver requeues the victim with its attained service; the new job starts and the
  // victim, in a higher level, waits behind it without preempting it back.
  s.RemoveRunning(100);
  s.AddPending(MakeJob(100).Gpus(1).Queue("q").Preemptible().Attained(120 * kMinute));
  EXPECT_EQ(Placed(s.Schedule(120 * kMinute)), std::vector<JobId>{1});
  EXPECT_TRUE(s.Schedule(5 * kHour).preempt.empty());
}

TEST(LasWithinQueueTest, NonPreemptibleRunIsNeverAVictim) {
  Scheduler s;
  OneNodeTwoQueues(s, 1);
  s.AddRunning(Running(MakeJob(100).Gpus(1).Queue("q"), {{"n1", {0}}}, 0));
  s.AddPending(MakeJob(1).Gpus(1).Queue("q"));
  EXPECT_TRUE(s.Schedule(20 * kHour).preempt.empty());
}

TEST(LasWithinQueueTest, RunBelowTheThresholdIsNotPreempted) {
  Scheduler s;
  OneNodeTwoQueues(s, 8);
  // 8 GPUs x 7 minutes = 56 GPU-minutes: past the minimum runtime, below 1 GPU-hour.
  s.AddRunning(Running(MakeJob(100).Gpus(8).Queue("q").Preemptible(),
                       {{"n1", {0, 1, 2, 3, 4, 5, 6, 7}}}, 0));
  s.AddPending(MakeJob(1).Gpus(8).Queue("q"));
  EXPECT_TRUE(s.Schedule(7 * kMinute).preempt.empty());
  // 8 GPUs x 8 minutes = 64 GPU-minutes: level 1, within the hysteresis.
  EXPECT_TRUE(s.Schedule(8 * kMinute).preempt.empty());
  // 8 GPUs x 15 minutes = 2 GPU-hours.
  EXPECT_EQ(Victims(s.Schedule(15 * kMinute)), std::vector<JobId>{100});
}

TEST(LasWithinQueueTest, MinimumRuntimeHoldsForServiceAttainedInEarlierRuns) {
  Scheduler s;
  OneNodeTwoQueues(s, 1);
  // Resumed with 2 GPU-hours from earlier runs: level 1 from its start.
  s.AddRunning(
      Running(MakeJob(100).Gpus(1).Queue("q").Preemptible().Attained(2 * kHour), {{"n1", {0}}}, 0));
  s.AddPending(MakeJob(1).Gpus(1).Queue("q"));
  EXPECT_TRUE(s.Schedule(2 * kMinute).preempt.empty());
  EXPECT_EQ(Victims(s.Schedule(6 * kMinute)), std::vector<JobId>{100});
}

TEST(LasWithinQueueTest, OnlyTheSameQueueAndPriority) {
  {
    // Queue r's job may not displace q's run, which is within q's quota.
    Scheduler s;
    OneNodeTwoQueues(s, 1);
    s.AddRunning(Running(MakeJob(100).Gpus(1).Queue("q").Preemptible(), {{"n1", {0}}}, 0));
    s.AddPending(MakeJob(1).Gpus(1).Queue("r"));
    EXPECT_TRUE(s.Schedule(20 * kHour).preempt.empty());
  }
  {
    // A lower-priority job may not displace a higher-priority run of its queue.
    Scheduler s;
    OneNodeTwoQueues(s, 1);
    s.AddRunning(
        Running(MakeJob(100).Gpus(1).Queue("q").Priority(1).Preemptible(), {{"n1", {0}}}, 0));
    s.AddPending(MakeJob(1).Gpus(1).Queue("q"));
    EXPECT_TRUE(s.Schedule(20 * kHour).preempt.empty());
  }
  {
    // A pending job in level 1 may displace only runs in level 2 (10 GPU-hours), and those
    // only from 20 GPU-hours on (hysteresis).
    Scheduler s;
    OneNodeTwoQueues(s, 1);
    s.AddRunning(Running(MakeJob(100).Gpus(1).Queue("q").Preemptible(), {{"n1", {0}}}, 0));
    s.AddPending(MakeJob(1).Gpus(1).Queue("q").Attained(2 * kHour));
    EXPECT_TRUE(s.Schedule(9 * kHour).preempt.empty());
    EXPECT_TRUE(s.Schedule(11 * kHour).preempt.empty());
    EXPECT_EQ(Victims(s.Schedule(20 * kHour)), std::vector<JobId>{100});
  }
}

TEST(LasWithinQueueTest, VictimsLoseTheLeastWork) {
  Scheduler s;
  OneNodeTwoQueues(s, 2);
  // Both past 2 GPU-hours at 130 minutes; 101 has lost 100 GPU-minutes of this run, 100 130.
  s.AddRunning(Running(MakeJob(100).Gpus(1).Queue("q").Preemptible(), {{"n1", {0}}}, 0));
  s.AddRunning(Running(MakeJob(101).Gpus(1).Queue("q").Preemptible().Attained(kHour), {{"n1", {1}}},
                       30 * kMinute));
  s.AddPending(MakeJob(1).Gpus(1).Queue("q"));
  EXPECT_EQ(Victims(s.Schedule(130 * kMinute)), std::vector<JobId>{101});
}

TEST(LasWithinQueueTest, LevelBeforeUserShareBeforeSubmitTime) {
  Scheduler s;
  OneNodeTwoQueues(s, 2);
  // User a holds one GPU, so user b has the smaller share.
  s.AddRunning(Running(MakeJob(100).Gpus(1).Queue("q").User("a"), {{"n1", {0}}}, 0));
  // b's oldest job was requeued after 2 GPU-hours (level 1); a's is new (level 0).
  s.AddPending(MakeJob(1).Gpus(1).Queue("q").User("b").Submit(0).Attained(2 * kHour));
  s.AddPending(MakeJob(2).Gpus(1).Queue("q").User("a").Submit(20));
  s.AddPending(MakeJob(3).Gpus(1).Queue("q").User("b").Submit(30));
  // Level 0 first; within it, b (smaller share) before a despite a's earlier submit.
  EXPECT_EQ(Placed(s.Schedule(1000)), std::vector<JobId>{3});
  s.RemoveRunning(3);
  EXPECT_EQ(Placed(s.Schedule(2000)), std::vector<JobId>{2});
}

TEST(LasWithinQueueTest, SwitchedOffKeepsSubmitOrderAndDoesNotPreempt) {
  SchedulerConfig c;
  c.corral.las_within_queue = false;
  Scheduler s(c);
  OneNodeTwoQueues(s, 1);
  s.AddRunning(Running(MakeJob(100).Gpus(1).Queue("q").Preemptible(), {{"n1", {0}}}, 0));
  s.AddPending(MakeJob(1).Gpus(1).Queue("q").Submit(0).Attained(2 * kHour));
  s.AddPending(MakeJob(2).Gpus(1).Queue("q").Submit(10));
  EXPECT_TRUE(s.Schedule(20 * kHour).preempt.empty());
  s.RemoveRunning(100);
  EXPECT_EQ(Placed(s.Schedule(20 * kHour)), std::vector<JobId>{1});
}

// CorralConfig::las_across_queues: a run of another queue over its quota is displaced by
// the LAS rules of a queue (strictly higher level, hysteresis), and only down to its quota.
namespace across {

// Two GPUs on one node; queue q guarantees one, r none. q runs two one-GPU preemptible jobs
// from t=0, so one of them is borrowed.
void QBorrowsOneGpu(Scheduler& s) {
  s.UpsertNode(MakeNode("n1").Gpus(2));
  s.SetQueue({"q", 1, -1, 1.0});
  s.SetQueue({"r", 0, -1, 1.0});
  s.AddRunning(Running(MakeJob(100).Gpus(1).Queue("q").Preemptible(), {{"n1", {0}}}, 0));
  s.AddRunning(Running(MakeJob(101).Gpus(1).Queue("q").Preemptible(), {{"n1", {1}}}, 0));
}

TEST(LasAcrossQueuesTest, BorrowedRunInAHigherLevelIsDisplaced) {
  Scheduler s;
  QBorrowsOneGpu(s);
  s.AddPending(MakeJob(1).Gpus(1).Queue("r").Submit(kHour));
  // 1.5 GPU-hours: level 1, within the hysteresis.
  EXPECT_TRUE(s.Schedule(90 * kMinute).preempt.empty());
  Decisions d = s.Schedule(2 * kHour);
  ASSERT_EQ(Victims(d), std::vector<JobId>{101});  // the later-placed of two equal victims
  EXPECT_EQ(d.preempt[0].for_job, 1u);
  EXPECT_NE(d.preempt[0].reason.find("attained less service"), std::string::npos)
      << d.preempt[0].reason;
  EXPECT_NE(d.preempt[0].reason.find("queue q was over its quota of 1"), std::string::npos)
      << d.preempt[0].reason;
}

TEST(LasAcrossQueuesTest, NeverBelowTheVictimsQuota) {
  // Two GPUs would take q below its quota of one: no victim.
  Scheduler s;
  QBorrowsOneGpu(s);
  s.AddPending(MakeJob(1).Gpus(2).Queue("r"));
  EXPECT_TRUE(s.Schedule(20 * kHour).preempt.empty());
}

TEST(LasAcrossQueuesTest, SwitchedOffLasStaysInsideAQueue) {
  SchedulerConfig c;
  c.corral.las_across_queues = false;
  Scheduler s(c);
  QBorrowsOneGpu(s);
  s.AddPending(MakeJob(1).Gpus(1).Queue("r"));
  EXPECT_TRUE(s.Schedule(20 * kHour).preempt.empty());
}

}  // namespace across

}  // namespace
}  // namespace corral::sched
