// Requests per caller per second, as a token bucket per key (a bearer token, or the peer's
// address for calls without one): a burst is allowed, a flood gets 429. Any thread.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>

namespace corral::api {

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  // `per_second` <= 0: no limit.
  RateLimiter(double per_second, double burst) : rate_(per_second), burst_(burst) {}

  // Takes one request's worth from `key`'s bucket; false if it is empty.
  bool Allow(const std::string& key, Clock::time_point now = Clock::now());

 private:
  struct Bucket {
    double tokens = 0;
    Clock::time_point at;
  };
  std::mutex mu_;
  double rate_;
  double burst_;
  std::map<std::string, Bucket> buckets_;
  Clock::time_point last_prune_;
};

}  // namespace corral::api
