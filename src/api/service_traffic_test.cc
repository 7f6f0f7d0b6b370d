// A service's traffic over the last minute (service_traffic.h): counts, rate, 5xx share and the
// latency's nearest-rank quantiles, over one-second buckets that age out of the window.
#include "api/service_traffic.h"

#include <gtest/gtest.h>

namespace corral::api {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const TrafficWindow::Clock::time_point kT0{seconds(1000)};

TEST(TrafficWindow, CountsRateErrorShareAndQuantilesOfTheAnswersInTheWindow) {
  TrafficWindow w;
  EXPECT_EQ(w.Summary(kT0).requests, 0);
  EXPECT_FALSE(w.Summary(kT0).p50_ms.has_value()) << "no answer: no latency";
  // 100 answers over 10 s: latencies 1..100 ms, every 10th a 503, one 404 (not an error).
  for (int i = 1; i <= 100; ++i) {
    w.Record(kT0 + milliseconds(i * 100), i, i % 10 == 0 ? 503 : i == 7 ? 404 : 200);
  }
  const ServiceTraffic t = w.Summary(kT0 + seconds(10));
  EXPECT_EQ(t.requests, 100);
  EXPECT_EQ(t.errors_5xx, 10);
  EXPECT_DOUBLE_EQ(t.error_share, 0.1);
  EXPECT_NEAR(t.window_s, 9.9, 1e-9) << "a young service's rate is over the time it answered";
  EXPECT_NEAR(t.requests_per_s, 100 / 9.9, 1e-9);
  EXPECT_DOUBLE_EQ(*t.p50_ms, 50) << "nearest rank: the 50th of 100";
  EXPECT_DOUBLE_EQ(*t.p99_ms, 99);
  const Json j = ToJson(t);
  EXPECT_EQ(j["requests"], 100);
  EXPECT_EQ(j["p99_ms"], 99.0);
}

TEST(TrafficWindow, AnswersOlderThanAMinuteLeaveTheWindow) {
  TrafficWindow w;
  w.Record(kT0, 900, 500);
  for (int i = 0; i < 30; ++i) w.Record(kT0 + seconds(40) + milliseconds(i), 5, 200);
  ServiceTraffic t = w.Summary(kT0 + seconds(50));
  EXPECT_EQ(t.requests, 31);
  EXPECT_EQ(*t.p99_ms, 900);
  t = w.Summary(kT0 + seconds(61));
  EXPECT_EQ(t.requests, 30) << "the first second left the window";
  EXPECT_EQ(t.errors_5xx, 0);
  EXPECT_DOUBLE_EQ(t.window_s, 60);
  EXPECT_DOUBLE_EQ(t.requests_per_s, 0.5);
  EXPECT_EQ(*t.p99_ms, 5);
  EXPECT_FALSE(w.Empty(kT0 + seconds(61)));
  EXPECT_TRUE(w.Empty(kT0 + seconds(101)));
  EXPECT_EQ(w.Summary(kT0 + seconds(101)).requests, 0);
  EXPECT_FALSE(w.Summary(kT0 + seconds(101)).p50_ms.has_value());
}

TEST(TrafficWindow, ABusySecondKeepsItsCountsExactAndABoundOfLatencies) {
  TrafficWindow w;
  const size_t n = TrafficWindow::kLatenciesPerSecond + 500;
  for (size_t i = 0; i < n; ++i)
    w.Record(kT0, i < TrafficWindow::kLatenciesPerSecond ? 2 : 1e6, 200);
  const ServiceTraffic t = w.Summary(kT0 + milliseconds(500));
  EXPECT_EQ(t.requests, static_cast<int64_t>(n));
  EXPECT_DOUBLE_EQ(*t.p99_ms, 2) << "latencies past the bound are not kept";
}

}  // namespace
}  // namespace corral::api
