// Requests whose token is not a current credential, limited per client address: a client that
// sends a fresh random token with every request (or none) gets a small allowance per address,
// not a fresh one per token, and past it a 429 before any work is done or any line is written
// to the audit log. A token the cluster holds (`current`: the head's credentials, unexpired),
// or one that authenticated here (a job's step token), passes freely, so the other users
// behind one address (a login node) are not held back by one user's flood. Any thread.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <unordered_set>

#include "api/rate_limiter.h"

namespace corral::api {

class AuthThrottle {
 public:
  // `per_second` <= 0: no limit. Bursts of ten times `per_second`. `current` (may be empty):
  // whether a bearer is a credential the cluster holds.
  explicit AuthThrottle(double per_second,
                        std::function<bool(const std::string&)> current = nullptr,
                        size_t remember = 1 << 16);

  // True if a request with `bearer` from `address` may go on: its token worked before, or the
  // address has allowance left (one is taken).
  bool Allow(const std::string& bearer, const std::string& address,
             RateLimiter::Clock::time_point now = RateLimiter::Clock::now());
  // What the request's answer said of its token: it authenticated (2xx, 403) or was refused
  // (401, which forgets it: a revoked token is throttled again).
  void Answered(const std::string& bearer, int status);

 private:
  RateLimiter per_address_;
  std::function<bool(const std::string&)> current_;
  bool enabled_;
  size_t remember_;
  std::mutex mu_;
  std::unordered_set<std::string> known_;  // SHA-256 of tokens that worked; GUARDED_BY(mu_)
};

}  // namespace corral::api
