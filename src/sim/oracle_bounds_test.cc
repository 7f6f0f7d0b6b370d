// The oracle bounds give the distributions they claim: the other jobs of the job's group (or
// the nearest of them), never the job's own run time, with the fallbacks to broader groups;
// the noisy oracle's factor has the sigma asked for. And the bounds reach the scheduler.
#include "sim/oracle_bounds.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "sim/simulator.h"

namespace corral::sim {
namespace {

TraceJob Job(const std::string& user, int32_t gpus, DurationMs ms) {
  TraceJob j;
  j.user = user;
  j.num_gpus = gpus;
  j.duration_ms = ms;
  j.queue = "q";
  return j;
}

sched::RunTimeQuantiles Of(std::vector<DurationMs> v) {
  std::sort(v.begin(), v.end());
  return QuantilesOfSorted(v);
}

bool Holds(const sched::RunTimeQuantiles& q, DurationMs ms) {
  return std::find(q.at.begin(), q.at.end(), ms) != q.at.end();
}

TEST(OracleBoundsTest, QuantilePointsAreTheEstimatorsOfEqualWeights) {
  // Five samples: point i is sample ceil(5 (2i + 1) / 32) - 1.
  const sched::RunTimeQuantiles q = Of({50, 10, 40, 20, 30});
  EXPECT_EQ(q.at[0], 10);
  EXPECT_EQ(q.at[3], 20);   // 5 x 7 / 32 = 1.09: the second
  EXPECT_EQ(q.at[7], 30);   // 5 x 15 / 32 = 2.34: the third
  EXPECT_EQ(q.at[15], 50);  // 5 x 31 / 32 = 4.84: the fifth
  EXPECT_TRUE(Of({}).empty());
}

// Jobs in submission order: "a" has six 1-GPU jobs and two 8-GPU ones, "b" one job.
std::vector<TraceJob> TwoUsersJobs() {
  std::vector<TraceJob> jobs;
  for (DurationMs ms : {10, 20, 30, 40, 50, 60}) jobs.push_back(Job("a", 1, ms));
  jobs.push_back(Job("a", 8, 7000));
  jobs.push_back(Job("a", 8, 8000));
  jobs.push_back(Job("b", 1, 900));
  return jobs;
}

TEST(OracleBoundsTest, UserGpusIsEveryOtherJobOfTheGroupThenTheUsersThenTheTraces) {
  const std::vector<TraceJob> jobs = TwoUsersJobs();
  const auto d = BoundDistributions(jobs, OracleBound::kUserGpus);
  ASSERT_EQ(d.size(), jobs.size());
  // Row 2 (30 ms): the other five 1-GPU jobs of "a", not its own 30.
  EXPECT_EQ(d[2], Of({10, 20, 40, 50, 60}));
  EXPECT_FALSE(Holds(d[2], 30));
  EXPECT_EQ(d[0], Of({20, 30, 40, 50, 60}));
  // An 8-GPU job of "a" has one other of its size: every other job of "a".
  EXPECT_EQ(d[6], Of({10, 20, 30, 40, 50, 60, 8000}));
  EXPECT_FALSE(Holds(d[6], 7000));
  // "b" has no other job: every other job of the trace.
  EXPECT_EQ(d[8], Of({10, 20, 30, 40, 50, 60, 7000, 8000}));
  EXPECT_FALSE(Holds(d[8], 900));
}

TEST(OracleBoundsTest, AnEqualRunTimeOfAnotherJobStays) {
  // Two jobs of 30 ms: the job leaves out one copy, its twin's stays.
  std::vector<TraceJob> jobs;
  for (DurationMs ms : {30, 30, 10, 20, 40}) jobs.push_back(Job("a", 1, ms));
  EXPECT_EQ(BoundDistributions(jobs, OracleBound::kUserGpus)[0], Of({30, 10, 20, 40}));
}

TEST(OracleBoundsTest, WindowIsTheSixteenNearestInSubmissionOrder) {
  // 30 jobs of one group, job k runs 1000 + k ms; another user's jobs in between change
  // nothing.
  std::vector<TraceJob> jobs;
  for (int k = 0; k < 30; ++k) {
    jobs.push_back(Job("a", 2, 1000 + k));
    jobs.push_back(Job("z", 2, 5));
  }
  const auto d = BoundDistributions(jobs, OracleBound::kWindow);
  auto window = [](int from, int to, int skip) {
    std::vector<DurationMs> v;
    for (int k = from; k <= to; ++k) {
      if (k != skip) v.push_back(1000 + k);
    }
    return Of(v);
  };
  // Job 10 (row 20): jobs 2-9 before it and 11-18 after.
  EXPECT_EQ(d[20], window(2, 18, 10));
  EXPECT_FALSE(Holds(d[20], 1010));
  // Job 1: job 0 before it, 2-16 after; job 29: 13-28.
  EXPECT_EQ(d[2], window(0, 16, 1));
  EXPECT_EQ(d[58], window(13, 28, 29));
  // All the others, not the window, for the whole group.
  EXPECT_NE(d[20], BoundDistributions(jobs, OracleBound::kUserGpus)[20]);
  // A window of 3: two before, one after.
  EXPECT_EQ(BoundDistributions(jobs, OracleBound::kWindow, 3)[20], Of({1008, 1009, 1011}));
}

TEST(OracleBoundsTest, WindowFallsBackToTheUsersNearestJobs) {
  const std::vector<TraceJob> jobs = TwoUsersJobs();
  const auto d = BoundDistributions(jobs, OracleBound::kWindow);
  EXPECT_EQ(d[7], Of({10, 20, 30, 40, 50, 60, 7000}));  // "a" has 8 jobs: all 7 others
  EXPECT_EQ(d[8], Of({10, 20, 30, 40, 50, 60, 7000, 8000}));
}

TEST(OracleBoundsTest, NoisyDurationHasTheSigmaAskedForAndIsFixedPerRow) {
  EXPECT_EQ(NoisyDuration(3600000, 7, 0), 3600000);
  EXPECT_EQ(NoisyDuration(3600000, 7, 0.5), NoisyDuration(3600000, 7, 0.5));
  EXPECT_NE(NoisyDuration(3600000, 7, 0.5), NoisyDuration(3600000, 8, 0.5));
  for (double sigma : {0.25, 1.0, 2.0}) {
    double sum = 0, sq = 0;
    const int n = 20000;
    for (int r = 0; r < n; ++r) {
      const double x = std::log(static_cast<double>(NoisyDuration(3600000, r, sigma)) / 3600000);
      sum += x;
      sq += x * x;
    }
    const double mean = sum / n;
    EXPECT_NEAR(mean, 0, 0.05 * sigma) << sigma;
    EXPECT_NEAR(std::sqrt(sq / n - mean * mean), sigma, 0.03 * sigma) << sigma;
  }
}

// One GPU, a blocker first; then a long job and a short one submitted while it runs (the long
// one first). With the true durations the short one goes first. With the bound's
// distributions (fewer than 4 others anywhere: every other job of the trace) each job sees
// the other's run time and not its own: the long one looks short (its median is the short
// one's 1 s) and goes first.
TEST(OracleBoundsTest, BoundsReachTheScheduler) {
  std::vector<TraceJob> jobs;
  jobs.push_back(Job("other", 1, 1000000));
  jobs.push_back(Job("u", 1, 500000));
  jobs.push_back(Job("u", 1, 1000));
  for (size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].id = "j" + std::to_string(i);
    jobs[i].submit_ms = static_cast<TimeMs>(i);
  }
  SimConfig c;
  c.cluster.nodes = 1;
  c.cluster.gpus_per_node = 1;
  c.policy = sched::OrderPolicy::kCorral;
  auto first_start = [&](PredictionInputs in, size_t row) {
    SimConfig k = c;
    k.predict = in;
    Result<SimResult> r = Simulate(jobs, k);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->jobs[row].first_start : -1;
  };
  PredictionInputs oracle;
  oracle.oracle = true;
  EXPECT_LT(first_start(oracle, 2), first_start(oracle, 1));
  PredictionInputs noisy;
  noisy.bound = OracleBound::kNoisy;  // sigma 0: the true duration
  EXPECT_LT(first_start(noisy, 2), first_start(noisy, 1));
  PredictionInputs user_gpus;
  user_gpus.bound = OracleBound::kUserGpus;
  EXPECT_GT(first_start(user_gpus, 2), first_start(user_gpus, 1));
}

}  // namespace
}  // namespace corral::sim
