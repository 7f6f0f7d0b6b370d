#include "agentnet/relay_auth.h"

namespace corral::agentnet {

void RelayAuth::SetCredential(const std::string& credential) {
  std::string key = NodeGrantKey(credential);
  std::lock_guard lock(mu_);
  key_ = std::move(key);
}

GrantCheck RelayAuth::Check(const std::string& bearer, const std::string& run) const {
  std::string key;
  {
    std::lock_guard lock(mu_);
    key = key_;
  }
  return VerifyRelayGrant(key, bearer, node_, run, SystemClock().Now());
}

net::HttpResponse RelayAuth::Refusal(const GrantCheck& check) {
  Status st = check.ToStatus();
  int code = st.code() == ErrorCode::kPermissionDenied ? 403
             : st.code() == ErrorCode::kUnavailable    ? 503
                                                       : 401;
  net::HttpResponse r = net::JsonError(code, GrantRefusalName(check.refusal), st.message());
  return r;
}

}  // namespace corral::agentnet
