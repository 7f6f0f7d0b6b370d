#include "api/rate_limiter.h"

#include <gtest/gtest.h>

namespace corral::api {
namespace {

using std::chrono::milliseconds;

TEST(RateLimiter, ABurstPassesAFloodIsRefusedAndTheBucketRefills) {
  RateLimiter limiter(10, 20);
  auto t0 = RateLimiter::Clock::time_point{} + std::chrono::hours(1);
  int allowed = 0;
  for (int i = 0; i < 100; ++i) allowed += limiter.Allow("ana", t0);
  EXPECT_EQ(allowed, 20) << "the burst, then nothing";
  EXPECT_TRUE(limiter.Allow("bob", t0)) << "buckets are per key";
  EXPECT_FALSE(limiter.Allow("ana", t0 + milliseconds(50)));
  EXPECT_TRUE(limiter.Allow("ana", t0 + milliseconds(100))) << "10/s: one more after 100 ms";
  EXPECT_FALSE(limiter.Allow("ana", t0 + milliseconds(100)));
  allowed = 0;
  for (int i = 0; i < 100; ++i) allowed += limiter.Allow("ana", t0 + std::chrono::seconds(100));
  EXPECT_EQ(allowed, 20) << "a long pause refills to the burst, not beyond";
}

TEST(RateLimiter, ZeroMeansNoLimit) {
  RateLimiter limiter(0, 0);
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(limiter.Allow("ana"));
}

}  // namespace
}  // namespace corral::api
