// Unit tests of the age bound (CorralConfig::max_wait_ms, QueueConfig::max_wait_ms): a job
// that has waited past it goes ahead of the others, holds the reservation that backfill must
// not delay, and once running is not displaced by LAS.
#include <gtest/gtest.h>

#include "sched/scheduler.h"
#include "sched/testing_builders.h"

namespace corral::sched {
namespace {

using testing::MakeJob;
using testing::MakeNode;
using testing::Placed;
using testing::Running;

SchedulerConfig NoPreemption(DurationMs max_wait) {
  SchedulerConfig c;
  c.preemption = false;
  c.corral.max_wait_ms = max_wait;
  return c;
}

// One GPU, busy until 10 h. Job 1 (submitted at 0, has run 2 h before: LAS level 1) and job
// 2 (submitted at 9 h, never ran: level 0, predicted short) wait for it. The GPU frees at
// `now`; which starts?
Decisions OldAgainstShort(SchedulerConfig c, TimeMs now, DurationMs queue_max_wait = 0) {
  Scheduler s(c);
  s.UpsertNode(MakeNode("n1").Gpus(1));
  QueueConfig q{"team", 0, -1, 1.0};
  q.max_wait_ms = queue_max_wait;
  s.SetQueue(q);
  s.AddRunning(Running(MakeJob(100).Gpus(1).Queue("team"), {{"n1", {0}}}, 0));
  s.AddPending(MakeJob(1).Gpus(1).Queue("team").Submit(0).Attained(2 * kHour));
  s.AddPending(MakeJob(2).Gpus(1).Queue("team").Submit(9 * kHour).Predicted(kMinute));
  EXPECT_TRUE(s.Schedule(9 * kHour).place.empty());
  s.RemoveRunning(100);
  return s.Schedule(now);
}

TEST(AgeBound, AnOldJobGoesAheadOfShorterOnesOnceItHasWaitedTheBound) {
  // Job 1 has waited now - 0 - 2 h (its run time does not count): 8 h at 10 h.
  Decisions within = OldAgainstShort(NoPreemption(8 * kHour + 1), 10 * kHour);
  EXPECT_TRUE(Placed(within, 2));
  EXPECT_FALSE(Placed(within, 1));
  Decisions past = OldAgainstShort(NoPreemption(8 * kHour), 10 * kHour);
  EXPECT_TRUE(Placed(past, 1));
  EXPECT_FALSE(Placed(past, 2));
}

TEST(AgeBound, WithoutABoundTheShortJobGoesFirst) {
  Decisions d = OldAgainstShort(NoPreemption(0), 1000 * kHour);
  EXPECT_TRUE(Placed(d, 2));
  EXPECT_FALSE(Placed(d, 1));
}

TEST(AgeBound, AQueuesBoundOverridesTheDefaultAndItsSubQueuesInheritIt) {
  // The scheduler's bound is far off; the queue's is met.
  Decisions d = OldAgainstShort(NoPreemption(1000 * kHour), 10 * kHour, 8 * kHour);
  EXPECT_TRUE(Placed(d, 1));

  Scheduler s(NoPreemption(0));
  s.UpsertNode(MakeNode("n1").Gpus(1));
  s.AddRunning(Running(MakeJob(100).Gpus(1).Queue("org/team"), {{"n1", {0}}}, 0));
  s.AddPending(MakeJob(1).Gpus(1).Queue("org/team").Submit(0).Attained(2 * kHour));
  s.AddPending(MakeJob(2).Gpus(1).Queue("org/team").Submit(9 * kHour).Predicted(kMinute));
  EXPECT_TRUE(s.Schedule(9 * kHour).place.empty());
  // Set while the jobs wait: their due times are recomputed.
  QueueConfig org{"org", 0, -1, 1.0};
  org.max_wait_ms = 8 * kHour;
  s.SetQueue(org);
  s.RemoveRunning(100);
  Decisions after = s.Schedule(10 * kHour);
  EXPECT_TRUE(Placed(after, 1));
  EXPECT_FALSE(Placed(after, 2));
}

TEST(AgeBound, AgedJobsGoOldestFirstWhateverTheirQueuesShares) {
  // Queue a is far over its share (it holds the cluster's other 7 GPUs), b holds nothing: b's
  // job would go first by fair share, but a's job is older and both are aged.
  Scheduler s(NoPreemption(kHour));
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.SetQueue({"a", 1, -1, 1.0});
  s.SetQueue({"b", 1, -1, 1.0});
  s.AddRunning(Running(MakeJob(100).Gpus(7).Queue("a"), {{"n1", {0, 1, 2, 3, 4, 5, 6}}}, 0));
  s.AddRunning(Running(MakeJob(101).Gpus(1).Queue("b"), {{"n1", {7}}}, 0));
  s.AddPending(MakeJob(1).Gpus(1).Queue("a").Submit(10));
  s.AddPending(MakeJob(2).Gpus(1).Queue("b").Submit(20));
  EXPECT_TRUE(s.Schedule(kMinute).place.empty());
  s.RemoveRunning(101);
  Decisions young = s.Schedule(kMinute + 1);  // nobody aged: b by fair share
  EXPECT_TRUE(Placed(young, 2));

  Scheduler t(NoPreemption(kHour));
  t.UpsertNode(MakeNode("n1").Gpus(8));
  t.SetQueue({"a", 1, -1, 1.0});
  t.SetQueue({"b", 1, -1, 1.0});
  t.AddRunning(Running(MakeJob(100).Gpus(7).Queue("a"), {{"n1", {0, 1, 2, 3, 4, 5, 6}}}, 0));
  t.AddRunning(Running(MakeJob(101).Gpus(1).Queue("b"), {{"n1", {7}}}, 0));
  t.AddPending(MakeJob(1).Gpus(1).Queue("a").Submit(10));
  t.AddPending(MakeJob(2).Gpus(1).Queue("b").Submit(20));
  EXPECT_TRUE(t.Schedule(kMinute).place.empty());
  t.RemoveRunning(101);
  Decisions old = t.Schedule(2 * kHour);  // both aged: a's, submitted first
  EXPECT_TRUE(Placed(old, 1));
  EXPECT_FALSE(Placed(old, 2));
}

// Eight GPUs, four held by a run without a time limit. Job 1 wants all eight and has run
// before (level 1); a stream of one-GPU jobs of level 0 arrives. Each round one small job
// ends and a new one comes. Returns the passes (one per round) until job 1 starts, or -1.
int RoundsUntilTheWideJobStarts(DurationMs max_wait) {
  Scheduler s(NoPreemption(max_wait));
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.AddRunning(Running(MakeJob(100).Gpus(4), {{"n1", {0, 1, 2, 3}}}, 0));
  s.AddPending(MakeJob(1).Gpus(8).Submit(0).Attained(8 * 2 * kHour));
  JobId next = 1000;
  std::vector<JobId> small_running;
  TimeMs now = 0;
  for (int round = 0; round < 40; ++round) {
    now = round * kHour;
    for (int k = 0; k < 2; ++k) s.AddPending(MakeJob(next++).Gpus(1).Submit(now + k));
    if (!small_running.empty()) {  // the oldest small run ends
      s.RemoveRunning(small_running.front());
      small_running.erase(small_running.begin());
    }
    if (round == 20) s.RemoveRunning(100);  // the long run ends
    Decisions d = s.Schedule(now);
    if (Placed(d, 1)) return round;
    for (const PlaceDecision& p : d.place) small_running.push_back(p.job);
  }
  return -1;
}

TEST(AgeBound, AnAgedWideJobIsNotStarvedByBackfill) {
  // Without a bound the small jobs (level 0) take every GPU that frees before job 1 (level 1)
  // is visited, and it never starts.
  EXPECT_EQ(RoundsUntilTheWideJobStarts(0), -1);
  // With one, from its aging on it holds the reservation: small jobs no longer start on the
  // freed GPUs (held; the long run has no limit, so they are never lent), and it starts as
  // soon as the long run ends.
  EXPECT_EQ(RoundsUntilTheWideJobStarts(3 * kHour), 20);
}

// One GPU. Job 1 ran 2 GPU-hours earlier and starts again at `started` (it was submitted at
// 0); at 10 h, with preemption on, job 2 (level 0) arrives. Is job 1 displaced by LAS?
bool PreemptedByLas(DurationMs max_wait, TimeMs started) {
  SchedulerConfig c;
  c.corral.max_wait_ms = max_wait;
  Scheduler s(c);
  s.UpsertNode(MakeNode("n1").Gpus(1));
  s.AddRunning(Running(MakeJob(1).Gpus(1).Submit(0).Attained(4 * kHour).Preemptible(),
                       {{"n1", {0}}}, started));
  s.AddPending(MakeJob(2).Gpus(1).Submit(10 * kHour).Preemptible());
  Decisions d = s.Schedule(10 * kHour);
  for (const PreemptDecision& p : d.preempt) {
    if (p.job == 1) return true;
  }
  return false;
}

TEST(AgeBound, ARunThatStartedAgedIsNotALasVictim) {
  // It waited 5 h - 4 h of earlier runs = 1 h before this run.
  EXPECT_TRUE(PreemptedByLas(0, 5 * kHour));
  EXPECT_TRUE(PreemptedByLas(kHour + 1, 5 * kHour));
  EXPECT_FALSE(PreemptedByLas(kHour, 5 * kHour));
}

// One GPU held by job 1 (submitted at 9 h, running for 30 minutes: LAS level 0). Job 2 has
// run 3 GPU-hours before (level 1) and waits since 0: at 10 h it has waited 7 h.
Decisions AgedAgainstLowerLevel(DurationMs max_wait, bool displace) {
  SchedulerConfig c;
  c.corral.max_wait_ms = max_wait;
  c.corral.aged_may_displace = displace;
  Scheduler s(c);
  s.UpsertNode(MakeNode("n1").Gpus(1));
  s.AddRunning(Running(MakeJob(1).Gpus(1).Submit(9 * kHour).Preemptible(), {{"n1", {0}}},
                       10 * kHour - 30 * kMinute));
  s.AddPending(MakeJob(2).Gpus(1).Submit(0).Attained(3 * kHour).Preemptible());
  return s.Schedule(10 * kHour);
}

TEST(AgeBound, AnAgedJobDisplacesARunThatIsNotAgedWhateverItsLevel) {
  auto preempts_1 = [](const Decisions& d) {
    for (const PreemptDecision& p : d.preempt) {
      if (p.job == 1 && p.for_job == 2) {
        EXPECT_NE(p.reason.find("age bound"), std::string::npos) << p.reason;
        return true;
      }
    }
    return false;
  };
  EXPECT_FALSE(preempts_1(AgedAgainstLowerLevel(0, true)));  // LAS: a lower level is kept
  EXPECT_FALSE(preempts_1(AgedAgainstLowerLevel(7 * kHour + 1, true)));
  EXPECT_TRUE(preempts_1(AgedAgainstLowerLevel(7 * kHour, true)));
  EXPECT_FALSE(preempts_1(AgedAgainstLowerLevel(7 * kHour, false)));
}

TEST(AgeBound, TheBaselinesIgnoreIt) {
  SchedulerConfig c = NoPreemption(kMinute);
  c.policy = OrderPolicy::kLas;
  Decisions d = OldAgainstShort(c, 1000 * kHour);
  EXPECT_TRUE(Placed(d, 2));
  EXPECT_FALSE(Placed(d, 1));
}

}  // namespace
}  // namespace corral::sched
