#include "api/auth_throttle.h"

#include <gtest/gtest.h>

namespace corral::api {
namespace {

// A fresh random token per request gets no fresh allowance: the address's runs out, while a
// token that worked goes on, from the same address, until it is refused.
TEST(AuthThrottle, RandomTokensShareTheirAddresssAllowanceAndWorkingTokensPass) {
  AuthThrottle t(/*per_second=*/1);  // bursts of 10
  auto now = RateLimiter::Clock::now();
  int allowed = 0;
  for (int i = 0; i < 1000; ++i) allowed += t.Allow("random-" + std::to_string(i), "10.0.0.1", now);
  EXPECT_EQ(allowed, 10);
  EXPECT_FALSE(t.Allow("", "10.0.0.1", now)) << "no token is no better";
  EXPECT_TRUE(t.Allow("random-0", "10.0.0.2", now)) << "another address has its own";
  t.Answered("good", 200);
  t.Answered("forbidden-but-known", 403);
  t.Answered("random-1", 404);  // says nothing of the token
  EXPECT_TRUE(t.Allow("good", "10.0.0.1", now));
  EXPECT_TRUE(t.Allow("forbidden-but-known", "10.0.0.1", now));
  EXPECT_FALSE(t.Allow("random-1", "10.0.0.1", now));
  t.Answered("good", 401);  // revoked
  EXPECT_FALSE(t.Allow("good", "10.0.0.1", now));
  EXPECT_TRUE(t.Allow("x", "10.0.0.1", now + std::chrono::seconds(2))) << "it refills";
  // A credential the cluster holds passes from its first request.
  AuthThrottle held(1, [](const std::string& bearer) { return bearer == "issued"; });
  for (int i = 0; i < 20; ++i) held.Allow("random-" + std::to_string(i), "10.0.0.1", now);
  EXPECT_FALSE(held.Allow("random", "10.0.0.1", now));
  EXPECT_TRUE(held.Allow("issued", "10.0.0.1", now));
  AuthThrottle off(0);
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(off.Allow(std::to_string(i), "10.0.0.1", now));
}

}  // namespace
}  // namespace corral::api
