// Unit tests of kCorral's borrowed capacity and long waits: queues over their quota ordered by
// their best job's LAS level and predicted remaining time (SchedulerConfig::
// borrowing_queues_by_level); reservations and backfill that count on time limits, never on
// predicted run times; a long-waiting job in a higher LAS level that stays behind level 0
// (docs/simulation.md, "Options left off", has what was measured against both).
#include <gtest/gtest.h>

#include "sched/scheduler.h"
#include "sched/testing_builders.h"

namespace corral::sched {
namespace {

using testing::MakeJob;
using testing::MakeNode;
using testing::Placed;
using testing::Running;

// One GPU free; queues a and b both over their quota of 2, a with the lower share (3 GPUs in
// use against b's 4). a's pending job has attained 2 GPU-hours (LAS level 1), b's none.
Decisions OneFreeGpu(bool by_level, DurationMs a_predicted, DurationMs b_predicted,
                     DurationMs a_attained = 2 * kHour) {
  SchedulerConfig c;
  c.preemption = false;
  c.corral.borrowing_queues_by_level = by_level;
  Scheduler s(c);
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.SetQueue({"a", 2, -1, 1.0});
  s.SetQueue({"b", 2, -1, 1.0});
  s.AddRunning(Running(MakeJob(100).Gpus(3).Queue("a"), {{"n1", {0, 1, 2}}}));
  s.AddRunning(Running(MakeJob(101).Gpus(4).Queue("b"), {{"n1", {3, 4, 5, 6}}}));
  s.AddPending(MakeJob(1).Gpus(1).Queue("a").Attained(a_attained).Predicted(a_predicted));
  s.AddPending(MakeJob(2).Gpus(1).Queue("b").Predicted(b_predicted));
  return s.Schedule(10);
}

TEST(BorrowingQueuesByLevel, TheLowerLevelGoesFirstWhateverTheShare) {
  Decisions d = OneFreeGpu(/*by_level=*/true, 0, 0);
  EXPECT_TRUE(Placed(d, 2));
  EXPECT_FALSE(Placed(d, 1));
}

TEST(BorrowingQueuesByLevel, OffTheLowerShareGoesFirst) {
  Decisions d = OneFreeGpu(/*by_level=*/false, 0, 0);
  EXPECT_TRUE(Placed(d, 1));
  EXPECT_FALSE(Placed(d, 2));
}

TEST(BorrowingQueuesByLevel, InOneLevelTheShorterPredictionBucketGoesFirst) {
  // Both at level 0: a's job is predicted to run 10 hours, b's 5 minutes.
  Decisions d = OneFreeGpu(true, 10 * kHour, 5 * kMinute, /*a_attained=*/0);
  EXPECT_TRUE(Placed(d, 2));
  EXPECT_FALSE(Placed(d, 1));
  // 5 and 7 minutes are one bucket (4-7): the share decides, a first.
  d = OneFreeGpu(true, 7 * kMinute, 5 * kMinute, 0);
  EXPECT_TRUE(Placed(d, 1));
  EXPECT_FALSE(Placed(d, 2));
}

TEST(BorrowingQueuesByLevel, QueuesUnderQuotaStillComeFirst) {
  SchedulerConfig c;
  c.preemption = false;
  Scheduler s(c);
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.SetQueue({"a", 4, -1, 1.0});
  s.SetQueue({"b", 2, -1, 1.0});
  // a is under its quota with a level-1 job; b over it with a level-0 job.
  s.AddRunning(Running(MakeJob(100).Gpus(3).Queue("a"), {{"n1", {0, 1, 2}}}));
  s.AddRunning(Running(MakeJob(101).Gpus(4).Queue("b"), {{"n1", {3, 4, 5, 6}}}));
  s.AddPending(MakeJob(1).Gpus(1).Queue("a").Attained(2 * kHour));
  s.AddPending(MakeJob(2).Gpus(1).Queue("b"));
  Decisions d = s.Schedule(10);
  EXPECT_TRUE(Placed(d, 1));
  EXPECT_FALSE(Placed(d, 2));
}

// n1 busy with a run predicted to end at 1000 (no time limit), n2 free; job 1 needs both.
Decisions Backfill(TimeMs now) {
  SchedulerConfig c;
  c.preemption = false;
  Scheduler s(c);
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.UpsertNode(MakeNode("n2").Gpus(8));
  s.AddRunning(
      Running(MakeJob(100).Gpus(8).Predicted(1000), {{"n1", {0, 1, 2, 3, 4, 5, 6, 7}}}, 0));
  s.AddPending(MakeJob(1).Replicas(2).Gpus(8).Submit(1));
  s.AddPending(MakeJob(2).Gpus(8).Predicted(500).Submit(2));   // ends by 600 < 1000
  s.AddPending(MakeJob(3).Gpus(8).Predicted(5000).Submit(3));  // would delay job 1
  // No prediction: unknown end. (Another shape: a class is skipped for the rest of a pass once
  // one member fails, and a job without a prediction comes first in its class.)
  s.AddPending(MakeJob(4).Gpus(4).Submit(4));
  return s.Schedule(now);
}

// A run without a time limit ends at an unknown time, whatever its prediction: the
// reservation has no start, and no job backfills on a prediction that it ends in time.
TEST(Backfill, AReservationCountsOnTimeLimitsNotPredictions) {
  for (TimeMs now : {100, 2000}) {
    Decisions d = Backfill(now);
    ASSERT_EQ(d.reservations.size(), 1u);
    EXPECT_EQ(d.reservations[0].job, 1u);
    EXPECT_EQ(d.reservations[0].start, kUnknownTime);
    EXPECT_TRUE(d.place.empty());
  }
}

// One GPU, busy until the run ends; job 1 has attained 2 GPU-hours on one GPU (level 1), job
// 2 none. Both are first seen pending by the pass at 1000. Which starts at `now`?
Decisions Starving(TimeMs now) {
  SchedulerConfig c;
  c.preemption = false;
  Scheduler s(c);
  s.UpsertNode(MakeNode("n1").Gpus(1));
  s.AddRunning(Running(MakeJob(100).Gpus(1), {{"n1", {0}}}, 0));
  s.AddPending(MakeJob(1).Gpus(1).Attained(2 * kHour).Submit(1));
  s.AddPending(MakeJob(2).Gpus(1).Submit(2));
  EXPECT_TRUE(s.Schedule(1000).place.empty());
  s.RemoveRunning(100);
  return s.Schedule(now);
}

// Waiting does not move a job to a lower LAS level (only an age bound, max_wait_ms, puts a
// long wait first).
TEST(LongWait, AJobInAHigherLevelStaysBehindLevelZeroWhateverItsWait) {
  for (TimeMs now : {TimeMs{1000 + 4 * kHour}, TimeMs{1000 + 400 * kHour}}) {
    Decisions d = Starving(now);
    EXPECT_TRUE(Placed(d, 2));
    EXPECT_FALSE(Placed(d, 1));
  }
}

}  // namespace
}  // namespace corral::sched
