// Unit tests of run-time predictions: the estimator learns only from ended jobs,
// answers from the most specific history, is bounded by the time limit; ToPendingJob carries
// its prediction; kCorral orders a LAS level by predicted remaining time and spares LAS
// victims predicted to end first.
#include "sched/runtime_estimate.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sched/job_input.h"
#include "sched/scheduler.h"
#include "sched/testing_builders.h"

namespace corral::sched {
namespace {

using testing::MakeJob;
using testing::MakeNode;
using testing::Running;

EndedJob Ended(const std::string& user, const std::string& name, const std::string& queue,
               int64_t gpus, DurationMs ms) {
  return {user, name, queue, gpus, ms};
}

TEST(RuntimeEstimatorTest, NoHistoryNoPrediction) {
  RuntimeEstimator e;
  EXPECT_EQ(e.Estimate("alice", "train", "q", 1), 0);
  EXPECT_EQ(e.Predict("alice", "train", "q", 1, 0), 0);
  // The time limit alone is a prediction.
  EXPECT_EQ(e.Predict("alice", "train", "q", 1, kHour), kHour);
}

TEST(RuntimeEstimatorTest, MostSpecificHistoryAnswers) {
  RuntimeEstimator e(EstimatorConfig{.by_queue_gpus = true, .by_queue = false, .weight = 0.25});
  e.Observe(Ended("alice", "train", "q", 1, 10 * kHour));
  e.Observe(Ended("alice", "eval", "q", 1, 10 * kMinute));
  e.Observe(Ended("bob", "", "q", 8, 2 * kHour));
  // (user, name) first.
  EXPECT_EQ(e.Estimate("alice", "train", "q", 1), 10 * kHour);
  EXPECT_EQ(e.Estimate("alice", "eval", "q", 1), 10 * kMinute);
  // A new name of a known user: the user's geometric mean (sqrt(10 h x 10 min) = 77.46 min).
  EXPECT_NEAR(static_cast<double>(e.Estimate("alice", "new", "q", 1)), 77.46 * kMinute,
              0.01 * kMinute);
  // A new user: the queue's jobs of the same size, not of another size.
  EXPECT_EQ(e.Estimate("carol", "x", "q", 8), 2 * kHour);
  EXPECT_EQ(e.Estimate("carol", "x", "other", 8), 0);
  // Bounded by the time limit.
  EXPECT_EQ(e.Predict("alice", "train", "q", 1, 3 * kHour), 3 * kHour);
  EXPECT_EQ(e.Predict("alice", "eval", "q", 1, 3 * kHour), 10 * kMinute);
  // The queue's history (bob's 2 h) does not undercut carol's own limit; her own history would.
  EXPECT_EQ(e.Predict("carol", "x", "q", 8, 5 * kHour), 5 * kHour);
  e.Observe(Ended("carol", "y", "q", 8, kHour));
  EXPECT_EQ(e.Predict("carol", "x", "q", 8, 5 * kHour), kHour);
}

TEST(RuntimeEstimatorTest, DefaultsFallBackFromUserToQueueAndWeighTheNewestJobHalf) {
  RuntimeEstimator e;
  e.Observe(Ended("alice", "train", "q", 1, kHour));
  e.Observe(Ended("bob", "eval", "q", 8, 4 * kHour));
  // A new user's job of any size: the queue's history, the newest job half: sqrt(1 h x 4 h).
  EXPECT_EQ(e.Estimate("carol", "x", "q", 2), 2 * kHour);
  e.Observe(Ended("bob", "eval", "q", 8, 16 * kHour));  // (2 h x 16 h)^0.5 = 5.66 h
  EXPECT_NEAR(static_cast<double>(e.Estimate("carol", "x", "q", 2)), 5.657 * kHour, 0.01 * kHour);
  EXPECT_EQ(e.Estimate("alice", "train", "q", 1), kHour);  // her own history first
}

TEST(RuntimeEstimatorTest, RecentJobsWeighMoreAndOneOutlierDoesNotDominate) {
  RuntimeEstimator e(EstimatorConfig{.weight = 0.25});  // the first four jobs averaged equally
  for (int i = 0; i < 4; ++i) e.Observe(Ended("u", "n", "q", 1, kMinute));
  EXPECT_EQ(e.Estimate("u", "n", "q", 1), kMinute);
  // One job 1,000x longer moves the estimate by 1000^0.25 = 5.6x, not 250x (a plain mean).
  e.Observe(Ended("u", "n", "q", 1, 1000 * kMinute));
  EXPECT_NEAR(static_cast<double>(e.Estimate("u", "n", "q", 1)), 5.623 * kMinute, 0.01 * kMinute);
  // The user's jobs turn long: the estimate follows them.
  for (int i = 0; i < 30; ++i) e.Observe(Ended("u", "n", "q", 1, kHour));
  EXPECT_NEAR(static_cast<double>(e.Estimate("u", "n", "q", 1)), kHour, 0.01 * kHour);
}

TEST(RuntimeEstimatorTest, InputsCanBeSwitchedOffAndEmptyJobsTeachNothing) {
  RuntimeEstimator e(EstimatorConfig{
      .by_user_name = false, .by_user = false, .by_queue_gpus = false, .by_queue = true});
  e.Observe(Ended("u", "n", "q", 1, 0));
  EXPECT_EQ(e.observed(), 0);
  e.Observe(Ended("u", "n", "q", 4, kHour));
  EXPECT_EQ(e.Estimate("u", "n", "q", 1), kHour);  // any size, from the queue
  EXPECT_EQ(e.Estimate("v", "m", "r", 1), 0);
}

TEST(RuntimeEstimatorTest, EndedJobSumsItsRunsAndToPendingJobCarriesThePrediction) {
  Job job;
  job.id = 7;
  job.owner = "alice";
  job.spec.name = "train";
  job.spec.queue = "q";
  job.spec.replicas = 2;
  job.spec.per_replica.gpu_milli = 4 * kGpuMilli;
  corral::Run preempted;
  preempted.state = RunState::kPreempted;
  preempted.scheduled_at = 1000;
  preempted.started_at = 1000;
  preempted.ended_at = 1000 + kHour;
  corral::Run never_started;  // lost before it started
  never_started.state = RunState::kLost;
  never_started.scheduled_at = 5000 + kHour;
  corral::Run last;
  last.state = RunState::kSucceeded;
  last.scheduled_at = 2 * kHour;
  last.started_at = 2 * kHour;
  last.ended_at = 3 * kHour + 30 * kMinute;
  job.runs = {preempted, never_started, last};
  EndedJob ended = EndedJobOf(job);
  EXPECT_EQ(ended.user, "alice");
  EXPECT_EQ(ended.name, "train");
  EXPECT_EQ(ended.gpus, 8);
  EXPECT_EQ(ended.run_ms, kHour + 90 * kMinute);

  RuntimeEstimator e;
  e.Observe(ended);
  Job next;
  next.id = 8;
  next.owner = "alice";
  next.spec.name = "train";
  next.spec.queue = "q";
  next.spec.per_replica.gpu_milli = kGpuMilli;
  EXPECT_EQ(ToPendingJob(next, &e).predicted_ms, kHour + 90 * kMinute);
  next.spec.time_limit_ms = kHour;
  EXPECT_EQ(ToPendingJob(next, &e).predicted_ms, kHour);
  EXPECT_EQ(ToPendingJob(next).predicted_ms, kHour);  // no estimator: the limit alone
  next.spec.time_limit_ms = 0;
  EXPECT_EQ(ToPendingJob(next).predicted_ms, 0);
}

TEST(PredictionOrderTest, ShortestPredictedFirstWithinALevel) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(1));
  s.SetQueue({"q", 1, -1, 1.0});
  // Submitted in this order; predicted 3 h, unknown, 10 min.
  s.AddPending(MakeJob(1).Gpus(1).Queue("q").Predicted(3 * kHour));
  s.AddPending(MakeJob(2).Gpus(1).Queue("q").Predicted(10 * kMinute));
  Decisions d = s.Schedule(0);
  ASSERT_EQ(d.place.size(), 1u);
  EXPECT_EQ(d.place[0].job, 2u);
  // A new job without a prediction comes first (0), like a job just submitted under LAS.
  s.RemoveRunning(2);
  s.AddPending(MakeJob(3).Gpus(1).Queue("q"));
  d = s.Schedule(kMinute);
  ASSERT_EQ(d.place.size(), 1u);
  EXPECT_EQ(d.place[0].job, 3u);
}

TEST(PredictionOrderTest, AJobThatOutlivedItsPredictionIsGuessedToRunAsLongAgain) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(1));
  s.SetQueue({"q", 1, -1, 1.0});
  // Requeued after 50 minutes of a 10-minute prediction (still level 0): remaining guessed
  // 50 minutes, so the 30-minute job goes first; with predictions off, submit order.
  s.AddPending(MakeJob(1).Gpus(1).Queue("q").Predicted(10 * kMinute).Attained(50 * kMinute));
  s.AddPending(MakeJob(2).Gpus(1).Queue("q").Predicted(30 * kMinute));
  Decisions d = s.Schedule(kHour);
  ASSERT_EQ(d.place.size(), 1u);
  EXPECT_EQ(d.place[0].job, 2u);

  SchedulerConfig off;
  off.corral.predict.on = false;
  Scheduler t(off);
  t.UpsertNode(MakeNode("n1").Gpus(1));
  t.SetQueue({"q", 1, -1, 1.0});
  t.AddPending(MakeJob(1).Gpus(1).Queue("q").Predicted(10 * kMinute).Attained(50 * kMinute));
  t.AddPending(MakeJob(2).Gpus(1).Queue("q").Predicted(30 * kMinute));
  d = t.Schedule(kHour);
  ASSERT_EQ(d.place.size(), 1u);
  EXPECT_EQ(d.place[0].job, 1u);
}

TEST(PredictionOrderTest, LasVictimPredictedToEndFirstIsSpared) {
  // A run of 3 GPU-hours (past 2x the 1 GPU-hour threshold) and a new job of its queue.
  auto run = [](DurationMs run_predicted, DurationMs job_predicted) {
    Scheduler s;
    s.UpsertNode(MakeNode("n1").Gpus(1));
    s.SetQueue({"q", 1, -1, 1.0});
    s.AddRunning(Running(MakeJob(100).Gpus(1).Queue("q").Preemptible().Predicted(run_predicted),
                         {{"n1", {0}}}, 0));
    s.AddPending(MakeJob(1).Gpus(1).Queue("q").Predicted(job_predicted).Submit(kHour));
    return s.Schedule(3 * kHour).preempt.size();
  };
  EXPECT_EQ(run(0, 0), 1u);                             // no predictions: plain LAS
  EXPECT_EQ(run(3 * kHour + 10 * kMinute, kHour), 0u);  // ends in 10 min, the job needs 1 h
  EXPECT_EQ(run(5 * kHour, kHour), 1u);                 // 2 h left: displaced
  EXPECT_EQ(run(kHour, 30 * kMinute), 1u);              // outlived its 1 h: guessed 3 h more
  EXPECT_EQ(run(3 * kHour + 10 * kMinute, 0), 1u);      // the job has no prediction
}

}  // namespace
}  // namespace corral::sched
