// The head's start-time estimates judged in the simulator (SimConfig::estimate_every).
#include "sim/estimate_accuracy.h"

#include <gtest/gtest.h>

#include "sim/report.h"
#include "sim/simulator.h"
#include "sim/test_traces.h"

namespace corral::sim {
namespace {

using testing::Jobs;

SimResult SimWithEstimates(const std::vector<TraceJob>& jobs, sched::OrderPolicy policy,
                           int32_t every, int32_t nodes = 1) {
  SimConfig c;
  c.cluster = {nodes, 8, 1};
  c.policy = policy;
  c.estimate_every = every;
  Result<SimResult> r = Simulate(jobs, c);
  CORRAL_CHECK(r.ok(), r.status().message());
  return std::move(*r);
}

// One node of 8 GPUs. A holds it for an hour (limit 2 h); B, submitted 10 minutes in, waits
// for it; C needs no more than what is left beside B (nothing), so it waits behind B.
const char* kBehindALimit =
    "job_id,submit_time,duration,num_gpus,queue,user,name,time_limit\n"
    "A,0,3600,8,default,u,a,7200\n"
    "B,600,1800,8,default,u,b,3600\n"
    "C,700,600,8,default,u,c,3600\n";

// U's one ended job ran a minute; her next, without a limit, runs an hour. V's job waits for
// it, told a time that rests on one run time: low confidence, and far off.
TEST(EstimateAccuracy, AnEstimateOnOneEndedJobIsLowConfidence) {
  auto jobs = Jobs(
      "job_id,submit_time,duration,num_gpus,queue,user,name\n"
      "X,0,60,8,default,u,x\n"
      "A,100,3600,8,default,u,x\n"
      "B,130,600,8,default,v,b\n");
  SimResult r = SimWithEstimates(jobs, sched::OrderPolicy::kCorral, 1);
  ASSERT_GE(r.jobs[2].estimated_start, 0);
  EXPECT_EQ(r.jobs[2].estimate_confidence, EstimateConfidence::kLow);
  EXPECT_LT(r.jobs[2].estimated_start, r.jobs[2].first_start - 60 * 1000) << "told too early";
  EstimateAccuracy a = MeasureEstimateAccuracy(jobs, r);
  EXPECT_EQ(a.by_confidence[2].judged, 1);
  EXPECT_DOUBLE_EQ(a.by_confidence[2].late_share, 1);
  EXPECT_NE(EstimateAccuracyJson(a).find("\"low\": {\"judged\": 1"), std::string::npos)
      << EstimateAccuracyJson(a);
}

TEST(EstimateAccuracy, AJobBehindALimitedRunIsToldItsLimit) {
  auto jobs = Jobs(kBehindALimit);
  SimResult r = SimWithEstimates(jobs, sched::OrderPolicy::kFifo, 1);
  ASSERT_TRUE(r.jobs[0].estimate_sampled);
  EXPECT_EQ(r.jobs[0].estimated_start, -1) << "A started at once";
  EXPECT_EQ(r.jobs[0].first_start, 0);
  // Told A's limit (2 h); A ends at 1 h, and B starts then.
  EXPECT_EQ(r.jobs[1].estimated_start, 7200 * 1000);
  EXPECT_EQ(r.jobs[1].first_start, 3600 * 1000);
  // C: behind B, which is told to end by its own limit after A's.
  EXPECT_EQ(r.jobs[2].estimated_start, (7200 + 3600) * 1000);
  EXPECT_EQ(r.jobs[2].first_start, (3600 + 1800) * 1000);

  EstimateAccuracy a = MeasureEstimateAccuracy(jobs, r);
  EXPECT_EQ(a.sampled, 3);
  EXPECT_EQ(a.started_at_once, 1);
  EXPECT_EQ(a.judged, 2);
  EXPECT_EQ(a.no_estimate, 0);
  // Errors 3600 s and 5400 s: nearest-rank median 3600, p90 5400; none late.
  EXPECT_DOUBLE_EQ(a.median_abs_error_s, 3600);
  EXPECT_DOUBLE_EQ(a.p90_abs_error_s, 5400);
  EXPECT_DOUBLE_EQ(a.median_error_s, 3600);
  EXPECT_DOUBLE_EQ(a.late_share, 0);
  // Both rest on time limits alone: high confidence.
  EXPECT_EQ(r.jobs[1].estimate_confidence, EstimateConfidence::kHigh);
  EXPECT_EQ(a.by_confidence[0].judged, 2);
  EXPECT_DOUBLE_EQ(a.by_confidence[0].median_abs_error_s, 3600);
  EXPECT_EQ(a.by_confidence[2].judged, 0);
  // Only the jobs submitted from 650 s on: C.
  EstimateAccuracy late_half = MeasureEstimateAccuracy(jobs, r, 650 * 1000);
  EXPECT_EQ(late_half.sampled, 1);
  EXPECT_DOUBLE_EQ(late_half.median_abs_error_s, 5400);
}

TEST(EstimateAccuracy, AJobBehindARunOfUnknownLengthHasNone) {
  auto jobs = Jobs(
      "job_id,submit_time,duration,num_gpus\n"
      "A,0,3600,8\n"
      "B,600,60,8\n");
  SimResult r = SimWithEstimates(jobs, sched::OrderPolicy::kFifo, 1);
  EstimateAccuracy a = MeasureEstimateAccuracy(jobs, r);
  EXPECT_EQ(a.sampled, 2);
  EXPECT_EQ(a.started_at_once, 1);
  EXPECT_EQ(a.no_estimate, 1) << "A has no limit and no history: B cannot be told";
  EXPECT_EQ(a.judged, 0);
}

TEST(EstimateAccuracy, OnlyEveryNthJobIsSampled) {
  auto jobs = Jobs(kBehindALimit);
  SimResult r = SimWithEstimates(jobs, sched::OrderPolicy::kFifo, 2);
  EXPECT_TRUE(r.jobs[0].estimate_sampled);
  EXPECT_FALSE(r.jobs[1].estimate_sampled);
  EXPECT_TRUE(r.jobs[2].estimate_sampled);
  EXPECT_EQ(SimWithEstimates(jobs, sched::OrderPolicy::kFifo, 0).jobs[1].estimate_sampled, false);
}

// Estimating reads the scheduler's state and must change no decision: the same runs, at the
// same instants on the same GPUs, under the policy that predicts and preempts.
TEST(EstimateAccuracy, EstimatingChangesNoDecision) {
  std::string csv = "job_id,submit_time,duration,num_gpus,queue,user,name,time_limit\n";
  for (int i = 0; i < 60; ++i) {
    csv += "J" + std::to_string(i) + "," + std::to_string(i * 97 % 1800 + i * 30) + "," +
           std::to_string(300 + (i * 7919) % 5400) + "," + std::to_string(1 << (i % 4)) + "," +
           (i % 3 ? "a" : "b") + ",user" + std::to_string(i % 5) + ",n" + std::to_string(i % 4) +
           "," + (i % 2 ? std::to_string(7200) : std::string()) + "\n";
  }
  auto jobs = Jobs(csv);
  std::sort(jobs.begin(), jobs.end(),
            [](const TraceJob& x, const TraceJob& y) { return x.submit_ms < y.submit_ms; });
  SimResult plain = SimWithEstimates(jobs, sched::OrderPolicy::kCorral, 0, 2);
  SimResult estimated = SimWithEstimates(jobs, sched::OrderPolicy::kCorral, 1, 2);
  EXPECT_EQ(RunsCsv(jobs, plain), RunsCsv(jobs, estimated));
  EstimateAccuracy a = MeasureEstimateAccuracy(jobs, estimated);
  EXPECT_EQ(a.sampled, 60);
  EXPECT_GT(a.judged, 0) << "some jobs waited with an estimate";
  EXPECT_EQ(MeasureEstimateAccuracy(jobs, plain).sampled, 0);
}

// With true durations as predictions and no later arrival, the head's forward run of its own
// pass is what then happens: every waiting job starts exactly when it was told, through
// backfill, gangs and LAS preemption (victims requeued). The sweep is not.
TEST(EstimateAccuracy, ForwardEstimatesAreExactWithTrueDurationsAndNoArrivals) {
  std::string csv = "job_id,submit_time,duration,num_gpus,queue,user,name\n";
  for (int i = 0; i < 24; ++i) {
    csv += "J" + std::to_string(i) + ",0," + std::to_string(600 + (i * 7919) % 9000) + "," +
           std::to_string(1 << (i % 4)) + ",default,user" + std::to_string(i % 3) + ",n" +
           std::to_string(i % 4) + "\n";
  }
  auto jobs = Jobs(csv);
  SimConfig c;
  c.cluster = {2, 8, 1};
  c.policy = sched::OrderPolicy::kCorral;
  c.estimate_every = 1;
  c.predict.oracle = true;
  c.start_estimates.arrival_window_ms = 0;  // no expected arrivals either (none come)
  Result<SimResult> forward = Simulate(jobs, c);
  ASSERT_TRUE(forward.ok()) << forward.status().message();
  EstimateAccuracy a = MeasureEstimateAccuracy(jobs, *forward);
  EXPECT_GT(a.judged, 10);
  int64_t exact = 0;
  for (const JobOutcome& o : forward->jobs) {
    if (o.estimated_start < 0 || o.first_start < 0) continue;
    EXPECT_EQ(o.estimated_start, o.first_start);
    exact += o.estimated_start == o.first_start;
  }
  EXPECT_EQ(exact, a.judged);
  EXPECT_DOUBLE_EQ(a.late_share, 0);
  int64_t preempted = 0;
  for (const JobOutcome& o : forward->jobs) preempted += o.preemptions;
  EXPECT_GT(preempted, 0) << "the scenario exercises LAS preemption and requeues";
  c.start_estimates.method = sched::EstimateMethod::kSweep;
  Result<SimResult> sweep = Simulate(jobs, c);
  ASSERT_TRUE(sweep.ok());
  EXPECT_EQ(RunsCsv(jobs, *forward), RunsCsv(jobs, *sweep)) << "estimating decides nothing";
  EXPECT_GT(MeasureEstimateAccuracy(jobs, *sweep).median_abs_error_s +
                MeasureEstimateAccuracy(jobs, *sweep).p90_abs_error_s,
            0)
      << "the sweep's model is not the pass";
}

TEST(EstimateAccuracy, TheReportShowsItOnlyWhenAsked) {
  auto jobs = Jobs(kBehindALimit);
  Summary with = Summarize("fifo", jobs, SimWithEstimates(jobs, sched::OrderPolicy::kFifo, 1));
  Summary without = Summarize("fifo", jobs, SimWithEstimates(jobs, sched::OrderPolicy::kFifo, 0));
  EXPECT_NE(SummaryJson(with).find("\"estimates\": {\"sampled\": 3,"), std::string::npos)
      << SummaryJson(with);
  EXPECT_EQ(SummaryJson(without).find("estimates"), std::string::npos);
  EXPECT_NE(SummaryTable({with}).find("fifo     estimates: 3 sampled"), std::string::npos)
      << SummaryTable({with});
}

}  // namespace
}  // namespace corral::sim
