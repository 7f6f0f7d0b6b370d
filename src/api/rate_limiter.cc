#include "api/rate_limiter.h"

#include <algorithm>

namespace corral::api {

bool RateLimiter::Allow(const std::string& key, Clock::time_point now) {
  if (rate_ <= 0) return true;
  std::lock_guard lock(mu_);
  // Full buckets carry no information: drop them now and then so the map tracks only the
  // callers that are busy right now.
  if (now - last_prune_ > std::chrono::seconds(60)) {
    last_prune_ = now;
    for (auto it = buckets_.begin(); it != buckets_.end();) {
      double refilled =
          it->second.tokens + std::chrono::duration<double>(now - it->second.at).count() * rate_;
      it = refilled >= burst_ ? buckets_.erase(it) : std::next(it);
    }
  }
  auto [it, fresh] = buckets_.try_emplace(key, Bucket{burst_, now});
  Bucket& b = it->second;
  if (!fresh) {
    b.tokens =
        std::min(burst_, b.tokens + std::chrono::duration<double>(now - b.at).count() * rate_);
    b.at = now;
  }
  if (b.tokens < 1) return false;
  b.tokens -= 1;
  return true;
}

}  // namespace corral::api
