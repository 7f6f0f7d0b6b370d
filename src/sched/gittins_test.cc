// The Gittins index of attained service (SchedulerConfig::gittins): the estimator's index from
// the service of a queue's ended jobs, and where kCorral's order uses it instead of (or inside)
// the LAS level.
#include <gtest/gtest.h>

#include <initializer_list>

#include "sched/job_input.h"
#include "sched/order_policy.h"
#include "sched/runtime_estimate.h"
#include "sched/scheduler.h"
#include "sched/testing_builders.h"

namespace corral::sched {
namespace {

using testing::MakeJob;
using testing::MakeNode;
using testing::Placed;
using testing::Running;

// Half of queue q's jobs took 10 GPU-minutes, half 10 GPU-hours.
RuntimeEstimator Bimodal(EstimatorConfig config = {}) {
  RuntimeEstimator e(config);
  for (int i = 0; i < 5; ++i) {
    e.Observe({"", "", "q", 1, 10 * kMinute});
    e.Observe({"", "", "q", 1, 10 * kHour});
  }
  return e;
}

TEST(GittinsIndexTest, NoHistoryNoIndex) {
  RuntimeEstimator e;
  EXPECT_EQ(e.GittinsServiceMs("q", 1, 0), 0);
  e.Observe({"", "", "other", 1, kHour});
  EXPECT_EQ(e.GittinsServiceMs("q", 1, 0), 0);
}

TEST(GittinsIndexTest, BimodalServiceIsNotLeastAttainedFirst) {
  RuntimeEstimator e = Bimodal();
  // New: a quantum of 10 minutes ends half the jobs for 10 minutes each: 20 minutes of
  // service per completion (a quantum of 10 hours: 5 h 5 min).
  EXPECT_EQ(e.GittinsServiceMs("q", 1, 0), 20 * kMinute);
  // 5 minutes in: a quantum of 5 more minutes ends half: 10 minutes per completion. A job
  // that has attained more ranks higher, where LAS puts it behind the new ones.
  EXPECT_EQ(e.GittinsServiceMs("q", 1, 5 * kMinute), 10 * kMinute);
  // Past the short mode only the 10-hour jobs are left.
  EXPECT_EQ(e.GittinsServiceMs("q", 1, 20 * kMinute), 10 * kHour - 20 * kMinute);
  // Past every ended job: guessed to take as long again.
  EXPECT_EQ(e.GittinsServiceMs("q", 1, 20 * kHour), 20 * kHour);
  // Past every ended job of its queue, but not of the cluster: the cluster's longer jobs.
  e.Observe({"", "", "long", 1, 40 * kHour});
  EXPECT_EQ(e.GittinsServiceMs("q", 1, 20 * kHour), 20 * kHour);  // 40 h - 20 h
  EXPECT_EQ(e.GittinsServiceMs("q", 1, 30 * kHour), 10 * kHour);
  // The service is GPU-time: an 8-GPU job's history counts 8x.
  e.Observe({"", "", "wide", 8, kHour});
  EXPECT_EQ(e.GittinsServiceMs("wide", 8, 0), 8 * kHour);
}

TEST(GittinsIndexTest, PerQueueAndGpusOnceItHasEnoughHistory) {
  RuntimeEstimator e = Bimodal(EstimatorConfig{.gittins_by_queue_gpus = true});
  for (int i = 0; i + 1 < kMinGittinsSamples; ++i) e.Observe({"", "", "q", 4, 4 * kMinute});
  // Seven 4-GPU jobs are too few: the queue's distribution answers.
  EXPECT_NE(e.GittinsServiceMs("q", 4, 0), 16 * kMinute);
  e.Observe({"", "", "q", 4, 4 * kMinute});
  EXPECT_EQ(e.GittinsServiceMs("q", 4, 0), 16 * kMinute);
  EXPECT_EQ(e.GittinsServiceMs("q", 1, 0), 20 * kMinute);  // its own key, by the 1-GPU jobs
}

TEST(GittinsIndexTest, TheClustersDistributionAsAPriorWeighsMostOnQueuesWithFewJobs) {
  auto fill = [](RuntimeEstimator& e) {
    for (int i = 0; i < 90; ++i) e.Observe({"", "", "big", 1, 10 * kMinute});
    e.Observe({"", "", "tiny", 1, 10 * kHour});
  };
  RuntimeEstimator own;
  fill(own);
  EXPECT_EQ(own.GittinsServiceMs("tiny", 1, 0), 10 * kHour);
  EXPECT_EQ(own.GittinsServiceMs("big", 1, 0), 10 * kMinute);
  RuntimeEstimator prior(EstimatorConfig{.gittins_prior_jobs = 8});
  fill(prior);
  // tiny's one job against eight of the cluster's, nearly all of 10 minutes.
  EXPECT_LT(prior.GittinsServiceMs("tiny", 1, 0), 12 * kMinute);
  // big's 90 jobs hardly move.
  EXPECT_NEAR(static_cast<double>(prior.GittinsServiceMs("big", 1, 0)), 10.0 * kMinute,
              0.01 * kMinute);
  // A queue with no history of its own gets the cluster's.
  EXPECT_GT(prior.GittinsServiceMs("new", 1, 0), 0);
}

TEST(GittinsIndexTest, ToPendingJobComputesItAtTheAttainedService) {
  RuntimeEstimator e = Bimodal();
  Job job;
  job.id = 1;
  job.spec.queue = "q";
  job.spec.replicas = 1;
  job.spec.per_replica.gpu_milli = kGpuMilli;
  EXPECT_EQ(ToPendingJob(job, &e).gittins_ms, 20 * kMinute);
  EXPECT_EQ(ToPendingJob(job).gittins_ms, 0);  // no estimator, no index
  corral::Run r;
  r.state = RunState::kPreempted;
  r.scheduled_at = 1;
  r.started_at = 1000;
  r.ended_at = 1000 + 5 * kMinute;
  job.runs.push_back(r);
  EXPECT_EQ(ToPendingJob(job, &e).gittins_ms, 10 * kMinute);
}

// One queue "q", one free GPU, no preemption: the pass over `jobs` (ids 1 and 2).
Decisions OneGpuPass(GittinsOrder mode, std::initializer_list<PendingJob> jobs) {
  SchedulerConfig c;
  c.preemption = false;
  c.gittins = mode;
  Scheduler s(c);
  s.UpsertNode(MakeNode("n1").Gpus(1));
  s.SetQueue({"q", 1, -1, 1.0});
  for (const PendingJob& j : jobs) s.AddPending(j);
  return s.Schedule(10);
}

// Two level-0 jobs: 1 submitted first and new, 2 later and 5 minutes in, with the indices of
// the bimodal queue above.
Decisions TwoJobsOneGpu(GittinsOrder mode) {
  return OneGpuPass(
      mode, {MakeJob(1).Gpus(1).Queue("q").Submit(0).Gittins(20 * kMinute),
             MakeJob(2).Gpus(1).Queue("q").Submit(1).Attained(5 * kMinute).Gittins(10 * kMinute)});
}

TEST(GittinsOrderTest, OffTheLevelThenSubmitOrderDecides) {
  Decisions d = TwoJobsOneGpu(GittinsOrder::kOff);
  EXPECT_TRUE(Placed(d, 1));
  EXPECT_FALSE(Placed(d, 2));
}

TEST(GittinsOrderTest, InsideALevelTheHigherIndexGoesFirst) {
  for (GittinsOrder mode : {GittinsOrder::kInsideLevel, GittinsOrder::kForLevel}) {
    Decisions d = TwoJobsOneGpu(mode);
    EXPECT_TRUE(Placed(d, 2)) << GittinsOrderName(mode);
    EXPECT_FALSE(Placed(d, 1)) << GittinsOrderName(mode);
  }
  // Only the queues' order uses it: inside the queue, submit order.
  Decisions d = TwoJobsOneGpu(GittinsOrder::kQueuesOnly);
  EXPECT_TRUE(Placed(d, 1));
}

TEST(GittinsOrderTest, IndicesInOnePowerOfTwoOfGpuMinutesTie) {
  // 12 and 10 GPU-minutes are one bucket (8-15): the index drifts with the history between
  // the two jobs' (re)queueing, so the next keys decide, here submit order.
  Decisions d = OneGpuPass(GittinsOrder::kForLevel,
                           {MakeJob(1).Gpus(1).Queue("q").Submit(0).Gittins(12 * kMinute),
                            MakeJob(2).Gpus(1).Queue("q").Submit(1).Gittins(10 * kMinute)});
  EXPECT_TRUE(Placed(d, 1));
  EXPECT_FALSE(Placed(d, 2));
  EXPECT_EQ(MinuteBucket(0), 0);
  EXPECT_EQ(MinuteBucket(59 * kSecond), 0);
  EXPECT_EQ(MinuteBucket(kMinute), 1);
  EXPECT_EQ(MinuteBucket(15 * kMinute), 4);
  EXPECT_EQ(MinuteBucket(16 * kMinute), 5);
}

// A level-1 job (2 GPU-hours attained) whose index is higher than a new level-0 job's.
Decisions AcrossLevels(GittinsOrder mode) {
  return OneGpuPass(mode,
                    {MakeJob(1).Gpus(1).Queue("q").Submit(0).Attained(2 * kHour).Gittins(kMinute),
                     MakeJob(2).Gpus(1).Queue("q").Submit(1).Gittins(kHour)});
}

TEST(GittinsOrderTest, ForLevelTakesTheLevelsPlace) {
  Decisions d = AcrossLevels(GittinsOrder::kForLevel);
  EXPECT_TRUE(Placed(d, 1));
  EXPECT_FALSE(Placed(d, 2));
  d = AcrossLevels(GittinsOrder::kInsideLevel);
  EXPECT_TRUE(Placed(d, 2));
  EXPECT_FALSE(Placed(d, 1));
}

TEST(GittinsOrderTest, ForLevelKeepsTheLevelOfJobsWithoutAnIndex) {
  // No index (a driver without an estimator, a queue without history): LAS as with kOff, so
  // the level-0 job goes first.
  Decisions d = OneGpuPass(GittinsOrder::kForLevel,
                           {MakeJob(1).Gpus(1).Queue("q").Submit(0).Attained(2 * kHour),
                            MakeJob(2).Gpus(1).Queue("q").Submit(1)});
  EXPECT_TRUE(Placed(d, 2));
  EXPECT_FALSE(Placed(d, 1));
}

// Queues a and b over their quota of 2, one GPU free, a with the lower share; both best jobs
// at level 0, b's with the higher index (a lower inverse, in another power-of-two bucket).
Decisions BorrowingQueues(GittinsOrder mode) {
  SchedulerConfig c;
  c.preemption = false;
  c.gittins = mode;
  Scheduler s(c);
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.SetQueue({"a", 2, -1, 1.0});
  s.SetQueue({"b", 2, -1, 1.0});
  s.AddRunning(Running(MakeJob(100).Gpus(3).Queue("a"), {{"n1", {0, 1, 2}}}));
  s.AddRunning(Running(MakeJob(101).Gpus(4).Queue("b"), {{"n1", {3, 4, 5, 6}}}));
  s.AddPending(MakeJob(1).Gpus(1).Queue("a").Gittins(3 * kHour));
  s.AddPending(MakeJob(2).Gpus(1).Queue("b").Gittins(10 * kMinute));
  return s.Schedule(10);
}

TEST(GittinsOrderTest, BorrowingQueuesByTheirBestJobsIndex) {
  Decisions d = BorrowingQueues(GittinsOrder::kOff);  // share decides: a
  EXPECT_TRUE(Placed(d, 1));
  EXPECT_FALSE(Placed(d, 2));
  for (GittinsOrder mode :
       {GittinsOrder::kInsideLevel, GittinsOrder::kForLevel, GittinsOrder::kQueuesOnly}) {
    d = BorrowingQueues(mode);
    EXPECT_TRUE(Placed(d, 2)) << GittinsOrderName(mode);
    EXPECT_FALSE(Placed(d, 1)) << GittinsOrderName(mode);
  }
}

}  // namespace
}  // namespace corral::sched
