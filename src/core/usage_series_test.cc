// Usage series: dedupe by sample number, the bound and its merges, summaries and the verdict,
// and the compact JSON form.
#include "core/usage_series.h"

#include <gtest/gtest.h>

#include "core/codec.h"

namespace corral {
namespace {

constexpr int64_t kMiB = 1024 * 1024;

UsagePoint Raw(int64_t seq, int32_t util, int64_t gpu_mem = 0, int32_t cpu = 0, int64_t mem = 0) {
  return RawUsagePoint(seq, 1000 * seq, util, gpu_mem, cpu, mem);
}

TEST(UsageSeries, RepeatedAndOverlappingReportsAddEachSampleOnce) {
  ReplicaUsage s;
  EXPECT_EQ(AppendUsage(&s, {Raw(1, 10), Raw(2, 20)}), 2u);
  // An agent restarted before it learnt its sync arrived sends 1 and 2 again, with 3.
  EXPECT_EQ(AppendUsage(&s, {Raw(1, 10), Raw(2, 20), Raw(3, 30)}), 1u);
  EXPECT_EQ(AppendUsage(&s, {Raw(3, 30)}), 0u);
  ASSERT_EQ(s.points.size(), 3u);
  EXPECT_EQ(s.last_seq, 3);
  EXPECT_EQ(s.points[2].gpu_util, 30);
}

TEST(UsageSeries, UsageAfterGivesWhatTheHeadMayLack) {
  std::vector<UsagePoint> all{Raw(1, 1), Raw(2, 2), Raw(3, 3)};
  auto rest = UsageAfter(all, 1);
  ASSERT_EQ(rest.size(), 2u);
  EXPECT_EQ(rest[0].seq, 2);
  EXPECT_TRUE(UsageAfter(all, 3).empty());
}

TEST(UsageSeries, MergingWeighsMeansBySamplesAndKeepsPeaks) {
  UsagePoint a = Raw(1, 10, 100 * kMiB, 1000, 50 * kMiB);
  UsagePoint b =
      MergeUsage(Raw(2, 40, 300 * kMiB, 3000, 10 * kMiB), Raw(3, 70, 200 * kMiB, 2000, 30 * kMiB));
  UsagePoint m = MergeUsage(a, b);
  EXPECT_EQ(m.seq, 3);
  EXPECT_EQ(m.at, 3000);
  EXPECT_EQ(m.samples, 3);
  EXPECT_EQ(m.gpu_util, 40);  // (10 + 40 + 70) / 3
  EXPECT_EQ(m.gpu_util_max, 70);
  EXPECT_EQ(m.gpu_mem, 200 * kMiB);
  EXPECT_EQ(m.gpu_mem_max, 300 * kMiB);
  EXPECT_EQ(m.cpu_milli, 2000);
  EXPECT_EQ(m.cpu_milli_max, 3000);
  EXPECT_EQ(m.mem, 30 * kMiB);
  EXPECT_EQ(m.mem_max, 50 * kMiB);
}

TEST(UsageSeries, ALongSeriesStaysBoundedAndKeepsItsWholeLength) {
  ReplicaUsage s;
  for (int64_t i = 1; i <= 1000; ++i) AppendUsage(&s, {Raw(i, static_cast<int32_t>(i % 100))}, 64);
  EXPECT_LE(s.points.size(), 64u);
  EXPECT_GT(s.points.size(), 16u);
  EXPECT_EQ(s.last_seq, 1000);
  EXPECT_EQ(s.points.back().seq, 1000);
  int64_t samples = 0;
  for (const UsagePoint& p : s.points) samples += p.samples;
  EXPECT_EQ(samples, 1000);  // nothing dropped, only merged
  EXPECT_EQ(SummarizeUsage({s}).gpu_util_max, 99);
  // Points stay in order.
  for (size_t i = 1; i < s.points.size(); ++i) EXPECT_LT(s.points[i - 1].seq, s.points[i].seq);
}

TEST(UsageSeries, SummaryWeighsReplicasBySamples) {
  ReplicaUsage r0{0, 0, {}}, r1{1, 0, {}};
  AppendUsage(&r0, {Raw(1, 100), Raw(2, 100)});
  AppendUsage(&r1, {Raw(1, 0, 0, 0, 8 * kMiB), Raw(2, 0)});
  UsageSummary s = SummarizeUsage({r0, r1});
  EXPECT_EQ(s.samples, 4);
  EXPECT_DOUBLE_EQ(s.gpu_util, 50);
  EXPECT_EQ(s.gpu_util_max, 100);
  EXPECT_EQ(s.mem_max, 8 * kMiB);
  UsageSummary both = CombineUsage({s, SummarizeUsage({r1})});
  EXPECT_EQ(both.samples, 6);
  EXPECT_NEAR(both.gpu_util, 100.0 * 2 / 6, 1e-9);
}

bool Has(const std::vector<EfficiencyNote>& notes, EfficiencyFinding f) {
  for (const EfficiencyNote& n : notes) {
    if (n.finding == f) return true;
  }
  return false;
}

TEST(UsageSeries, VerdictNamesIdleGpusAndHeadroom) {
  ReplicaUsage idle;
  AppendUsage(&idle, {Raw(1, 1, 512 * kMiB, 100, 100 * kMiB), Raw(2, 3, 512 * kMiB, 100, kMiB)});
  UsageRequest asked{2, 80 * 1024 * kMiB, 8000, 4096 * kMiB};
  auto notes = JudgeUsage(SummarizeUsage({idle}), asked);
  EXPECT_TRUE(Has(notes, EfficiencyFinding::kIdleGpus));
  EXPECT_TRUE(Has(notes, EfficiencyFinding::kGpuMemoryHeadroom));
  EXPECT_TRUE(Has(notes, EfficiencyFinding::kMemoryHeadroom));
  EXPECT_TRUE(Has(notes, EfficiencyFinding::kLowCpu));
  EXPECT_FALSE(Has(notes, EfficiencyFinding::kGood));
  EXPECT_NE(notes[0].text.find("mean utilisation 2%"), std::string::npos) << notes[0].text;

  ReplicaUsage busy;
  AppendUsage(&busy, {Raw(1, 95, 70 * 1024 * kMiB, 7500, 3500 * kMiB)});
  auto good = JudgeUsage(SummarizeUsage({busy}), asked);
  ASSERT_EQ(good.size(), 1u);
  EXPECT_EQ(good[0].finding, EfficiencyFinding::kGood);

  EXPECT_EQ(JudgeUsage(UsageSummary{}, asked)[0].finding, EfficiencyFinding::kUnmeasured);
  // Without GPUs asked, idle GPUs are not a finding.
  EXPECT_FALSE(Has(JudgeUsage(SummarizeUsage({idle}), {0, 0, 0, 0}), EfficiencyFinding::kIdleGpus));
}

TEST(UsageSeries, JsonRoundTripsAndRejectsMalformedPoints) {
  ReplicaUsage s;
  AppendUsage(&s, {Raw(1, 10, kMiB, 1500, 2 * kMiB), MergeUsage(Raw(2, 20), Raw(3, 40))});
  s.replica = 2;
  corral::Run run;
  run.attempt = 1;
  run.usage = {s};
  auto back = RunFromJson(ToJson(run));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->usage, run.usage);
  EXPECT_TRUE(ToJson(s.points[0]).is_array());

  EXPECT_FALSE(UsagePointsFromJson(Json::parse("[[1,2,3]]")).ok());
  EXPECT_FALSE(UsagePointsFromJson(Json::parse("[[0,1,1,0,0,0,0,0,0,0,0]]")).ok());
  EXPECT_FALSE(UsagePointsFromJson(Json::parse("{}")).ok());
  EXPECT_TRUE(UsagePointsFromJson(Json::parse("[[1,1,1,0,0,0,0,0,0,0,0]]")).ok());
}

}  // namespace
}  // namespace corral
