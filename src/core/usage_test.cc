// Usage figures from hand-built jobs: each case is one place a figure could go wrong
// (clipping at the window's edges, preempted runs, runs still going, jobs never started).
#include "core/usage.h"

#include <gtest/gtest.h>

namespace corral {
namespace {

constexpr TimeMs kH = kHour;
constexpr TimeMs kFrom = 100 * kH;
constexpr TimeMs kTo = 200 * kH;

Run MakeRun(int attempt, int gpus, TimeMs start, TimeMs end, RunState state) {
  Run r;
  r.attempt = attempt;
  ReplicaPlacement p;
  p.node = "n1";
  for (int i = 0; i < gpus; ++i) p.gpus.push_back(i);
  r.placement = {p};
  r.state = state;
  r.scheduled_at = start;
  r.started_at = start;
  r.ended_at = end;
  return r;
}

Job MakeJob(JobId id, const std::string& owner, const std::string& queue, TimeMs submitted) {
  Job j;
  j.id = id;
  j.owner = owner;
  j.spec.queue = queue;
  j.submitted_at = submitted;
  return j;
}

TEST(Usage, RunInsideWindowCountsGpusTimesDuration) {
  Job j = MakeJob(1, "ana", "a", kFrom + 1 * kH);
  j.runs.push_back(MakeRun(1, 2, kFrom + 2 * kH, kFrom + 5 * kH, RunState::kSucceeded));
  UsageReport r = ComputeUsage({j}, UsageBy::kUser, kFrom, kTo);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].key, "ana");
  EXPECT_DOUBLE_EQ(r.rows[0].gpu_seconds, 2 * 3 * 3600.0);
  EXPECT_EQ(r.rows[0].jobs, 1);
  EXPECT_EQ(r.rows[0].started, 1);
  EXPECT_DOUBLE_EQ(r.rows[0].AverageWaitSeconds(), 3600.0);
}

TEST(Usage, RunsAreClippedAtBothEdgesOfTheWindow) {
  // Began 3 h before the window, ended 1 h into it: only 1 h counts; submitted and started
  // before the window, so it adds no wait.
  Job before = MakeJob(1, "ana", "a", kFrom - 4 * kH);
  before.runs.push_back(MakeRun(1, 4, kFrom - 3 * kH, kFrom + 1 * kH, RunState::kSucceeded));
  // Began 2 h before the end, ended 5 h after it: 2 h count.
  Job after = MakeJob(2, "ana", "a", kTo - 2 * kH);
  after.runs.push_back(MakeRun(1, 1, kTo - 2 * kH, kTo + 5 * kH, RunState::kSucceeded));
  // Wholly before the window: nothing, and the job is not listed.
  Job old = MakeJob(3, "bob", "b", kFrom - 10 * kH);
  old.runs.push_back(MakeRun(1, 8, kFrom - 9 * kH, kFrom - 1 * kH, RunState::kSucceeded));
  UsageReport r = ComputeUsage({before, after, old}, UsageBy::kUser, kFrom, kTo);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(r.rows[0].gpu_seconds, (4 * 1 + 1 * 2) * 3600.0);
  EXPECT_EQ(r.rows[0].jobs, 2);
  EXPECT_EQ(r.rows[0].started, 1);  // only `after` started inside
  EXPECT_DOUBLE_EQ(r.rows[0].AverageWaitSeconds(), 0);
}

TEST(Usage, PreemptedRunsCountTheirTimeAndThePreemption) {
  Job j = MakeJob(1, "ana", "a", kFrom);
  j.runs.push_back(MakeRun(1, 2, kFrom + 1 * kH, kFrom + 2 * kH, RunState::kPreempted));
  j.runs.push_back(MakeRun(2, 2, kFrom + 4 * kH, kFrom + 7 * kH, RunState::kSucceeded));
  UsageReport r = ComputeUsage({j}, UsageBy::kQueue, kFrom, kTo);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].key, "a");
  EXPECT_DOUBLE_EQ(r.rows[0].gpu_seconds, 2 * (1 + 3) * 3600.0);
  EXPECT_EQ(r.rows[0].preemptions, 1);
  EXPECT_EQ(r.rows[0].jobs, 1);
  // The wait is to the first start, not to the restart.
  EXPECT_DOUBLE_EQ(r.rows[0].AverageWaitSeconds(), 3600.0);
}

TEST(Usage, RunningRunCountsUpToTheEndOfTheWindow) {
  Job j = MakeJob(1, "ana", "a", kTo - 3 * kH);
  j.state = JobState::kRunning;
  j.runs.push_back(MakeRun(1, 3, kTo - 2 * kH, 0, RunState::kRunning));
  UsageReport r = ComputeUsage({j}, UsageBy::kUser, kFrom, kTo);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(r.rows[0].gpu_seconds, 3 * 2 * 3600.0);
  // Asked one hour later, the same run has used one hour more.
  UsageReport later = ComputeUsage({j}, UsageBy::kUser, kFrom, kTo + kH);
  EXPECT_DOUBLE_EQ(later.rows[0].gpu_seconds, 3 * 3 * 3600.0);
}

TEST(Usage, JobsNeverStartedCountAsJobsWithoutGpuTimeOrWait) {
  Job pending = MakeJob(1, "bob", "b", kFrom + kH);
  Job placed = MakeJob(2, "bob", "b", kFrom + kH);  // placed, never reported running
  placed.runs.push_back(MakeRun(1, 4, 0, 0, RunState::kScheduled));
  placed.runs.back().scheduled_at = kFrom + 2 * kH;
  Job lost = MakeJob(3, "bob", "b", kFrom + kH);  // lost before it started
  lost.runs.push_back(MakeRun(1, 4, 0, kFrom + 3 * kH, RunState::kLost));
  UsageReport r = ComputeUsage({pending, placed, lost}, UsageBy::kUser, kFrom, kTo);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(r.rows[0].gpu_seconds, 0);
  EXPECT_EQ(r.rows[0].jobs, 3);
  EXPECT_EQ(r.rows[0].started, 0);
  EXPECT_DOUBLE_EQ(r.rows[0].AverageWaitSeconds(), 0);
}

TEST(Usage, FractionalGpusAndReplicasAddUp) {
  Job j = MakeJob(1, "ana", "a", kFrom);
  corral::Run run = MakeRun(1, 0, kFrom, kFrom + 2 * kH, RunState::kSucceeded);
  ReplicaPlacement half{"n1", {0}, {500}, 0, 1};
  ReplicaPlacement whole{"n2", {0, 1}, {}, 0, 1};
  run.placement = {half, whole};
  j.runs.push_back(run);
  UsageReport r = ComputeUsage({j}, UsageBy::kUser, kFrom, kTo);
  EXPECT_DOUBLE_EQ(r.rows[0].gpu_seconds, 2.5 * 2 * 3600.0);
}

TEST(Usage, RowsByUserOrQueueWithATotalSortedByGpuTime) {
  Job a1 = MakeJob(1, "ana", "shared", kFrom);
  a1.runs.push_back(MakeRun(1, 1, kFrom, kFrom + kH, RunState::kSucceeded));
  Job b1 = MakeJob(2, "bob", "shared", kFrom);
  b1.runs.push_back(MakeRun(1, 4, kFrom + 2 * kH, kFrom + 3 * kH, RunState::kFailed));
  Job b2 = MakeJob(3, "bob", "private", kFrom);
  std::vector<Job> jobs = {a1, b1, b2};

  UsageReport by_user = ComputeUsage(jobs, UsageBy::kUser, kFrom, kTo);
  ASSERT_EQ(by_user.rows.size(), 2u);
  EXPECT_EQ(by_user.rows[0].key, "bob");  // more GPU time first
  EXPECT_EQ(by_user.rows[0].jobs, 2);
  EXPECT_DOUBLE_EQ(by_user.rows[0].AverageWaitSeconds(), 2 * 3600.0);
  EXPECT_EQ(by_user.total.jobs, 3);
  EXPECT_DOUBLE_EQ(by_user.total.gpu_seconds, 5 * 3600.0);
  EXPECT_DOUBLE_EQ(by_user.total.AverageWaitSeconds(), 3600.0);  // (0 + 2 h) / 2 started

  UsageReport by_queue = ComputeUsage(jobs, UsageBy::kQueue, kFrom, kTo);
  ASSERT_EQ(by_queue.rows.size(), 2u);
  EXPECT_EQ(by_queue.rows[0].key, "shared");
  EXPECT_DOUBLE_EQ(by_queue.rows[0].gpu_seconds, 5 * 3600.0);
  EXPECT_EQ(by_queue.rows[1].key, "private");
  EXPECT_EQ(by_queue.rows[1].jobs, 1);
}

TEST(Usage, PreemptionOutsideTheWindowIsNotCounted) {
  Job j = MakeJob(1, "ana", "a", kFrom - 5 * kH);
  j.runs.push_back(MakeRun(1, 1, kFrom - 4 * kH, kFrom - 3 * kH, RunState::kPreempted));
  j.runs.push_back(MakeRun(2, 1, kFrom - kH, kFrom + kH, RunState::kSucceeded));
  UsageReport r = ComputeUsage({j}, UsageBy::kUser, kFrom, kTo);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].preemptions, 0);
  EXPECT_DOUBLE_EQ(r.rows[0].gpu_seconds, 3600.0);
}

// Efficiency per user: GPU utilisation weighted by samples x GPUs, CPU and memory against what
// was asked, idle-GPU jobs counted, samples outside the window left out.
TEST(Usage, EfficiencyWeighsSamplesByGpusAndCountsIdleJobs) {
  constexpr int64_t kMiB = 1024 * 1024;
  Job busy = MakeJob(1, "ana", "a", kFrom);
  busy.spec.per_replica = {2 * kGpuMilli, 4000, 1024};
  busy.runs.push_back(MakeRun(1, 2, kFrom + kH, kFrom + 3 * kH, RunState::kSucceeded));
  busy.runs[0].usage = {{0,
                         3,
                         {RawUsagePoint(1, kFrom + kH + 1, 90, 0, 1000, 512 * kMiB),
                          RawUsagePoint(2, kFrom + kH + 2, 90, 0, 3000, 512 * kMiB),
                          // before the window: not counted
                          RawUsagePoint(3, kFrom - 1, 0, 0, 0, 0)}}};
  Job idle = MakeJob(2, "ana", "a", kFrom);
  idle.spec.per_replica = {1 * kGpuMilli, 1000, 0};
  idle.runs.push_back(MakeRun(1, 1, kFrom + kH, kFrom + 3 * kH, RunState::kSucceeded));
  idle.runs[0].usage = {{0,
                         2,
                         {RawUsagePoint(1, kFrom + kH + 1, 0, 0, 0, kMiB),
                          RawUsagePoint(2, kFrom + kH + 2, 3, 0, 0, kMiB)}}};
  Job unmeasured = MakeJob(3, "bob", "a", kFrom);
  unmeasured.runs.push_back(MakeRun(1, 1, kFrom + kH, kFrom + 2 * kH, RunState::kSucceeded));
  UsageReport r = ComputeUsage({busy, idle, unmeasured}, UsageBy::kUser, kFrom, kTo);
  ASSERT_EQ(r.rows.size(), 2u);
  const UsageRow& ana = r.rows[0];
  ASSERT_EQ(ana.key, "ana");
  // 2 samples x 2 GPUs at 90%, 2 samples x 1 GPU at 0% and 3%.
  EXPECT_DOUBLE_EQ(ana.GpuUtil(), (90.0 * 4 + 0 + 3) / 6);
  EXPECT_DOUBLE_EQ(ana.CpuEfficiency(), 100.0 * (1000 + 3000 + 0 + 0) / (4000 * 2 + 1000 * 2));
  EXPECT_DOUBLE_EQ(ana.MemoryEfficiency(), 50.0);  // only the job that asked for memory
  EXPECT_EQ(ana.idle_gpu_jobs, 1);
  EXPECT_LT(r.rows[1].GpuUtil(), 0) << "nothing measured";
  EXPECT_DOUBLE_EQ(r.total.GpuUtil(), ana.GpuUtil());
  auto back = UsageReportFromJson(ToJson(r));
  ASSERT_TRUE(back.ok());
  EXPECT_NEAR(back->rows[0].GpuUtil(), ana.GpuUtil(), 1e-9);
  EXPECT_EQ(back->rows[0].idle_gpu_jobs, 1);
  EXPECT_LT(back->rows[1].GpuUtil(), 0);
}

TEST(Usage, ParseByNamesTheFieldAndTheChoices) {
  EXPECT_EQ(*ParseUsageBy("by", "queue"), UsageBy::kQueue);
  auto bad = ParseUsageBy("flag --by", "color");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("flag --by"), std::string::npos);
  EXPECT_NE(bad.status().message().find("color"), std::string::npos);
  EXPECT_NE(bad.status().message().find("user or queue"), std::string::npos);
}

TEST(Usage, JsonCarriesHoursAndAverageWait) {
  UsageRow row{"ana", 7200, 3, 2, 90, 1};
  Json j = ToJson(row);
  EXPECT_DOUBLE_EQ(j["gpu_hours"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j["avg_wait_seconds"].get<double>(), 45.0);
  EXPECT_EQ(j["preemptions"], 1);
}

}  // namespace
}  // namespace corral
