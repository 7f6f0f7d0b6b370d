// Unit tests of run-time distributions: the estimator keeps each user key's recent run times
// and answers quantile points from the most specific key with enough jobs; the scheduler
// conditions them on what a job has run, so a fresh job of a user whose jobs often fail fast
// goes first and one that outlived the failures does not.
#include "sched/run_time_quantiles.h"

#include <gtest/gtest.h>

#include "core/job.h"
#include "sched/job_input.h"
#include "sched/order_policy.h"
#include "sched/runtime_estimate.h"
#include "sched/scheduler.h"
#include "sched/testing_builders.h"

namespace corral::sched {
namespace {

using testing::MakeJob;
using testing::MakeNode;

// Half the jobs end in a minute, half run 10 hours.
RunTimeQuantiles Bimodal() {
  RunTimeQuantiles d;
  for (int i = 0; i < kRunQuantiles; ++i) d.at[i] = i < kRunQuantiles / 2 ? kMinute : 10 * kHour;
  return d;
}

// A PendingJob holds its distribution as SharedQuantiles: copies share one array and compare,
// read and condition as the points themselves; all-zero points hold nothing.
TEST(RunTimeQuantilesTest, SharedQuantilesAreAValueThatCopiesShare) {
  SharedQuantiles none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none, RunTimeQuantiles{});
  EXPECT_TRUE(SharedQuantiles(RunTimeQuantiles{}).empty());

  SharedQuantiles d = Bimodal();
  EXPECT_FALSE(d.empty());
  EXPECT_EQ(d, Bimodal());
  EXPECT_NE(d, none);
  SharedQuantiles copy = d;
  EXPECT_EQ(&copy.get(), &d.get()) << "a copy shares the points";
  EXPECT_EQ(copy.get().at[kRunQuantiles - 1], 10 * kHour);
  EXPECT_EQ(ConditionalRemainingMs(copy, 2 * kMinute, PredictionRule::kQuantile, 0.5),
            ConditionalRemainingMs(Bimodal(), 2 * kMinute, PredictionRule::kQuantile, 0.5));

  PendingJob a = MakeJob(1).Gpus(1).Distribution(Bimodal());
  PendingJob b = a;
  b.run_quantiles = {};
  EXPECT_TRUE(b.run_quantiles.empty());
  EXPECT_EQ(a.run_quantiles, Bimodal()) << "clearing a copy leaves the original";
}

TEST(RunTimeQuantilesTest, RulesConditionOnTheRunTimeSoFar) {
  const RunTimeQuantiles d = Bimodal();
  // Fresh: the median is the fast failure; the mean is half of each; Gittins runs a 1-minute
  // quantum that ends half the jobs: 2 minutes per completion.
  EXPECT_EQ(ConditionalRemainingMs(d, 0, PredictionRule::kQuantile, 0.5), kMinute);
  EXPECT_EQ(ConditionalRemainingMs(d, 0, PredictionRule::kMean, 0.5), 5 * kHour + 30 * 1000);
  EXPECT_EQ(ConditionalRemainingMs(d, 0, PredictionRule::kGittins, 0.5), 2 * kMinute);
  EXPECT_EQ(ConditionalRemainingMs(d, 0, PredictionRule::kQuantile, 0.9), 10 * kHour);
  // Past the minute only the long jobs are left.
  const DurationMs done = 2 * kMinute;
  for (PredictionRule r :
       {PredictionRule::kQuantile, PredictionRule::kMean, PredictionRule::kGittins}) {
    EXPECT_EQ(ConditionalRemainingMs(d, done, r, 0.5), 10 * kHour - done) << PredictionRuleName(r);
  }
  // Outlived every one of them: guessed to run as long again.
  EXPECT_EQ(ConditionalRemainingMs(d, 11 * kHour, PredictionRule::kQuantile, 0.5), 11 * kHour);
  PredictionRule parsed;
  EXPECT_TRUE(ParsePredictionRule("gittins", &parsed));
  EXPECT_EQ(parsed, PredictionRule::kGittins);
  EXPECT_FALSE(ParsePredictionRule("median", &parsed));
}

EndedJob Ended(const std::string& user, const std::string& name, int64_t gpus, DurationMs ms) {
  return {user, name, "q", gpus, ms};
}

TEST(RunTimeQuantilesTest, EstimatorKeepsARecentWindowPerUserKey) {
  RuntimeEstimator e(EstimatorConfig{.window = 4, .min_jobs = 2});
  EXPECT_TRUE(e.Quantiles("alice", "", 1, 0).empty());
  // Old habits: 10-hour jobs; then four 1-minute ones push them out of the window.
  for (int i = 0; i < 4; ++i) e.Observe(Ended("alice", "", 1, 10 * kHour));
  EXPECT_EQ(e.Quantiles("alice", "", 1, 0).at[0], 10 * kHour);
  for (int i = 0; i < 4; ++i) e.Observe(Ended("alice", "", 1, kMinute));
  RunTimeQuantiles q = e.Quantiles("alice", "", 1, 0);
  EXPECT_EQ(q.at[0], kMinute);
  EXPECT_EQ(q.at[kRunQuantiles - 1], kMinute);
  // (user, GPU count) answers once it has min_jobs; before that the user's.
  e.Observe(Ended("alice", "", 8, 3 * kHour));
  EXPECT_EQ(e.Quantiles("alice", "", 8, 0).at[kRunQuantiles - 1], 3 * kHour);  // window mixes
  EXPECT_EQ(e.Quantiles("alice", "", 8, 0).at[0], kMinute);                    // user's
  e.Observe(Ended("alice", "", 8, 3 * kHour));
  EXPECT_EQ(e.Quantiles("alice", "", 8, 0).at[0], 3 * kHour);
  // (user, name) before both; a time limit bounds every point.
  e.Observe(Ended("alice", "eval", 8, 5 * kMinute));
  e.Observe(Ended("alice", "eval", 8, 5 * kMinute));
  EXPECT_EQ(e.Quantiles("alice", "eval", 8, 0).at[kRunQuantiles - 1], 5 * kMinute);
  EXPECT_EQ(e.Quantiles("alice", "", 8, kHour).at[kRunQuantiles - 1], kHour);
  // Another user, or none: no distribution.
  EXPECT_TRUE(e.Quantiles("bob", "", 8, 0).empty());
  EXPECT_TRUE(e.Quantiles("", "", 8, 0).empty());
}

TEST(RunTimeQuantilesTest, RecencyWeighsTheNewestRunTimesMost) {
  RuntimeEstimator plain(EstimatorConfig{.window = 8});
  RuntimeEstimator recent(EstimatorConfig{.window = 8, .recency = 0.5});
  for (RuntimeEstimator* e : {&plain, &recent}) {
    for (int i = 0; i < 6; ++i) e->Observe(Ended("u", "", 1, 10 * kHour));
    for (int i = 0; i < 2; ++i) e->Observe(Ended("u", "", 1, kMinute));
  }
  // Alike: a quarter of the points are a minute. Halving with each older job: the two newest
  // weigh 1 + 0.5 of 1.98, three quarters.
  auto minutes = [](const RunTimeQuantiles& q) {
    int n = 0;
    for (DurationMs x : q.at) n += x == kMinute;
    return n;
  };
  EXPECT_EQ(minutes(plain.Quantiles("u", "", 1, 0)), kRunQuantiles / 4);
  EXPECT_EQ(minutes(recent.Quantiles("u", "", 1, 0)), 12);
}

TEST(RunTimeQuantilesTest, ToPendingJobCarriesTheDistribution) {
  RuntimeEstimator e;
  for (int i = 0; i < 4; ++i) e.Observe(Ended("alice", "", 1, 2 * kHour));
  Job job;
  job.id = 1;
  job.owner = "alice";
  job.spec.queue = "q";
  job.spec.per_replica.gpu_milli = kGpuMilli;
  EXPECT_EQ(ToPendingJob(job, &e).run_quantiles.get().at[0], 2 * kHour);
  EXPECT_TRUE(ToPendingJob(job).run_quantiles.empty());
}

// The median remaining time of a job that has run `done` by the distribution it is given
// when (re)queued at that point.
DurationMs MedianLeft(const RuntimeEstimator& e, DurationMs done) {
  return ConditionalRemainingMs(e.Quantiles("alice", "", 1, 0, done), done,
                                PredictionRule::kQuantile, 0.5);
}

TEST(RunTimeQuantilesTest, ARequeuedJobMayBeJudgedByTheClustersLongerJobs) {
  EstimatorConfig c;
  c.global_prior_jobs = 1;
  RuntimeEstimator with_prior(c);
  RuntimeEstimator alone;
  for (RuntimeEstimator* e : {&with_prior, &alone}) {
    for (int i = 0; i < 3; ++i) e->Observe(Ended("alice", "", 1, kMinute));
    e->Observe(Ended("alice", "", 1, 10 * kHour));
    for (int i = 0; i < 12; ++i) e->Observe(Ended("bob", "", 8, 20 * kHour));
  }
  // Fresh: the owner's own distribution either way.
  EXPECT_EQ(with_prior.Quantiles("alice", "", 1, 0, 0), alone.Quantiles("alice", "", 1, 0));
  EXPECT_EQ(MedianLeft(with_prior, 0), kMinute);
  // Past alice's long job her history says nothing: as long again alone; bob's longer jobs
  // (counted as one job in all) say 20 h.
  EXPECT_EQ(MedianLeft(alone, 11 * kHour), 11 * kHour);
  EXPECT_EQ(MedianLeft(with_prior, 11 * kHour), 9 * kHour);
  // Past every job known: as long again.
  EXPECT_EQ(MedianLeft(with_prior, 30 * kHour), 30 * kHour);
  // Where alice has longer jobs, hers (1 job) and the cluster's (1 in all) share the weight:
  // past 2 h her 10 h job and the cluster's (her 10 h and bob's 20 h ones) give a median of
  // 10 h.
  EXPECT_EQ(MedianLeft(with_prior, 2 * kHour), 8 * kHour);
}

TEST(RunTimeQuantilesTest, ARequeuedJobMayBeJudgedByItsOwnersLongerHistory) {
  EstimatorConfig c;
  c.window = 2;
  c.min_jobs = 1;
  EstimatorConfig longer = c;
  longer.requeue_window = 8;
  RuntimeEstimator e(longer);
  RuntimeEstimator short_window(c);
  for (RuntimeEstimator* x : {&e, &short_window}) {
    x->Observe(Ended("alice", "", 4, 10 * kHour));
    x->Observe(Ended("alice", "", 1, kMinute));
    x->Observe(Ended("alice", "", 1, kMinute));
  }
  // The window of 2 holds only the fast failures: a job past 2 h outlived them all.
  EXPECT_EQ(MedianLeft(short_window, 2 * kHour), 2 * kHour);
  // The owner's last 8 (any size) hold the 10 h job.
  EXPECT_EQ(MedianLeft(e, 2 * kHour), 8 * kHour);
  // ToPendingJob conditions on the job's finished runs (GPU-time / its GPUs).
  Job job;
  job.id = 1;
  job.owner = "alice";
  job.spec.queue = "q";
  job.spec.per_replica.gpu_milli = kGpuMilli;
  corral::Run preempted;
  preempted.state = RunState::kPreempted;
  preempted.scheduled_at = 1000;
  preempted.started_at = 1000;
  preempted.ended_at = 1000 + 2 * kHour;
  job.runs = {preempted};
  EXPECT_EQ(ToPendingJob(job, &e).run_quantiles, e.Quantiles("alice", "", 1, 0, 2 * kHour));
  EXPECT_EQ(ToPendingJob(job, &e).run_quantiles.get().at[0], 10 * kHour);
}

TEST(RunTimeQuantilesTest, AFailFastUsersFreshJobGoesFirstButNotOnceItOutlivedTheFailures) {
  // One GPU; a fresh job of a user whose jobs fail fast half the time (bimodal), and a job of
  // a user whose jobs all run 2 hours. The running mean of logs (sqrt(1 min x 10 h) = 24.5
  // min) would also put the first first; the median says a minute.
  SchedulerConfig c;
  RunTimeQuantiles steady;
  steady.at.fill(2 * kHour);
  auto first_placed = [&](DurationMs attained) {
    Scheduler s(c);
    s.UpsertNode(MakeNode("n1").Gpus(1));
    s.SetQueue({"q", 1, -1, 1.0});
    s.AddPending(MakeJob(1).Gpus(1).Queue("q").Distribution(steady).Predicted(2 * kHour));
    s.AddPending(
        MakeJob(2).Gpus(1).Queue("q").Distribution(Bimodal()).Attained(attained).Submit(kMinute));
    Decisions d = s.Schedule(kHour);
    return d.place.empty() ? JobId{0} : d.place[0].job;
  };
  EXPECT_EQ(first_placed(0), 2u);
  // Requeued after 5 minutes (still LAS level 0): the failures are behind it, 10 h ahead.
  EXPECT_EQ(first_placed(5 * kMinute), 1u);
  EXPECT_EQ(PredictedRemainingMs(c, MakeJob(2).Gpus(1).Distribution(Bimodal()), 5 * kMinute),
            10 * kHour - 5 * kMinute);
  // Without predictions the order is LAS and submit time.
  c.corral.predict.on = false;
  EXPECT_EQ(first_placed(0), 1u);
}

}  // namespace
}  // namespace corral::sched
