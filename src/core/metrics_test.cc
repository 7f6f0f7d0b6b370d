#include "core/metrics.h"

#include <gtest/gtest.h>

namespace corral {
namespace {

TEST(Metrics, CountersAndGaugesRenderInTheTextFormat) {
  MetricsRegistry m;
  m.Describe("corral_jobs", MetricsRegistry::Type::kGauge, "Jobs by state.");
  m.Describe("corral_preemptions_total", MetricsRegistry::Type::kCounter, "Preemptions.");
  m.Set("corral_jobs", {{"state", "pending"}}, 3);
  m.Set("corral_jobs", {{"state", "running"}}, 1.5);
  m.Add("corral_preemptions_total", {{"reason", "quota"}}, 1);
  m.Add("corral_preemptions_total", {{"reason", "quota"}}, 2);
  EXPECT_EQ(m.Render(),
            "# HELP corral_jobs Jobs by state.\n"
            "# TYPE corral_jobs gauge\n"
            "corral_jobs{state=\"pending\"} 3\n"
            "corral_jobs{state=\"running\"} 1.5\n"
            "# HELP corral_preemptions_total Preemptions.\n"
            "# TYPE corral_preemptions_total counter\n"
            "corral_preemptions_total{reason=\"quota\"} 3\n");
  m.Clear("corral_jobs");
  EXPECT_EQ(m.Render().find("state=\"pending\""), std::string::npos);
}

TEST(Metrics, HistogramBucketsAreCumulativeWithInfSumAndCount) {
  MetricsRegistry m;
  m.Describe("x_seconds", MetricsRegistry::Type::kHistogram, "X.", {0.1, 1, 0.01});
  for (double v : {0.005, 0.01, 0.5, 2.0}) m.Observe("x_seconds", {}, v);
  EXPECT_EQ(m.Render(),
            "# HELP x_seconds X.\n"
            "# TYPE x_seconds histogram\n"
            "x_seconds_bucket{le=\"0.01\"} 2\n"  // 0.01 falls in le="0.01"
            "x_seconds_bucket{le=\"0.1\"} 2\n"
            "x_seconds_bucket{le=\"1\"} 3\n"
            "x_seconds_bucket{le=\"+Inf\"} 4\n"
            "x_seconds_sum 2.515\n"
            "x_seconds_count 4\n");
}

TEST(Metrics, LabelValuesAreEscaped) {
  EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  MetricsRegistry m;
  m.Describe("g", MetricsRegistry::Type::kGauge, "G.");
  m.Set("g", {{"route", "/v1/jobs/{id}"}, {"code", "200"}}, 1);
  EXPECT_NE(m.Render().find("g{route=\"/v1/jobs/{id}\",code=\"200\"} 1"), std::string::npos);
}

}  // namespace
}  // namespace corral
