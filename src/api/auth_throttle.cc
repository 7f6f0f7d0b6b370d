#include "api/auth_throttle.h"

#include <utility>

#include "head/tokens.h"

namespace corral::api {

AuthThrottle::AuthThrottle(double per_second, std::function<bool(const std::string&)> current,
                           size_t remember)
    : per_address_(per_second, per_second * 10),
      current_(std::move(current)),
      enabled_(per_second > 0),
      remember_(remember) {}

bool AuthThrottle::Allow(const std::string& bearer, const std::string& address,
                         RateLimiter::Clock::time_point now) {
  if (!enabled_) return true;
  if (!bearer.empty()) {
    std::string hash = head::Sha256Hex(bearer);
    {
      std::lock_guard lock(mu_);
      if (known_.count(hash) > 0) return true;
    }
    if (current_ && current_(bearer)) return true;
  }
  return per_address_.Allow(address, now);
}

void AuthThrottle::Answered(const std::string& bearer, int status) {
  if (!enabled_ || bearer.empty()) return;
  bool worked = (status >= 200 && status < 300) || status == 403;
  if (!worked && status != 401) return;  // says nothing of the token
  std::string hash = head::Sha256Hex(bearer);
  std::lock_guard lock(mu_);
  if (status == 401) {
    known_.erase(hash);
    return;
  }
  // Bounded: when full, start over; the tokens in use come back at their next request, each
  // at the cost of one request's allowance.
  if (known_.size() >= remember_) known_.clear();
  known_.insert(hash);
}

}  // namespace corral::api
