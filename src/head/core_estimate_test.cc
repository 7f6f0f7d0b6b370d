// Start-time estimates as the head gives them (HeadCore::EstimateStarts, after its pass) to a
// job blocked behind a run with a time limit: never "now" while it waits, and the limit's end
// once the run has outlived what its owner's history predicted; and by the sweep alone above
// kForwardMaxPending pending jobs.
#include <string>
#include <vector>

#include "head/core_scenario.h"
#include "sched/start_estimate.h"

namespace corral::head::core_test {

using Estimates = Scenario;

// The estimate of `id` at `now`, as the head refreshes it on its tick: after the tick's pass.
TimeMs EstimateAt(HeadCore& core, JobId id, TimeMs now) {
  core.Tick(now);
  core.Schedule(now);
  core.EstimateStarts(now);
  auto e = core.start_estimates().find(id);
  return e == core.start_estimates().end() ? sched::kUnknownTime : e->second.start;
}

// Ana's "train" jobs ran 20 s each; this one has run longer, under a 3-minute limit. Bob's job
// needs the whole node: it starts when hers ends, which her history says at 20 s and, once
// she has run past it, her limit says at 3 minutes.
TEST_P(Estimates, BehindARunThatOutlivedItsPredictionTheLimitTells) {
  Register("n1", 4);
  for (int i = 0; i < 4; ++i) RunNamed("train", 20 * kSecond);
  JobSpec a = Spec(4);
  a.name = "train";
  a.time_limit_ms = 3 * kMinute;
  Job ja = Submit(a);
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(ja.id))}));
  const TimeMs started = now();
  Job jb = Submit(Spec(4), kBob);
  Schedule();
  for (int s = 0; s < 180; s += 10) {
    now() = started + s * kSecond;
    ASSERT_TRUE(*Report("n1", {Running(Get(ja.id))}));  // the agent syncs: the node stays up
    TimeMs e = EstimateAt(core(), jb.id, now());
    ASSERT_EQ(Get(jb.id).state, JobState::kPending) << s;
    EXPECT_GT(e, now()) << "at " << s << " s the blocked job is told it starts now";
    EXPECT_EQ(e, started + (s < 20 ? 20 * kSecond : 3 * kMinute)) << "at " << s << " s";
    // The job's document says what the time rests on: her four ended jobs, then the limit.
    EXPECT_EQ(Get(jb.id).estimate_confidence,
              s < 20 ? EstimateConfidence::kMedium : EstimateConfidence::kHigh)
        << "at " << s << " s";
  }
}

// Ana has one ended job and her run no limit: what Bob is told rests on one run time, and
// says so; with no history at all there is no time to tell.
TEST_P(Estimates, BehindARunPredictedFromOneEndedJobTheEstimateIsLow) {
  Register("n1", 4);
  RunNamed("train", 20 * kSecond);
  JobSpec a = Spec(4);
  a.name = "train";
  Job ja = Submit(a);
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(ja.id))}));
  const TimeMs started = now();
  Job jb = Submit(Spec(4), kBob);
  Schedule();
  now() += kSecond;
  TimeMs e = EstimateAt(core(), jb.id, now());
  EXPECT_EQ(e, started + 20 * kSecond);
  Job b = Get(jb.id);
  EXPECT_EQ(b.estimated_start, e);
  EXPECT_EQ(b.estimate_confidence, EstimateConfidence::kLow);
}

// Bob's job finds a GPU free, but Ana's run holds every CPU of the node until its limit: the
// pass leaves it waiting, and the estimate, which counts GPUs only, must not say "now".
TEST_P(Estimates, AJobThePassLeftWaitingDoesNotStartNow) {
  Register("n1", 4);
  JobSpec a = Spec(1);
  a.per_replica.cpu_milli = 16000;
  a.time_limit_ms = 2 * kMinute;
  Job ja = Submit(a);
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(ja.id))}));
  const TimeMs started = now();
  JobSpec b = Spec(1);
  b.per_replica.cpu_milli = 1000;
  Job jb = Submit(b, kBob);
  now() += 5 * kSecond;
  TimeMs e = EstimateAt(core(), jb.id, now());
  ASSERT_EQ(Get(jb.id).state, JobState::kPending);
  EXPECT_EQ(e, started + 2 * kMinute) << "the next change it may start at: the run's limit";
}

// Two nodes of 8 GPUs, n1 held until 10 minutes and n2 (label pool=b) until 30; a 1-GPU job
// that wants pool=b waits for n2. The pass run forward places it as the pass does, on n2 at 30
// minutes; the sweep counts GPUs only (no labels) and tells 10 minutes, on n1. Up to
// kForwardMaxPending pending jobs the head tells the first, above it the second.
TEST_P(Estimates, AboveTheForwardRunsPendingBoundTheHeadEstimatesByTheSweep) {
  Register("n1", 8);
  RegisterRequest pool_b;
  pool_b.name = "n2";
  pool_b.address = "n2.example:7071";
  pool_b.cpu_milli = 16000;
  pool_b.memory_mb = 64000;
  pool_b.labels = {{"pool", "b"}};
  for (int i = 0; i < 8; ++i)
    pool_b.gpus.push_back({i, "n2-gpu" + std::to_string(i), "Sim", 1000, 0, true});
  auto reg = core().Register(kJoin, pool_b, "secret-n2", now());
  ASSERT_TRUE(reg.ok()) << reg.status().ToString();
  epochs_["n2"] = reg->agent_epoch;
  Step();
  const TimeMs t0 = now();
  JobSpec on_b = Spec(8);
  on_b.node_labels = {{"pool", "b"}};
  on_b.time_limit_ms = 30 * kMinute;
  const Job held_b = Submit(on_b);
  JobSpec anywhere = Spec(8);
  anywhere.time_limit_ms = 10 * kMinute;
  const Job held_1 = Submit(anywhere);
  Schedule();
  for (const auto& [job, node] : {std::pair{held_b, "n2"}, std::pair{held_1, "n1"}}) {
    const Job placed = Get(job.id);
    ASSERT_EQ(placed.state, JobState::kScheduled);
    ASSERT_EQ(placed.CurrentRun()->placement[0].node, node);
    ASSERT_TRUE(*Report(node, {Running(placed)}));
  }
  JobSpec small = Spec(1);
  small.node_labels = {{"pool", "b"}};
  small.time_limit_ms = 3 * kMinute;
  const Job js = Submit(small);
  // Behind it, an array of whole-node jobs that brings the pending jobs to the bound.
  JobSpec fill = Spec(8);
  fill.time_limit_ms = kHour;
  fill.array = "1-" + std::to_string(sched::kForwardMaxPending - 1);
  Submit(fill);
  now() += kSecond;
  const TimeMs forward = EstimateAt(core(), js.id, now());
  ASSERT_EQ(core().start_estimates().size(), static_cast<size_t>(sched::kForwardMaxPending));
  EXPECT_EQ(forward, t0 + 30 * kMinute) << "at the bound: the pass run forward, with labels";
  // One more pending job: the sweep, which counts n1's GPUs free at 10 minutes.
  fill.array.clear();
  Submit(fill);
  const TimeMs swept = EstimateAt(core(), js.id, now());
  ASSERT_EQ(core().start_estimates().size(), static_cast<size_t>(sched::kForwardMaxPending + 1));
  EXPECT_EQ(swept, t0 + 10 * kMinute) << "above the bound: the sweep, which has no labels";
}

INSTANTIATE_TEST_SUITE_P(Head, Estimates, ::testing::Values(false),
                         [](const auto&) { return "Live"; });

}  // namespace corral::head::core_test
