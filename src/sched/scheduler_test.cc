// Unit tests, one rule at a time, on small hand-built clusters.
#include "sched/scheduler.h"

#include <gtest/gtest.h>

#include <set>

#include "sched/fair_share.h"
#include "sched/testing_builders.h"

namespace corral::sched {
namespace {

using testing::MakeJob;
using testing::MakeNode;
using testing::ReasonOf;
using testing::Running;

const PlaceDecision* FindPlace(const Decisions& d, JobId id) {
  for (const PlaceDecision& p : d.place) {
    if (p.job == id) return &p;
  }
  return nullptr;
}

std::set<std::string> NodesOf(const PlaceDecision* p) {
  std::set<std::string> out;
  if (p) {
    for (const ReplicaPlacement& r : p->placement) out.insert(r.node);
  }
  return out;
}

SchedulerConfig NoPreemptDelay() {
  SchedulerConfig c;
  c.min_runtime_before_preempt_ms = 0;
  return c;
}

// --- Placement -------------------------------------------------------------------------

TEST(PlacementTest, BestFitKeepsWholeNodesFree) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.UpsertNode(MakeNode("n2").Gpus(8));
  s.AddRunning(Running(MakeJob(100).Gpus(6), {{"n2", {0, 1, 2, 3, 4, 5}}}));
  s.AddPending(MakeJob(1).Gpus(2));
  Decisions d = s.Schedule(1000);
  EXPECT_EQ(NodesOf(FindPlace(d, 1)), std::set<std::string>{"n2"});
}

TEST(PlacementTest, TableOfShapes) {
  struct Case {
    const char* name;
    int replicas, gpus;
    size_t want_nodes;  // 0: not placed
  };
  const Case cases[] = {
      {"one gpu", 1, 1, 1},
      {"gang shares a node", 4, 2, 1},
      {"gang of two full nodes", 2, 8, 2},
      {"gang spills to a second node", 3, 4, 2},
      {"gang too big: nothing", 5, 8, 0},
      {"replica larger than a node", 1, 9, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Scheduler s;
    for (const char* n : {"n1", "n2", "n3", "n4"}) s.UpsertNode(MakeNode(n).Gpus(8));
    s.AddPending(MakeJob(1).Replicas(c.replicas).Gpus(c.gpus));
    Decisions d = s.Schedule(0);
    const PlaceDecision* p = FindPlace(d, 1);
    if (c.want_nodes == 0) {
      EXPECT_EQ(p, nullptr);
      EXPECT_EQ(s.GetStats().free_gpus, 32);  // nothing half-bound
      continue;
    }
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->placement.size(), static_cast<size_t>(c.replicas));
    EXPECT_EQ(NodesOf(p).size(), c.want_nodes);
    for (const ReplicaPlacement& r : p->placement) EXPECT_EQ(r.gpus.size(), size_t(c.gpus));
  }
}

TEST(PlacementTest, ReplicaStaysInOneNvlinkGroup) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(8, "A100", 4));  // groups {0-3}, {4-7}
  s.AddRunning(Running(MakeJob(100).Gpus(2), {{"n1", {0, 1}}}));
  s.AddPending(MakeJob(1).Gpus(2));
  s.AddPending(MakeJob(2).Gpus(4));
  Decisions d = s.Schedule(0);
  ASSERT_NE(FindPlace(d, 1), nullptr);
  ASSERT_NE(FindPlace(d, 2), nullptr);
  EXPECT_EQ(FindPlace(d, 1)->placement[0].gpus, (std::vector<int32_t>{2, 3}));  // fills group 0
  EXPECT_EQ(FindPlace(d, 2)->placement[0].gpus, (std::vector<int32_t>{4, 5, 6, 7}));
}

TEST(PlacementTest, GangPrefersOneRack) {
  Scheduler s;
  s.UpsertNode(MakeNode("a1").Gpus(8).Rack("r1"));
  s.UpsertNode(MakeNode("b1").Gpus(8).Rack("r2"));
  s.UpsertNode(MakeNode("b2").Gpus(8).Rack("r2"));
  s.AddPending(MakeJob(1).Replicas(2).Gpus(8));
  Decisions d = s.Schedule(0);
  EXPECT_EQ(NodesOf(FindPlace(d, 1)), (std::set<std::string>{"b1", "b2"}));
}

TEST(PlacementTest, ConstraintsHealthAndSchedulability) {
  Scheduler s;
  s.UpsertNode(MakeNode("v1").Gpus(8, "V100"));
  s.UpsertNode(MakeNode("h1").Gpus(8, "H100").Label("zone", "z1"));
  s.UpsertNode(MakeNode("h2").Gpus(2, "H100").Unhealthy(0));
  s.UpsertNode(MakeNode("h3").Gpus(8, "H100").Unschedulable());
  s.AddPending(MakeJob(1).Gpus(4).Model("V100"));
  s.AddPending(MakeJob(2).Gpus(2).Label("zone", "z1"));
  s.AddPending(MakeJob(3).Gpus(2).Model("H100"));  // h2 has one healthy GPU only
  Decisions d = s.Schedule(0);
  EXPECT_EQ(NodesOf(FindPlace(d, 1)), std::set<std::string>{"v1"});
  EXPECT_EQ(NodesOf(FindPlace(d, 2)), std::set<std::string>{"h1"});
  EXPECT_EQ(NodesOf(FindPlace(d, 3)), std::set<std::string>{"h1"});
}

TEST(PlacementTest, CpuAndMemoryBound) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(8).Cpus(4).MemoryMb(8000));
  s.AddPending(MakeJob(1).Gpus(1).Cpus(3));
  s.AddPending(MakeJob(2).Gpus(1).Cpus(2));  // 1 core left
  s.AddPending(MakeJob(3).Gpus(1).Cpus(1).MemoryMb(9000));
  Decisions d = s.Schedule(0);
  EXPECT_NE(FindPlace(d, 1), nullptr);
  EXPECT_EQ(FindPlace(d, 2), nullptr);
  EXPECT_EQ(FindPlace(d, 3), nullptr);
}

TEST(PlacementTest, UpsertKeepsBindingsAndReAddedNodeKeepsRuns) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(4));
  s.AddRunning(Running(MakeJob(100).Gpus(2), {{"n1", {0, 1}}}));
  s.UpsertNode(MakeNode("n1").Gpus(4));
  EXPECT_EQ(s.GetStats().free_gpus, 2);
  s.RemoveNode("n1");
  s.UpsertNode(MakeNode("n1").Gpus(4));
  EXPECT_EQ(s.GetStats().free_gpus, 2);
  s.RemoveRunning(100);
  EXPECT_EQ(s.GetStats().free_gpus, 4);
}

// --- Admission -------------------------------------------------------------------------

TEST(AdmitTest, Table) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.UpsertNode(MakeNode("n2").Gpus(8, "H100"));
  s.SetQueue({"small", 0, 4, 1.0});
  s.SetQueue({"org", 0, 8, 1.0});
  struct Case {
    const char* name;
    PendingJob job;
    Fit want;
  } cases[] = {
      {"fits", MakeJob(1).Gpus(8), Fit::kWait},
      {"gang across both", MakeJob(2).Replicas(2).Gpus(8), Fit::kWait},
      {"too many replicas", MakeJob(3).Replicas(3).Gpus(8), Fit::kInfeasible},
      {"replica too big", MakeJob(4).Gpus(9), Fit::kInfeasible},
      {"model", MakeJob(5).Replicas(2).Gpus(8).Model("H100"), Fit::kInfeasible},
      {"label", MakeJob(6).Gpus(1).Label("zone", "x"), Fit::kInfeasible},
      {"queue limit", MakeJob(7).Gpus(8).Queue("small"), Fit::kInfeasible},
      {"parent limit", MakeJob(8).Replicas(2).Gpus(8).Queue("org/team"), Fit::kInfeasible},
      {"under parent limit", MakeJob(9).Gpus(8).Queue("org/team"), Fit::kWait},
      {"cpus", MakeJob(10).Gpus(1).Cpus(65), Fit::kInfeasible},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string why;
    EXPECT_EQ(s.Admit(c.job, &why), c.want);
    EXPECT_EQ(why.empty(), c.want != Fit::kInfeasible) << why;
  }
  std::string why;
  ASSERT_EQ(s.Admit(MakeJob(11).Gpus(1).Cpus(65), &why), Fit::kInfeasible);
  EXPECT_NE(why.find(", 65 CPUs, "), std::string::npos) << why;  // not "65.000000 CPUs"
}

// --- Order -----------------------------------------------------------------------------

TEST(OrderTest, PriorityThenSubmitTime) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(1));
  s.AddPending(MakeJob(1).Gpus(1).Submit(1));
  s.AddPending(MakeJob(2).Gpus(1).Submit(2).Priority(5));
  Decisions d = s.Schedule(10);
  EXPECT_NE(FindPlace(d, 2), nullptr);
  EXPECT_EQ(FindPlace(d, 1), nullptr);
}

TEST(OrderTest, QueueUnderQuotaAndLowerShareFirst) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(4));
  s.SetQueue({"a", 2, -1, 1.0});
  s.SetQueue({"b", 2, -1, 1.0});
  s.AddRunning(Running(MakeJob(100).Gpus(2).Queue("a"), {{"n1", {0, 1}}}));
  // b is under its quota, a is at it: b's later job goes first.
  s.AddPending(MakeJob(1).Gpus(1).Queue("a").Submit(1));
  s.AddPending(MakeJob(2).Gpus(1).Queue("b").Submit(2));
  s.AddPending(MakeJob(3).Gpus(1).Queue("b").Submit(3));
  Decisions d = s.Schedule(10);
  EXPECT_NE(FindPlace(d, 2), nullptr);
  EXPECT_NE(FindPlace(d, 3), nullptr);
  EXPECT_EQ(FindPlace(d, 1), nullptr);
}

TEST(OrderTest, DecayedUsageLowersAQueuesTurn) {
  SchedulerConfig c;
  c.fair_share_half_life_ms = kHour;
  c.preemption = false;
  Scheduler s(c);
  s.UpsertNode(MakeNode("n1").Gpus(2));
  // Queue a used both GPUs for an hour; b never ran.
  s.AddRunning(Running(MakeJob(100).Gpus(2).Queue("a"), {{"n1", {0, 1}}}));
  (void)s.Schedule(0);
  (void)s.Schedule(kHour);
  s.RemoveRunning(100);
  s.AddPending(MakeJob(1).Gpus(1).Queue("a").Submit(1));
  s.AddPending(MakeJob(2).Gpus(1).Queue("b").Submit(2));
  s.UpsertNode(MakeNode("n1").Gpus(1));
  Decisions d = s.Schedule(kHour + 1);
  EXPECT_NE(FindPlace(d, 2), nullptr);
  EXPECT_EQ(FindPlace(d, 1), nullptr);
}

TEST(OrderTest, QueuesInterleaveWithinAPass) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(4));
  for (JobId i = 1; i <= 4; ++i) s.AddPending(MakeJob(i).Gpus(1).Queue("a"));
  for (JobId i = 5; i <= 8; ++i) s.AddPending(MakeJob(i).Gpus(1).Queue("b"));
  Decisions d = s.Schedule(0);
  EXPECT_EQ(d.place.size(), 4u);
  EXPECT_EQ(s.QueueAllocatedGpus("a"), 2);
  EXPECT_EQ(s.QueueAllocatedGpus("b"), 2);
}

TEST(OrderTest, UserFairShareInsideAQueue) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(2));
  s.AddPending(MakeJob(1).Gpus(1).User("alice"));
  s.AddPending(MakeJob(2).Gpus(1).User("alice"));
  s.AddPending(MakeJob(3).Gpus(1).User("bob"));
  Decisions d = s.Schedule(0);
  EXPECT_NE(FindPlace(d, 1), nullptr);
  EXPECT_NE(FindPlace(d, 3), nullptr);
  EXPECT_EQ(FindPlace(d, 2), nullptr);
}

TEST(OrderTest, QueueLimitHoldsAndIsReported) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.SetQueue({"a", 0, 2, 1.0});
  s.AddPending(MakeJob(1).Gpus(2).Queue("a"));
  s.AddPending(MakeJob(2).Gpus(1).Queue("a"));
  Decisions d = s.Schedule(0);
  EXPECT_NE(FindPlace(d, 1), nullptr);
  EXPECT_EQ(FindPlace(d, 2), nullptr);
  EXPECT_NE(ReasonOf(d, 2).find("limit"), std::string::npos) << ReasonOf(d, 2);
  // Unchanged reasons are not repeated.
  Decisions d2 = s.Schedule(1);
  EXPECT_EQ(ReasonOf(d2, 2), "");
}

// A queue's max_interactive_gpus_per_user holds one user's sessions (counting the running
// ones, given at recovery too), not their batch jobs nor another user's sessions; a run that
// ends gives its room back.
TEST(OrderTest, InteractiveGpusPerUserAreCapped) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(8));
  QueueConfig dev{"dev", 0, -1, 1.0};
  dev.max_interactive_gpus_per_user = 2;
  s.SetQueue(dev);
  s.AddRunning(Running(MakeJob(100).Gpus(1).Queue("dev").User("ana").Interactive(), {{"n1", {0}}}));
  s.AddPending(MakeJob(1).Gpus(2).Queue("dev").User("ana").Interactive());
  s.AddPending(MakeJob(2).ShareMilli(500).Queue("dev").User("ana").Interactive());
  s.AddPending(MakeJob(3).Gpus(2).Queue("dev").User("ana"));
  s.AddPending(MakeJob(4).Gpus(2).Queue("dev").User("bob").Interactive());
  Decisions d = s.Schedule(0);
  EXPECT_EQ(FindPlace(d, 1), nullptr);
  EXPECT_EQ(ReasonOf(d, 1),
            "user ana's interactive sessions hold 1 GPUs in queue dev, its "
            "max_interactive_gpus_per_user is 2");
  for (const WaitReason& w : d.waiting) {
    if (w.job == 1) {
      EXPECT_EQ(w.code, PendingCode::kQueueLimit);
    }
  }
  EXPECT_NE(FindPlace(d, 2), nullptr) << "half a GPU fits under the cap: " << ReasonOf(d, 2);
  EXPECT_NE(FindPlace(d, 3), nullptr) << "a batch job is not counted";
  EXPECT_NE(FindPlace(d, 4), nullptr) << "bob has his own";
  // Now 1.5 GPUs of sessions: the 2-GPU one waits until the running one ends.
  EXPECT_EQ(FindPlace(s.Schedule(1), 1), nullptr);
  s.RemoveRunning(100);
  s.RemoveRunning(2);
  EXPECT_NE(FindPlace(s.Schedule(2), 1), nullptr);
}

// --- Preemption ------------------------------------------------------------------------

TEST(PreemptTest, QueueReclaimsBorrowedQuota) {
  Scheduler s(NoPreemptDelay());
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.SetQueue({"a", 8, -1, 1.0});
  s.SetQueue({"b", 0, -1, 1.0});
  s.AddRunning(
      Running(MakeJob(100).Gpus(8).Queue("b").Preemptible(), {{"n1", {0, 1, 2, 3, 4, 5, 6, 7}}}));
  s.AddPending(MakeJob(1).Gpus(4).Queue("a"));
  Decisions d = s.Schedule(1000);
  ASSERT_EQ(d.preempt.size(), 1u);
  EXPECT_EQ(d.preempt[0].job, 100u);
  EXPECT_EQ(d.preempt[0].for_job, 1u);
  EXPECT_NE(d.preempt[0].reason.find("queue a"), std::string::npos) << d.preempt[0].reason;
  EXPECT_TRUE(d.place.empty());
  EXPECT_TRUE(s.IsBeingPreempted(100));
  // The victim keeps its GPUs until the driver removes it; no duplicate preemption.
  Decisions d2 = s.Schedule(2000);
  EXPECT_TRUE(d2.preempt.empty());
  EXPECT_TRUE(d2.place.empty());
  s.RemoveRunning(100);
  Decisions d3 = s.Schedule(3000);
  EXPECT_NE(FindPlace(d3, 1), nullptr);
}

TEST(PreemptTest, EligibilityTable) {
  struct Case {
    const char* name;
    PendingJob victim;
    TimeMs victim_started;
    PendingJob job;
    bool want_preempt;
  } cases[] = {
      {"higher priority same queue", MakeJob(100).Gpus(8).Preemptible(), 0,
       MakeJob(1).Gpus(8).Priority(1), true},
      {"not preemptible", MakeJob(100).Gpus(8), 0, MakeJob(1).Gpus(8).Priority(1), false},
      // 8 GPUs x 5 minutes: below the first LAS level (1 GPU-hour); x 10 minutes: above.
      {"same priority, same LAS level", MakeJob(100).Gpus(8).Preemptible(), 5 * kMinute,
       MakeJob(1).Gpus(8), false},
      // 1 GPU-hour from earlier runs + 80 GPU-minutes: past twice the threshold (hysteresis).
      {"same priority, higher LAS level", MakeJob(100).Gpus(8).Preemptible().Attained(kHour), 0,
       MakeJob(1).Gpus(8), true},
      {"same priority, higher LAS level within the hysteresis", MakeJob(100).Gpus(8).Preemptible(),
       0, MakeJob(1).Gpus(8), false},
      {"higher LAS level, job close to the threshold",
       MakeJob(100).Gpus(8).Preemptible().Attained(kHour), 0,
       MakeJob(1).Gpus(8).Attained(40 * kMinute), false},
      {"higher priority, higher LAS level", MakeJob(100).Gpus(8).Preemptible().Priority(1), 0,
       MakeJob(1).Gpus(8), false},
      {"higher LAS level, other queue", MakeJob(100).Gpus(8).Preemptible().Queue("q8"), 0,
       MakeJob(1).Gpus(8), false},
      {"min runtime not reached", MakeJob(100).Gpus(8).Preemptible(), 9 * kMinute,
       MakeJob(1).Gpus(8).Priority(1), false},
      {"other queue under quota", MakeJob(100).Gpus(8).Preemptible().Queue("q8"), 0,
       MakeJob(1).Gpus(8).Priority(5), false},
      {"other queue over quota, higher priority", MakeJob(100).Gpus(8).Preemptible().Queue("b"), 0,
       MakeJob(1).Gpus(8).Priority(5), true},
      {"reclaim: job exceeds its quota", MakeJob(100).Gpus(8).Preemptible().Queue("b"), 0,
       MakeJob(1).Gpus(8).Queue("q4"), false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Scheduler s;  // min runtime 5 minutes
    s.UpsertNode(MakeNode("n1").Gpus(8));
    s.SetQueue({"q8", 8, -1, 1.0});
    s.SetQueue({"q4", 4, -1, 1.0});
    s.AddRunning(Running(c.victim, {{"n1", {0, 1, 2, 3, 4, 5, 6, 7}}}, c.victim_started));
    s.AddPending(c.job);
    Decisions d = s.Schedule(10 * kMinute);
    EXPECT_EQ(d.preempt.size(), c.want_preempt ? 1u : 0u);
  }
}

TEST(PreemptTest, LeastLostWorkAndOnlyWhatIsNeeded) {
  Scheduler s(NoPreemptDelay());
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.AddRunning(Running(MakeJob(100).Gpus(4).Preemptible(), {{"n1", {0, 1, 2, 3}}}, 0));
  s.AddRunning(Running(MakeJob(101).Gpus(2).Preemptible(), {{"n1", {4, 5}}}, 500));
  s.AddRunning(Running(MakeJob(102).Gpus(2).Preemptible(), {{"n1", {6, 7}}}, 900));
  s.AddPending(MakeJob(1).Gpus(4).Priority(1));
  Decisions d = s.Schedule(1000);
  // 101+102 lose 2*500 + 2*100 = 1200 GPU-ms; 100 would lose 4000.
  std::set<JobId> victims;
  for (const PreemptDecision& p : d.preempt) victims.insert(p.job);
  EXPECT_EQ(victims, (std::set<JobId>{101, 102}));
}

TEST(PreemptTest, GangIsOneVictimAndVictimsMakeRoom) {
  Scheduler s(NoPreemptDelay());
  s.UpsertNode(MakeNode("n1").Gpus(4));
  s.UpsertNode(MakeNode("n2").Gpus(4));
  s.AddRunning(
      Running(MakeJob(100).Replicas(2).Gpus(2).Preemptible(), {{"n1", {0, 1}}, {"n2", {0, 1}}}, 0));
  s.AddRunning(Running(MakeJob(101).Gpus(2), {{"n2", {2, 3}}}, 0));  // not preemptible
  s.AddPending(MakeJob(1).Gpus(4).Priority(1));
  Decisions d = s.Schedule(1000);
  ASSERT_EQ(d.preempt.size(), 1u);
  EXPECT_EQ(d.preempt[0].job, 100u);
  // A job that no victim set can make room for preempts nobody.
  s.AddPending(MakeJob(2).Replicas(2).Gpus(4).Priority(1));
  Decisions d2 = s.Schedule(2000);
  EXPECT_TRUE(d2.preempt.empty());
}

TEST(PreemptTest, SrtfPreemptsLongerRemaining) {
  SchedulerConfig c = NoPreemptDelay();
  c.policy = OrderPolicy::kSrtf;
  Scheduler s(c);
  s.UpsertNode(MakeNode("n1").Gpus(1));
  s.AddRunning(Running(MakeJob(100).Gpus(1).Preemptible().Oracle(10000), {{"n1", {0}}}, 0));
  s.AddPending(MakeJob(1).Gpus(1).Preemptible().Oracle(5000));
  s.AddPending(MakeJob(2).Gpus(1).Preemptible().Oracle(9500));
  Decisions d = s.Schedule(1000);  // 100 has 9000 left
  ASSERT_EQ(d.preempt.size(), 1u);
  EXPECT_EQ(d.preempt[0].for_job, 1u);
}

TEST(PreemptTest, LasPreemptsHigherLevel) {
  SchedulerConfig c = NoPreemptDelay();
  c.policy = OrderPolicy::kLas;
  c.las_thresholds_gpu_ms = {1000};
  Scheduler s(c);
  s.UpsertNode(MakeNode("n1").Gpus(1));
  s.AddRunning(Running(MakeJob(100).Gpus(1).Preemptible(), {{"n1", {0}}}, 0));
  s.AddPending(MakeJob(1).Gpus(1).Preemptible().Attained(0));
  EXPECT_TRUE(s.Schedule(500).preempt.empty());  // both in level 0
  Decisions d = s.Schedule(1500);                // the runner reached level 1
  ASSERT_EQ(d.preempt.size(), 1u);
  EXPECT_EQ(d.preempt[0].job, 100u);
}

// --- Backfill --------------------------------------------------------------------------

TEST(BackfillTest, ShortJobBackfillsLongJobWaits) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.UpsertNode(MakeNode("n2").Gpus(8));
  s.AddRunning(Running(MakeJob(100).Gpus(8).Limit(1000), {{"n1", {0, 1, 2, 3, 4, 5, 6, 7}}}, 0));
  s.AddPending(MakeJob(1).Replicas(2).Gpus(8).Submit(1));
  s.AddPending(MakeJob(2).Gpus(8).Limit(500).Submit(2));   // ends at 600 < 1000
  s.AddPending(MakeJob(3).Gpus(8).Limit(5000).Submit(3));  // would delay job 1
  s.AddPending(MakeJob(4).Gpus(8).Submit(4));              // no limit: would delay job 1
  Decisions d = s.Schedule(100);
  ASSERT_EQ(d.reservations.size(), 1u);
  EXPECT_EQ(d.reservations[0].job, 1u);
  EXPECT_EQ(d.reservations[0].start, 1000);
  EXPECT_NE(FindPlace(d, 2), nullptr);
  EXPECT_EQ(FindPlace(d, 3), nullptr);
  EXPECT_EQ(FindPlace(d, 4), nullptr);
  EXPECT_NE(ReasonOf(d, 1).find("reserved"), std::string::npos) << ReasonOf(d, 1);
}

TEST(BackfillTest, NoStarvationWithoutTimeLimits) {
  SchedulerConfig c;
  c.preemption = false;
  Scheduler s(c);
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.AddRunning(Running(MakeJob(100).Gpus(4), {{"n1", {0, 1, 2, 3}}}, 0));
  s.AddPending(MakeJob(1).Gpus(8).Submit(1));
  for (JobId i = 2; i < 10; ++i) s.AddPending(MakeJob(i).Gpus(1).Submit(static_cast<TimeMs>(i)));
  Decisions d = s.Schedule(100);
  EXPECT_TRUE(d.place.empty()) << "small jobs took the big job's room";
  ASSERT_EQ(d.reservations.size(), 1u);
  EXPECT_EQ(d.reservations[0].start, kUnknownTime);
  s.RemoveRunning(100);
  Decisions d2 = s.Schedule(200);
  EXPECT_NE(FindPlace(d2, 1), nullptr);
}

TEST(BackfillTest, GreedyWithoutReservations) {
  SchedulerConfig c;
  c.reservation_depth = 0;
  Scheduler s(c);
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.AddRunning(Running(MakeJob(100).Gpus(4), {{"n1", {0, 1, 2, 3}}}, 0));
  s.AddPending(MakeJob(1).Gpus(8).Submit(1));
  s.AddPending(MakeJob(2).Gpus(1).Submit(2));
  Decisions d = s.Schedule(100);
  EXPECT_NE(FindPlace(d, 2), nullptr);
}

TEST(BackfillTest, FifoIsStrictHeadOfLine) {
  SchedulerConfig c;
  c.policy = OrderPolicy::kFifo;
  Scheduler s(c);
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.AddRunning(Running(MakeJob(100).Gpus(4), {{"n1", {0, 1, 2, 3}}}, 0));
  s.AddPending(MakeJob(1).Gpus(8).Submit(1));
  s.AddPending(MakeJob(2).Gpus(1).Limit(1).Submit(2));
  EXPECT_TRUE(s.Schedule(100).place.empty());
}

TEST(OrderTest, SjfShortestFirst) {
  SchedulerConfig c;
  c.policy = OrderPolicy::kSjf;
  Scheduler s(c);
  s.UpsertNode(MakeNode("n1").Gpus(1));
  s.AddPending(MakeJob(1).Gpus(1).Oracle(500).Submit(1));
  s.AddPending(MakeJob(2).Gpus(1).Oracle(100).Submit(2));
  Decisions d = s.Schedule(0);
  EXPECT_NE(FindPlace(d, 2), nullptr);
}

// --- Scale helpers and determinism -----------------------------------------------------

TEST(ClassTest, IdenticalRequestsAreSkippedOnceOneFails) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.AddRunning(Running(MakeJob(100).Gpus(8), {{"n1", {0, 1, 2, 3, 4, 5, 6, 7}}}, 0));
  for (JobId i = 1; i <= 50; ++i) s.AddPending(MakeJob(i).Gpus(1).Submit(static_cast<TimeMs>(i)));
  Decisions d = s.Schedule(0);
  EXPECT_TRUE(d.place.empty());
  EXPECT_EQ(s.GetStats().last_pass_attempts, 1);
}

// The pass stops once no job left to visit could use the free GPUs: here they are all held
// for a preemption (the hold starts now), so short jobs may not use them even though the
// pass's one reservation starts hours later. Each class of short jobs would fail in turn.
TEST(ClassTest, PassStopsWhenHeldGpusServeNoShortJob) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.UpsertNode(MakeNode("n2").Gpus(8));
  s.AddRunning(Running(MakeJob(100).Gpus(4).Preemptible(), {{"n1", {0, 1, 2, 3}}}, 0));
  s.AddRunning(
      Running(MakeJob(101).Gpus(8).Limit(5 * kHour), {{"n2", {0, 1, 2, 3, 4, 5, 6, 7}}}, 0));
  s.AddPending(MakeJob(1).Gpus(8).Priority(1).Submit(1));  // preempts 100, holds n1's rest
  s.AddPending(MakeJob(2).Gpus(8).Submit(2));              // reserved on n2 at 5 h
  // 20 classes (their CPUs differ) of one-GPU jobs with a one-hour limit.
  for (JobId i = 3; i < 23; ++i) {
    s.AddPending(MakeJob(i).Gpus(1).Cpus(static_cast<int>(i)).Limit(kHour).Submit(i));
  }
  Decisions d = s.Schedule(10 * kMinute);
  ASSERT_EQ(d.preempt.size(), 1u);
  EXPECT_EQ(d.preempt[0].job, 100);
  ASSERT_EQ(d.reservations.size(), 1u);
  EXPECT_EQ(d.reservations[0].job, 2);
  EXPECT_EQ(d.reservations[0].start, 5 * kHour);
  EXPECT_TRUE(d.place.empty());
  EXPECT_EQ(s.GetStats().last_pass_attempts, 2);
}

TEST(ClassTest, WorkBudgetStopsThePass) {
  SchedulerConfig c;
  c.max_work_per_pass = 10;
  Scheduler s(c);
  for (int n = 0; n < 20; ++n) s.UpsertNode(MakeNode("n" + std::to_string(n)).Gpus(1));
  for (JobId i = 1; i <= 20; ++i) s.AddPending(MakeJob(i).Gpus(1).User(std::to_string(i)));
  Decisions d = s.Schedule(0);
  EXPECT_LT(d.place.size(), 20u);
  EXPECT_TRUE(s.GetStats().last_pass_budget_exhausted);
}

// Past usage added at once (a recovering head) equals what integrating the same allocation
// pass by pass gives, and decays the same afterwards.
TEST(FairShareHistory, PastRunsCountAsIfIntegratedLive) {
  const DurationMs h = 10 * kHour;
  const TimeMs t0 = 100 * kHour;
  QueueBook live(h);
  int32_t lq = live.Id("org/a");
  int32_t lu = live.UserId(lq, "ana");
  live.Charge(lq, lu, 8 * kGpuMilli, 0, 0, +1);  // placed at t0 and ended at t0 + h, between passes
  live.Advance(t0, 8, 0, 0);
  live.Advance(t0 + h / 2, 8, 0, 0);
  live.Advance(t0 + h, 8, 0, 0);
  live.Charge(lq, lu, 8 * kGpuMilli, 0, 0, -1);
  live.Advance(t0 + h, 8, 0, 0);

  QueueBook past(h);
  int32_t pq = past.Id("org/a");
  int32_t pu = past.UserId(pq, "ana");
  ASSERT_TRUE(past.AddPast(pq, pu, 8 * kGpuMilli, 0, 0, t0, t0 + h, t0 + h));
  past.AnchorAt(t0 + h);
  past.Advance(t0 + h, 8, 0, 0);
  EXPECT_NEAR(past.Share(pq), 4.0, 1e-9);  // 8 GPUs for one half-life: 8 * (1 - 1/2)
  EXPECT_NEAR(past.Share(pq), live.Share(lq), 1e-9);
  EXPECT_NEAR(past.UserShare(pq, pu), live.UserShare(lq, lu), 1e-9);
  EXPECT_NEAR(past.Share(past.FindId("org")), 4.0, 1e-9);  // ancestors too

  // A run that ended a half-life before counts half; all of it decays on from `now`.
  ASSERT_TRUE(past.AddPast(pq, pu, 8 * kGpuMilli, 0, 0, t0 - h, t0, t0 + h));
  past.AnchorAt(t0 + h);
  EXPECT_NEAR(past.Share(pq), 4.0 + 2.0, 1e-9);
  past.Advance(t0 + 2 * h, 8, 0, 0);
  live.Advance(t0 + 2 * h, 8, 0, 0);
  EXPECT_NEAR(past.Share(pq), 3.0, 1e-9);
  EXPECT_NEAR(live.Share(lq), 2.0, 1e-9);
}

TEST(FairShareHistory, QueueWithPastUsageWaitsBehindOneWithout) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(1));
  PastUsage used;
  used.queue = "a";
  used.user = "ana";
  used.gpu_milli = 1000;
  used.from = 0;
  used.to = 10 * kHour;
  s.AddPastUsage({used}, 10 * kHour);
  s.AddPending(MakeJob(1).Gpus(1).Queue("a").User("ana"));  // first by submit time and id
  s.AddPending(MakeJob(2).Gpus(1).Queue("b").User("bob"));
  Decisions d = s.Schedule(10 * kHour + kSecond);
  ASSERT_EQ(d.place.size(), 1u);
  EXPECT_EQ(d.place[0].job, 2u);
}

}  // namespace
}  // namespace corral::sched
