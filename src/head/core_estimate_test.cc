// Start-time estimates as the head gives them (HeadCore::EstimateStarts, after its pass) to a
// job blocked behind a run with a time limit: never "now" while it waits, and the limit's end
// once the run has outlived what its owner's history predicted.
#include "head/core_scenario.h"

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

INSTANTIATE_TEST_SUITE_P(Head, Estimates, ::testing::Values(false),
                         [](const auto&) { return "Live"; });

}  // namespace corral::head::core_test
