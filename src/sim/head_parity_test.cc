// Unit tests of what makes the simulator's runs what the head would do: time limits that
// kill, node failures that lose and requeue runs, run-time predictions learned from ended
// jobs, and the lost-work and preemption-rate report. A policy measured here is only worth
// adopting if the head would make the same decisions.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "head/head_core.h"
#include "sim/report.h"
#include "sim/simulate_command.h"
#include "sim/simulator.h"
#include "sim/test_traces.h"
#include "sim/trace.h"

namespace corral::sim {
namespace {

using testing::Jobs;

SimResult Sim(const std::vector<TraceJob>& jobs, const SimConfig& c) {
  Result<SimResult> r = Simulate(jobs, c);
  CORRAL_CHECK(r.ok(), r.status().message());
  return std::move(*r);
}

SimConfig OneGpu(sched::OrderPolicy p) {
  SimConfig c;
  c.cluster = {1, 1, 1};
  c.policy = p;
  return c;
}

TEST(TimeLimitTest, ARunIsKilledAtItsJobsTimeLimitAndTheJobEndsTimeout) {
  // A needs 100 s but may run 30 s; B waits behind it.
  auto jobs = Jobs(
      "job_id,submit_time,duration,num_gpus,time_limit\n"
      "A,0,100,1,30\n"
      "B,1,50,1,\n");
  ASSERT_EQ(jobs[0].time_limit_ms, 30 * kSecond);
  ASSERT_EQ(jobs[1].time_limit_ms, 0);
  for (auto p : {sched::OrderPolicy::kFifo, sched::OrderPolicy::kCorral}) {
    SimResult r = Sim(jobs, OneGpu(p));
    EXPECT_EQ(r.jobs[0].end, 30 * kSecond);
    EXPECT_TRUE(r.jobs[0].timeout);
    EXPECT_EQ(r.jobs[1].end, 80 * kSecond);
    EXPECT_FALSE(r.jobs[1].timeout);
    ASSERT_EQ(r.runs.size(), 2u);
    EXPECT_TRUE(r.runs[0].timeout);
    Summary s = Summarize("x", jobs, r);
    EXPECT_EQ(s.timeouts, 1);
    EXPECT_EQ(s.jobs, 2);
  }
}

TEST(TimeLimitTest, ALimitLongerThanTheRunChangesNothing) {
  auto jobs = Jobs("job_id,submit_time,duration,num_gpus,time_limit\nA,0,100,1,100\n");
  SimResult r = Sim(jobs, OneGpu(sched::OrderPolicy::kCorral));
  EXPECT_EQ(r.jobs[0].end, 100 * kSecond);
  EXPECT_FALSE(r.jobs[0].timeout);
}

TEST(TimeLimitTest, ABadTimeLimitIsABadRowNamingTheField) {
  Result<Trace> t = ParseTrace(
      "job_id,submit_time,duration,num_gpus,time_limit,name\nA,0,100,1,soon,x\nB,0,5,1,10,y\n",
      "test", TraceOptions{.max_bad_fraction = 0.9});
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->jobs.size(), 1u);
  EXPECT_EQ(t->jobs[0].name, "y");
  ASSERT_EQ(t->bad.size(), 1u);
  EXPECT_EQ(t->bad[0].line, 2);
  EXPECT_NE(t->bad[0].why.find("time_limit 'soon'"), std::string::npos) << t->bad[0].why;
}

// One GPU, one 2-hour job, nodes failing every hour on average and down for 10 minutes.
SimConfig Failing(uint64_t seed, DurationMs checkpoint) {
  SimConfig c = OneGpu(sched::OrderPolicy::kCorral);
  c.node_mtbf_ms = kHour;
  c.node_repair_ms = 10 * kMinute;
  c.failure_seed = seed;
  c.checkpoint_interval_ms = checkpoint;
  c.restart_overhead_ms = kMinute;
  return c;
}

TEST(NodeFailureTest, LostRunsAreRequeuedAfterTheRepairAndLoseTheirWorkSinceTheCheckpoint) {
  auto jobs = Jobs("job_id,submit_time,duration,num_gpus\nA,0,7200,1\n");
  // The head finds a failed node out as it would: once it has missed its syncs for the core's
  // down_after (a minute); the run ends then, lost, and its work stopped at the failure.
  const DurationMs detection = head::CoreConfig{}.down_after_ms + 1;
  for (DurationMs checkpoint : {DurationMs{0}, 20 * kMinute}) {
    SimResult r = Sim(jobs, Failing(1, checkpoint));
    ASSERT_GE(r.runs.size(), 2u) << "seed 1 should fail the node during the job";
    EXPECT_GE(r.node_failures, static_cast<int64_t>(r.runs.size()) - 1);
    EXPECT_EQ(r.jobs[0].lost_runs, static_cast<int32_t>(r.runs.size()) - 1);
    EXPECT_FALSE(r.jobs[0].timeout);
    EXPECT_EQ(r.jobs[0].preemptions, 0);
    DurationMs progress = 0, wasted = 0;
    for (size_t k = 0; k < r.runs.size(); ++k) {
      const RunRecord& run = r.runs[k];
      DurationMs len = run.end - run.start;
      DurationMs overhead = k > 0 ? kMinute : 0;
      if (k + 1 < r.runs.size()) {
        EXPECT_TRUE(run.lost);
        // The job restarts when the node is back, not before.
        EXPECT_EQ(r.runs[k + 1].start - (run.end - detection), 10 * kMinute);
        DurationMs kept = 0;
        if (checkpoint > 0) {
          DurationMs total = progress + std::max<DurationMs>(0, len - detection - overhead);
          kept = std::max(progress, total / checkpoint * checkpoint) - progress;
        }
        progress += kept;
        wasted += len - kept;
      } else {
        EXPECT_FALSE(run.lost);
        EXPECT_EQ(len, overhead + 7200 * kSecond - progress);  // the rest of its service
        wasted += overhead;
      }
    }
    EXPECT_EQ(r.lost_gpu_ms, wasted);
    Summary s = Summarize("corral", jobs, r);
    EXPECT_EQ(s.lost_runs, static_cast<int64_t>(r.runs.size()) - 1);
    EXPECT_DOUBLE_EQ(s.lost_gpu_hours, static_cast<double>(wasted) / kHour);
  }
}

TEST(NodeFailureTest, TheSameSeedGivesTheSameRunsAndAnotherSeedOthers) {
  auto jobs = Jobs("job_id,submit_time,duration,num_gpus\nA,0,7200,1\nB,10,3600,1\nC,20,5000,2\n");
  auto runs = [&](uint64_t seed) {
    SimConfig c = Failing(seed, 0);
    c.cluster = {4, 1, 1};
    return RunsCsv(jobs, Sim(jobs, c));
  };
  EXPECT_EQ(runs(1), runs(1));
  EXPECT_NE(runs(1), runs(2));
}

TEST(NodeFailureTest, WithoutAFailureRateNothingChanges) {
  auto jobs = Jobs("job_id,submit_time,duration,num_gpus\nA,0,7200,1\nB,10,60,1\n");
  SimConfig c = OneGpu(sched::OrderPolicy::kCorral);
  SimResult r = Sim(jobs, c);
  EXPECT_EQ(r.node_failures, 0);
  EXPECT_EQ(r.runs.size(), 2u);
  EXPECT_EQ(r.lost_gpu_ms, 0);
}

// One GPU. S1 (alice's "short", 10 s) and L1 (bob's "long", 100 s) end first and are the
// history; then B blocks the GPU, L2 and S2 queue behind it. With predictions S2 (10 s
// predicted) goes before L2 (100 s); without, in submit order.
const char* kHistory =
    "job_id,submit_time,duration,num_gpus,queue,user,name\n"
    "S1,0,10,1,q,alice,short\n"
    "L1,1,100,1,q,bob,long\n"
    "B,200,100,1,q,carol,block\n"
    "L2,201,100,1,q,bob,long\n"
    "S2,202,10,1,q,alice,short\n";

TEST(PredictionTest, LearnedFromEndedJobsAShortJobOvertakesALongOneInItsLevel) {
  auto jobs = Jobs(kHistory);
  ASSERT_EQ(jobs[4].name, "short");
  SimConfig c = OneGpu(sched::OrderPolicy::kCorral);
  SimResult with = Sim(jobs, c);
  EXPECT_EQ(with.jobs[4].end, 310 * kSecond);  // S2 300-310
  EXPECT_EQ(with.jobs[3].end, 410 * kSecond);  // L2 310-410
  c.corral.predict.on = false;
  SimResult without = Sim(jobs, c);
  EXPECT_EQ(without.jobs[3].end, 400 * kSecond);
  EXPECT_EQ(without.jobs[4].end, 410 * kSecond);
  // The oracle needs no history: the same order here.
  c.corral.predict.on = true;
  c.predict.oracle = true;
  EXPECT_EQ(Sim(jobs, c).jobs[4].end, 310 * kSecond);
  // History (means and distributions) by (user, name) and user switched off, by queue on: both
  // users' jobs share one key (q), so L2 and S2 get the same prediction and stay in submit order.
  c.predict = PredictionInputs{};
  c.predict.estimator.by_user_name = false;
  c.predict.estimator.by_user = false;
  c.predict.estimator.dist_by_user_name = false;
  c.predict.estimator.dist_by_user_gpus = false;
  c.predict.estimator.dist_by_user = false;
  EXPECT_EQ(Sim(jobs, c).jobs[3].end, 400 * kSecond);
}

TEST(ReportTest, PreemptionsPerHourAndLostWork) {
  SimResult r;
  r.total_gpus = 1;
  r.jobs.resize(1);
  r.jobs[0].first_start = 0;
  r.jobs[0].end = 2 * kHour;
  r.jobs[0].preemptions = 3;
  r.lost_gpu_ms = 90 * kMinute;
  auto jobs = Jobs("job_id,submit_time,duration,num_gpus\nA,0,3600,1\n");
  Summary s = Summarize("x", jobs, r);
  EXPECT_DOUBLE_EQ(s.preemptions_per_hour, 1.5);
  EXPECT_DOUBLE_EQ(s.lost_gpu_hours, 1.5);
  EXPECT_DOUBLE_EQ(s.p99_slowdown, 2.0);
  EXPECT_NE(SummaryJson(s).find("\"lost_gpu_hours\": 1.500"), std::string::npos);
}

std::string Command(std::vector<std::string> args, int* rc) {
  std::ostringstream out, err;
  *rc = SimulateMain(args, out, err);
  return out.str() + err.str();
}

TEST(SimulateCommandTest, BadPredictionAndFailureFlagsAreNamed) {
  std::string trace = std::string(CORRAL_SIM_TESTDATA) + "/philly_slice.csv";
  int rc = 0;
  std::string out =
      Command({"--trace", trace, "--nodes", "4", "--predict", "user,crystal-ball"}, &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("--predict 'user,crystal-ball': 'crystal-ball' is not one of"),
            std::string::npos)
      << out;
  out = Command({"--trace", trace, "--nodes", "4", "--node-mtbf", "often"}, &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("--node-mtbf"), std::string::npos) << out;
  out =
      Command({"--trace", trace, "--nodes", "4", "--node-mtbf", "10h", "--node-repair", "0s"}, &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("--node-repair must be > 0"), std::string::npos) << out;
  out = Command({"--trace", trace, "--nodes", "4", "--predict-weight", "2"}, &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("--predict-weight must be in (0, 1]"), std::string::npos) << out;
}

TEST(SimulateCommandTest, BadEstimatorFlagsAreNamed) {
  std::string trace = std::string(CORRAL_SIM_TESTDATA) + "/philly_slice.csv";
  int rc = 0;
  std::string out = Command({"--trace", trace, "--nodes", "4", "--estimator", "crystal"}, &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("--estimator 'crystal': must be forward or sweep"), std::string::npos) << out;
  out = Command({"--trace", trace, "--nodes", "4", "--estimate-passes", "0"}, &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("--estimate-passes 0: must be a positive count"), std::string::npos) << out;
  out = Command({"--trace", trace, "--nodes", "4", "--estimate-arrivals", "25h"}, &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("--estimate-arrivals 25h: must be at most 24h"), std::string::npos) << out;
  out = Command({"--trace", trace, "--nodes", "4", "--estimate-arrivals", "soon"}, &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("'--estimate-arrivals': got \"soon\""), std::string::npos) << out;
  // Both estimators judge the same runs: estimating decides nothing.
  out = Command({"--trace", trace, "--nodes", "4", "--sample", "200", "--estimate-every", "5",
                 "--estimator", "sweep", "--no-timing"},
                &rc);
  EXPECT_EQ(rc, 0) << out;
  std::string forward = Command({"--trace", trace, "--nodes", "4", "--sample", "200",
                                 "--estimate-every", "5", "--estimate-passes", "32", "--no-timing"},
                                &rc);
  EXPECT_EQ(rc, 0) << forward;
  EXPECT_EQ(out.substr(0, out.find("estimates:")), forward.substr(0, forward.find("estimates:")));
  // Nor do the expected arrivals: the same runs without them.
  std::string no_arrivals =
      Command({"--trace", trace, "--nodes", "4", "--sample", "200", "--estimate-every", "5",
               "--estimate-passes", "32", "--estimate-arrivals", "0", "--no-timing"},
              &rc);
  EXPECT_EQ(rc, 0) << no_arrivals;
  EXPECT_EQ(no_arrivals.substr(0, no_arrivals.find("estimates:")),
            forward.substr(0, forward.find("estimates:")));
}

TEST(SimulateCommandTest, FailuresAndSyntheticLimitsPassTheCheckerAndAreReported) {
  std::string trace = std::string(CORRAL_SIM_TESTDATA) + "/philly_slice.csv";
  int rc = 0;
  std::string out =
      Command({"--trace", trace, "--nodes", "4", "--sample", "200", "--compare", "fifo,srtf,corral",
               "--node-mtbf", "200h", "--node-repair", "2h", "--synth-time-limits",
               "--checkpoint-interval", "30m", "--check", "-o", "json", "--no-timing"},
              &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("\"node_failures\": "), std::string::npos) << out;
  EXPECT_EQ(out.find("\"node_failures\": 0,"), std::string::npos) << out;
  EXPECT_NE(out.find("\"lost_gpu_hours\": "), std::string::npos);
  EXPECT_NE(out.find("\"preemptions_per_hour\": "), std::string::npos);
  EXPECT_NE(out.find("\"timeouts\": 0,"), std::string::npos);  // limits >= durations
}

}  // namespace
}  // namespace corral::sim
