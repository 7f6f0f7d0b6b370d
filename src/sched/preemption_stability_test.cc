// Unit tests of the rules that keep preemption stable (kCorral): victims that just
// checkpointed are preferred and lose only the work since the checkpoint; cluster-wide and
// per-queue budgets of preempted runs per minute and lost GPU-time per hour, which quota
// reclaim does not need; the default minimum runtime. The LAS hysteresis is tested with
// the other LAS rules (las_within_queue_test.cc) and in PreemptTest.EligibilityTable.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sched/preempt_budget.h"
#include "sched/scheduler.h"
#include "sched/testing_builders.h"

namespace corral::sched {
namespace {

using testing::MakeJob;
using testing::MakeNode;
using testing::Running;
using testing::Victims;

SchedulerConfig Unlimited() {
  SchedulerConfig c;
  c.corral.cluster_budget = {-1, -1};
  c.corral.queue_budget = {-1, -1};
  return c;
}

// Two runs of equal size; 101 started earlier, so without its checkpoint it would lose more
// (60 GPU-minutes against 40) and 100 would be the victim.
TEST(CheckpointTest, VictimThatJustCheckpointedIsPreferred) {
  for (bool via_input : {false, true}) {
    SCOPED_TRACE(via_input ? "checkpoint in the running job's input" : "ReportCheckpoint");
    Scheduler s;
    s.UpsertNode(MakeNode("n1").Gpus(2));
    PendingJob late = MakeJob(101).Gpus(1).Preemptible();
    if (via_input) late.last_checkpoint_at = 50 * kMinute;
    s.AddRunning(Running(MakeJob(100).Gpus(1).Preemptible(), {{"n1", {0}}}, 20 * kMinute));
    s.AddRunning(Running(late, {{"n1", {1}}}, 0));
    if (!via_input) s.ReportCheckpoint(101, 50 * kMinute);
    s.AddPending(MakeJob(1).Gpus(1).Priority(1));
    Decisions d = s.Schedule(60 * kMinute);
    ASSERT_EQ(Victims(d), std::vector<JobId>{101});
    EXPECT_NE(d.preempt[0].reason.find("loses 10 GPU-minutes of work since its last checkpoint"),
              std::string::npos)
        << d.preempt[0].reason;
  }
}

TEST(CheckpointTest, LostWorkCountsFromTheStartWithoutACheckpoint) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(2));
  s.AddRunning(Running(MakeJob(100).Gpus(2).Preemptible(), {{"n1", {0, 1}}}, 0));
  s.AddPending(MakeJob(1).Gpus(2).Priority(1));
  Decisions d = s.Schedule(30 * kMinute);
  ASSERT_EQ(Victims(d), std::vector<JobId>{100});
  EXPECT_NE(d.preempt[0].reason.find("loses 60 GPU-minutes of work since it started"),
            std::string::npos)
      << d.preempt[0].reason;
}

// Three nodes, each with one low-priority run; three higher-priority jobs want them.
void ThreeVictims(Scheduler& s) {
  for (int n = 0; n < 3; ++n) {
    std::string name = "n" + std::to_string(n);
    s.UpsertNode(MakeNode(name).Gpus(1));
    s.AddRunning(Running(MakeJob(100 + n).Gpus(1).Preemptible(), {{name, {0}}}, n * kMinute));
  }
  for (JobId j = 1; j <= 3; ++j) s.AddPending(MakeJob(j).Gpus(1).Priority(1));
}

TEST(BudgetTest, ClusterRunsPerMinute) {
  SchedulerConfig c = Unlimited();
  c.corral.cluster_budget.runs_per_minute = 2;
  Scheduler s(c);
  ThreeVictims(s);
  TimeMs t = kHour;
  EXPECT_EQ(Victims(s.Schedule(t)).size(), 2u);
  EXPECT_EQ(s.GetStats().last_pass_budget_denied, 1);
  // The window still holds both: nothing more 59 s later, one more a minute later.
  EXPECT_TRUE(s.Schedule(t + 59 * kSecond).preempt.empty());
  EXPECT_EQ(Victims(s.Schedule(t + kMinute)).size(), 1u);
}

TEST(BudgetTest, ADecisionOvershootsOnlyAnEmptyWindow) {
  SchedulerConfig c = Unlimited();
  c.corral.cluster_budget.runs_per_minute = 2;
  Scheduler s(c);
  for (const char* n : {"n1", "n2", "n3"}) s.UpsertNode(MakeNode(n).Gpus(2));
  for (int k = 0; k < 6; ++k) {
    std::string node = "n" + std::to_string(1 + k / 2);
    s.AddRunning(Running(MakeJob(100 + k).Gpus(1).Preemptible(), {{node, {k % 2}}}, 0));
  }
  s.AddPending(MakeJob(1).Gpus(1).Priority(2));  // one victim
  std::vector<JobId> first = Victims(s.Schedule(kHour));
  ASSERT_EQ(first.size(), 1u);
  s.RemoveRunning(first[0]);
  EXPECT_EQ(s.Schedule(kHour).place.size(), 1u);
  s.AddPending(MakeJob(2).Gpus(2).Priority(1));  // two victims: 1 + 2 > 2 this minute
  EXPECT_TRUE(s.Schedule(kHour + 30 * kSecond).preempt.empty());
  EXPECT_EQ(s.GetStats().last_pass_budget_denied, 1);
  // With the window empty again, a gang of two full nodes takes its 4 victims at once.
  s.RemovePending(2);
  s.AddPending(MakeJob(3).Replicas(2).Gpus(2).Priority(1));
  EXPECT_EQ(Victims(s.Schedule(kHour + kMinute)).size(), 4u);
}

TEST(BudgetTest, ClusterLostWorkPerHourMayBeOvershotByOneDecision) {
  SchedulerConfig c = Unlimited();
  c.corral.cluster_budget.lost_gpu_seconds_per_hour = 60;  // one GPU-minute
  Scheduler s(c);
  ThreeVictims(s);
  // The first victim loses far more than a GPU-minute: allowed (the window was empty), and
  // then nothing for an hour.
  EXPECT_EQ(Victims(s.Schedule(kHour)).size(), 1u);
  EXPECT_TRUE(s.Schedule(kHour + 30 * kMinute).preempt.empty());
  EXPECT_TRUE(s.Schedule(2 * kHour - kSecond).preempt.empty());
  EXPECT_EQ(Victims(s.Schedule(2 * kHour)).size(), 1u);
}

TEST(BudgetTest, PerVictimQueueRunsPerMinute) {
  SchedulerConfig c = Unlimited();
  c.corral.queue_budget.runs_per_minute = 1;
  Scheduler s(c);
  // Queues a and b hold no quota, so their runs are over it and a higher priority may take
  // them; a's run loses less work, so a's is taken first, then b's: one per queue.
  s.SetQueue({"a", 0, -1, 1.0});
  s.SetQueue({"b", 0, -1, 1.0});
  s.SetQueue({"c", 0, -1, 1.0});
  s.UpsertNode(MakeNode("n1").Gpus(3));
  s.AddRunning(Running(MakeJob(100).Gpus(1).Queue("a").Preemptible(), {{"n1", {0}}}, 20 * kMinute));
  s.AddRunning(Running(MakeJob(101).Gpus(1).Queue("a").Preemptible(), {{"n1", {1}}}, 20 * kMinute));
  s.AddRunning(Running(MakeJob(102).Gpus(1).Queue("b").Preemptible(), {{"n1", {2}}}, 0));
  for (JobId j = 1; j <= 3; ++j) s.AddPending(MakeJob(j).Gpus(1).Queue("c").Priority(1));
  std::vector<JobId> v = Victims(s.Schedule(kHour));
  std::sort(v.begin(), v.end());
  EXPECT_EQ(v, (std::vector<JobId>{101, 102}));
  EXPECT_EQ(Victims(s.Schedule(kHour + kMinute)), std::vector<JobId>{100});
}

TEST(BudgetTest, QuotaReclaimIsNotLimitedButCounts) {
  SchedulerConfig c = Unlimited();
  c.corral.cluster_budget.runs_per_minute = 1;
  Scheduler s(c);
  s.SetQueue({"owner", 4, -1, 1.0});
  s.SetQueue({"borrower", 0, -1, 1.0});
  s.UpsertNode(MakeNode("n1").Gpus(5));
  // The borrower's oldest run (104) loses the most work, so reclaim takes the other four.
  for (int g = 0; g < 5; ++g) {
    s.AddRunning(Running(MakeJob(100 + g).Gpus(1).Queue("borrower").Preemptible(), {{"n1", {g}}},
                         g == 4 ? 0 : 10 * kMinute));
  }
  for (JobId j = 1; j <= 4; ++j) s.AddPending(MakeJob(j).Gpus(1).Queue("owner"));
  // The owner gets its whole quota back at once, beyond a budget of one run per minute.
  std::vector<JobId> v = Victims(s.Schedule(kHour));
  std::sort(v.begin(), v.end());
  EXPECT_EQ(v, (std::vector<JobId>{100, 101, 102, 103}));
  for (JobId id : v) s.RemoveRunning(id);
  EXPECT_EQ(s.Schedule(kHour).place.size(), 4u);
  // The reclaim spent the budget: a higher priority of the borrower waits for the window.
  s.AddPending(MakeJob(9).Gpus(1).Queue("borrower").Priority(1));
  EXPECT_TRUE(s.Schedule(kHour + 30 * kSecond).preempt.empty());
  EXPECT_EQ(Victims(s.Schedule(kHour + kMinute)), std::vector<JobId>{104});
}

TEST(BudgetTest, DefaultsScaleWithTheCluster) {
  PreemptionBudget b;  // defaults
  EXPECT_EQ(PreemptBudget::RunsLimit(b, 100, 2), 2);
  EXPECT_EQ(PreemptBudget::RunsLimit(b, 10'000, 2), 5);
  EXPECT_EQ(PreemptBudget::LostLimitGpuMs(b, 1000, 1.0), 1000 * kHour);
  EXPECT_EQ(PreemptBudget::RunsLimit({7, 0}, 10'000, 2), 7);
  EXPECT_EQ(PreemptBudget::RunsLimit({-1, 0}, 10'000, 2), -1);
  // On a 3-GPU cluster with three runs in one queue: the queue's default is one run a minute
  // (and lost work up to its 3 GPU-hours an hour).
  Scheduler s;
  ThreeVictims(s);
  EXPECT_EQ(Victims(s.Schedule(kHour)).size(), 1u);
  EXPECT_TRUE(s.Schedule(kHour + 59 * kSecond).preempt.empty());
  EXPECT_EQ(Victims(s.Schedule(kHour + kMinute)).size(), 1u);
}

TEST(BudgetTest, WindowsForget) {
  PreemptBudget p;
  PreemptionBudget b{1, 60};
  EXPECT_TRUE(p.ClusterAllows(b, 10, 10));
  p.Record(0, 0, 10 * kSecond);
  EXPECT_FALSE(p.ClusterAllows(b, 10, 10));  // one run this minute
  p.Advance(kMinute);
  EXPECT_TRUE(p.ClusterAllows(b, 10, 10));  // 10 of 60 GPU-seconds this hour
  p.Record(kMinute, 0, 60 * kSecond);
  p.Advance(2 * kMinute);
  EXPECT_FALSE(p.ClusterAllows(b, 10, 10));  // 70 GPU-seconds this hour
  p.Advance(kHour + kMinute);
  EXPECT_TRUE(p.ClusterAllows(b, 10, 10));
}

TEST(MinRuntimeTest, DefaultIsFiveMinutes) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(1));
  s.AddRunning(Running(MakeJob(100).Gpus(1).Preemptible(), {{"n1", {0}}}, kHour));
  s.AddPending(MakeJob(1).Gpus(1).Priority(1));
  EXPECT_TRUE(s.Schedule(kHour + 5 * kMinute - 1).preempt.empty());
  EXPECT_EQ(Victims(s.Schedule(kHour + 5 * kMinute)), std::vector<JobId>{100});
}

}  // namespace
}  // namespace corral::sched
