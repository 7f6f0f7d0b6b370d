#include "net/head_client.h"

#include <thread>

#include "net/url.h"

namespace corral::net {
namespace {

using Clock = std::chrono::steady_clock;

std::string TrimBlanks(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

// HttpClient's errors for a request that never left this process start so (http_client.h).
bool NeverSent(const Status& st) { return st.message().rfind("cannot connect to ", 0) == 0; }

}  // namespace

Result<std::vector<std::string>> ParseHeadList(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    std::string one = TrimBlanks(list.substr(start, comma - start));
    if (!one.empty()) {
      auto url = ParseClientUrl(one);
      if (!url.ok()) {
        return InvalidArgument("head address list '" + list + "': " + url.status().message());
      }
      out.push_back(url->ToString());
    }
    start = comma + 1;
  }
  if (out.empty()) return InvalidArgument("head address list '" + list + "' names no head");
  return out;
}

std::string BaseOfLocation(const std::string& location) {
  auto scheme_end = location.find("://");
  if (scheme_end == std::string::npos) return {};
  auto path = location.find('/', scheme_end + 3);
  auto url = ParseUrl(path == std::string::npos ? location : location.substr(0, path));
  return url.ok() ? url->ToString() : std::string();
}

HeadClient::HeadClient(std::vector<std::string> base_urls, std::string bearer_token,
                       HeadClientOptions options)
    : bases_(std::move(base_urls)),
      bearer_token_(std::move(bearer_token)),
      options_(options),
      current_(bases_.empty() ? std::string() : bases_.front()),
      next_index_(bases_.size() > 1 ? 1 : 0) {}

HeadClient::~HeadClient() = default;

std::string HeadClient::current() const {
  std::lock_guard lock(mu_);
  return current_;
}

HttpClient& HeadClient::ClientFor(const std::string& base) {
  if (!client_ || client_->base_url() != base) {
    client_ = std::make_unique<HttpClient>(base, bearer_token_);
  }
  return *client_;
}

Result<HttpResponse> HeadClient::Request(const std::string& method,
                                         const std::string& path_and_query, const std::string& body,
                                         std::chrono::milliseconds timeout, bool idempotent,
                                         const std::map<std::string, std::string>& headers) {
  std::lock_guard lock(mu_);
  if (bases_.empty()) return InvalidArgument("no head address configured");
  const auto deadline = Clock::now() + options_.failover_window;
  int redirects = 0;
  size_t failures_this_round = 0;
  auto move_on = [&] {
    // Every address failed once in a row: pause before the next round, so a failover in
    // progress is waited for rather than hammered.
    if (++failures_this_round >= bases_.size()) {
      failures_this_round = 0;
      std::this_thread::sleep_for(options_.pause_between_rounds);
    }
    current_ = bases_[next_index_];
    next_index_ = (next_index_ + 1) % bases_.size();
  };
  for (;;) {
    auto r = ClientFor(current_).Request(method, path_and_query, body, timeout, headers);
    bool retry = false;
    if (!r.ok()) {
      if (bases_.size() == 1 && !options_.retry_lone_head_refusal && NeverSent(r.status())) {
        return r;
      }
      retry = r.status().code() == ErrorCode::kUnavailable && (idempotent || NeverSent(r.status()));
    } else if (r->status == 307 || r->status == 308) {
      auto it = r->headers.find("location");
      std::string base = it == r->headers.end() ? std::string() : BaseOfLocation(it->second);
      if (!base.empty() && ++redirects <= options_.max_redirects) {
        current_ = base;  // the leader, as the standby knows it
        continue;
      }
      return r;
    } else if (r->status == 503) {
      // A standby with no leader yet, or a head whose store failed: nothing was done.
      retry = true;
    } else {
      return r;
    }
    if (!retry || Clock::now() >= deadline) return r;
    move_on();
  }
}

}  // namespace corral::net
