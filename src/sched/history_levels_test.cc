// Unit tests of kCorral's LAS levels for jobs predicted from their owner's history
// (PredictionConfig::history_las_thresholds_gpu_ms): past the usual 1 and 10 GPU-hours, a job
// with a run-time distribution has one more level at 100 GPU-hours, which lets a job of the
// top usual level displace a run far past it; a job without a distribution keeps the usual
// levels, and so do the baselines.
#include <gtest/gtest.h>

#include <vector>

#include "sched/order_policy.h"
#include "sched/scheduler.h"
#include "sched/testing_builders.h"

namespace corral::sched {
namespace {

using testing::JobBuilder;
using testing::MakeJob;
using testing::MakeNode;
using testing::Running;
using testing::Victims;

// Every point at `ms`: a user whose jobs all ran that long.
RunTimeQuantiles AllAt(DurationMs ms) {
  RunTimeQuantiles d;
  d.at.fill(ms);
  return d;
}

TEST(HistoryLevelsTest, OnlyAJobWithADistributionCountsTheHistoryLevel) {
  SchedulerConfig c;
  ASSERT_EQ(c.corral.predict.history_las_thresholds_gpu_ms, std::vector<DurationMs>{100 * kHour});
  const PendingJob with = MakeJob(1).Gpus(1).Distribution(AllAt(30 * kHour));
  const PendingJob without = MakeJob(2).Gpus(1);
  EXPECT_EQ(LasLevel(c, with, 99 * kHour), 2);
  EXPECT_EQ(LasLevel(c, with, 100 * kHour), 3);
  EXPECT_EQ(LasLevel(c, without, 500 * kHour), 2);
  EXPECT_EQ(LasThresholdAt(c, with, 2), 100 * kHour);
  EXPECT_EQ(LasThresholdAt(c, without, 2), 0);
  EXPECT_EQ(LasThresholds(c, with), (std::vector<DurationMs>{kHour, 10 * kHour, 100 * kHour}));
  EXPECT_EQ(LasThresholds(c, without), (std::vector<DurationMs>{kHour, 10 * kHour}));
  EXPECT_TRUE(HasHistoryLevels(c, with));
  EXPECT_FALSE(HasHistoryLevels(c, without));
  // Not without predictions, nor for the baselines (LAS keeps Tiresias' two thresholds).
  SchedulerConfig off = c;
  off.corral.predict.on = false;
  EXPECT_EQ(LasLevel(off, with, 500 * kHour), 2);
  SchedulerConfig las = c;
  las.policy = OrderPolicy::kLas;
  EXPECT_EQ(LasLevel(las, with, 500 * kHour), 2);
  SchedulerConfig none = c;
  none.corral.predict.history_las_thresholds_gpu_ms.clear();
  EXPECT_EQ(LasLevel(none, with, 500 * kHour), 2);
}

// A run of 250 GPU-hours (past twice the history threshold) and a requeued job of 20 (below
// half of it), both of one queue and predicted from their owners' history: the job displaces
// the run, which the usual levels (both at level 2) would not allow.
TEST(HistoryLevelsTest, AJobOfTheTopUsualLevelDisplacesARunFarPastTheHistoryThreshold) {
  auto run = [](bool job_has_history, bool run_has_history) {
    Scheduler s;
    s.UpsertNode(MakeNode("n1").Gpus(1));
    s.SetQueue({"q", 1, -1, 1.0});
    JobBuilder r = MakeJob(100).Gpus(1).Queue("q").Preemptible().Attained(250 * kHour);
    if (run_has_history) r.Distribution(AllAt(200 * kHour));
    s.AddRunning(Running(r, {{"n1", {0}}}, 0));
    JobBuilder j = MakeJob(1).Gpus(1).Queue("q").Preemptible().Attained(20 * kHour);
    if (job_has_history) j.Distribution(AllAt(30 * kHour));
    s.AddPending(j);
    return Victims(s.Schedule(kHour));
  };
  EXPECT_EQ(run(true, true), std::vector<JobId>{100});
  // The job without history cannot reach past its own top level; the run without it is at
  // level 2 like the job.
  EXPECT_TRUE(run(false, true).empty());
  EXPECT_TRUE(run(true, false).empty());
}

// The hysteresis applies to the history threshold as to the others: a run below twice it,
// or a job above half of it, stays.
TEST(HistoryLevelsTest, HysteresisAtTheHistoryThreshold) {
  auto victims = [](DurationMs run_attained, DurationMs job_attained) {
    Scheduler s;
    s.UpsertNode(MakeNode("n1").Gpus(1));
    s.SetQueue({"q", 1, -1, 1.0});
    s.AddRunning(Running(MakeJob(100)
                             .Gpus(1)
                             .Queue("q")
                             .Preemptible()
                             .Attained(run_attained)
                             .Distribution(AllAt(1000 * kHour)),
                         {{"n1", {0}}}, 0));
    s.AddPending(MakeJob(1)
                     .Gpus(1)
                     .Queue("q")
                     .Preemptible()
                     .Attained(job_attained)
                     .Distribution(AllAt(60 * kHour)));
    return Victims(s.Schedule(kHour));
  };
  EXPECT_TRUE(victims(150 * kHour, 20 * kHour).empty());  // 151 GPU-h < 2 x 100
  EXPECT_TRUE(victims(250 * kHour, 55 * kHour).empty());  // 55 GPU-h > 100 / 2
  EXPECT_EQ(victims(250 * kHour, 20 * kHour), std::vector<JobId>{100});
}

}  // namespace
}  // namespace corral::sched
