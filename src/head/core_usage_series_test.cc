// A run's usage series through the head's core: the samples agents report are kept with the
// run once each (repeats, crossed syncs and a restarted agent's resend add nothing), through
// the job's end, and across head crashes after every step (the fixture: core_scenario.h).
#include "head/core_scenario.h"

namespace corral::head::core_test {
namespace {

UsagePoint Sample(int64_t seq, int32_t util) {
  return RawUsagePoint(seq, 1000 * seq, util, int64_t{seq} << 20, 500, int64_t{seq} << 21);
}

RunReport WithUsage(RunReport r, std::vector<UsagePoint> points) {
  r.usage = std::move(points);
  return r;
}

TEST_P(Scenario, UsageSamplesAreKeptWithTheRunOnceEach) {
  Register("n1", 2);
  Job job = Submit(Spec(1, 2));
  Schedule();
  ASSERT_EQ(Get(job.id).state, JobState::kScheduled);
  ASSERT_TRUE(*Report("n1", {WithUsage(Running(Get(job.id), 0), {Sample(1, 10), Sample(2, 20)}),
                             Running(Get(job.id), 1)}));
  const uint64_t rev = core().revision();
  // The same samples again (an answer lost, an agent restarted): nothing changes.
  ASSERT_TRUE(*Report("n1", {WithUsage(Running(Get(job.id), 0), {Sample(1, 10), Sample(2, 20)}),
                             Running(Get(job.id), 1)}));
  if (!GetParam()) {
    EXPECT_EQ(core().revision(), rev) << "a repeat is no change";
  }
  // Overlapping: only 3 is new; replica 1 starts its own numbering.
  ASSERT_TRUE(*Report("n1", {WithUsage(Running(Get(job.id), 0), {Sample(2, 20), Sample(3, 30)}),
                             WithUsage(Running(Get(job.id), 1), {Sample(1, 90)})}));
  // The exit's report carries the last samples.
  ASSERT_TRUE(*Report("n1", {WithUsage(Exited(Get(job.id), 0, 0), {Sample(3, 30), Sample(4, 40)}),
                             WithUsage(Exited(Get(job.id), 1, 0), {Sample(2, 80)})}));
  const Job done = Get(job.id);
  ASSERT_EQ(done.state, JobState::kSucceeded);
  const corral::Run& run = done.runs[0];
  ASSERT_EQ(run.usage.size(), 2u);
  EXPECT_EQ(run.usage[0].replica, 0);
  EXPECT_EQ(run.usage[0].last_seq, 4);
  ASSERT_EQ(run.usage[0].points.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(run.usage[0].points[i].seq, static_cast<int64_t>(i + 1));
    EXPECT_EQ(run.usage[0].points[i].gpu_util, 10 * static_cast<int32_t>(i + 1));
  }
  EXPECT_EQ(run.usage[1].replica, 1);
  ASSERT_EQ(run.usage[1].points.size(), 2u);
  EXPECT_EQ(run.usage[1].points[1].gpu_util, 80);
  UsageSummary s = SummarizeUsage(run.usage);
  EXPECT_EQ(s.samples, 6);
  EXPECT_DOUBLE_EQ(s.gpu_util, (10 + 20 + 30 + 40 + 90 + 80) / 6.0);
  h_.ExpectDerivedStateRebuilds();
}

TEST_P(Scenario, UsageOfAnotherNodesReplicaIsIgnored) {
  Register("n1", 1);
  Register("n2", 1);
  Job job = Submit(Spec(1));
  Schedule();
  const std::string other = Get(job.id).runs[0].placement[0].node == "n1" ? "n2" : "n1";
  ASSERT_TRUE(*Report(other, {WithUsage(Running(Get(job.id), 0), {Sample(1, 10)})}));
  EXPECT_TRUE(Get(job.id).runs[0].usage.empty());
}

}  // namespace
}  // namespace corral::head::core_test
