// HeadClient: requests to "the head" when there may be several (DESIGN §7, HA): a list of
// base URLs ("http://a:7070,http://b:7070"), of which one leads. It follows the leader:
// a 307 from a standby moves it to the Location's head; a head that cannot be reached, or
// that answers 503 because no head leads yet, moves it to the next address in the list,
// until the failover window is over.
//
// Retrying never duplicates work the caller cannot repeat: a request that may have reached
// a head (sent, then no answer) is retried only when the caller says it is idempotent (a
// GET, a submission carrying a request id, a cancel); one that never left (connection
// refused) or was answered 307/503-no-leader is always retried.
//
// Threading: like HttpClient, calls are serialised on an internal mutex; use one per thread
// that needs requests in parallel.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"
#include "net/http.h"
#include "net/http_client.h"

namespace corral::net {

struct HeadClientOptions {
  // How long a request keeps trying other heads (a failover takes a few seconds).
  std::chrono::milliseconds failover_window{20000};
  std::chrono::milliseconds pause_between_rounds{250};  // after every address failed once
  // With one head in the list, a connection it refuses ends the request at once: no other head
  // could take over, and a person at a CLI should hear so now, not after the window. A daemon
  // that waits for its head to come back (an agent) keeps trying through the window.
  bool retry_lone_head_refusal = true;
  int max_redirects = 8;
};

// Splits "a,b , c" into base URLs; errors name the list when it holds none or a bad one.
Result<std::vector<std::string>> ParseHeadList(const std::string& list);

class HeadClient {
 public:
  HeadClient(std::vector<std::string> base_urls, std::string bearer_token,
             HeadClientOptions options = {});
  ~HeadClient();

  // As HttpClient::Request, against the leading head. `timeout` bounds each attempt;
  // failover_window bounds the whole. An error is the last attempt's.
  Result<HttpResponse> Request(const std::string& method, const std::string& path_and_query,
                               const std::string& body, std::chrono::milliseconds timeout,
                               bool idempotent,
                               const std::map<std::string, std::string>& headers = {});

  // The base URL the next request goes to first (the last one that answered).
  std::string current() const;

 private:
  HttpClient& ClientFor(const std::string& base);  // REQUIRES: mu_ held

  const std::vector<std::string> bases_;
  const std::string bearer_token_;
  const HeadClientOptions options_;
  mutable std::mutex mu_;
  std::string current_;                 // GUARDED_BY(mu_)
  size_t next_index_ = 0;               // GUARDED_BY(mu_): the list's next to try
  std::unique_ptr<HttpClient> client_;  // GUARDED_BY(mu_): to current_
};

// The base URL ("scheme://host:port") of a redirect's Location, or "" when it has none.
std::string BaseOfLocation(const std::string& location);

}  // namespace corral::net
