// HttpTransport: ApiTransport over net::HeadClient: one or several heads (CORRAL_ADDR may be a
// comma-separated list), following the leader. Part of corral_cli_http, which links
// corral_net. Used from one thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "cli/transport.h"

namespace corral::net {
class HeadClient;
}

namespace corral::cli {

class HttpTransport final : public ApiTransport {
 public:
  // `addresses`: "http://h:7070" or "http://a:7070,http://b:7070". A bad list is reported
  // by every Call.
  HttpTransport(const std::string& addresses, const std::string& token,
                std::chrono::milliseconds timeout = std::chrono::seconds(30));
  ~HttpTransport() override;
  Result<ApiReply> Call(const std::string& method, const std::string& path_and_query,
                        const std::string& body) override;

 private:
  Status list_status_;
  std::unique_ptr<net::HeadClient> client_;
  std::chrono::milliseconds timeout_;
};

// Whether sending this call twice does no more than sending it once, so that it may be
// retried at another head after a lost answer: GET, PUT, DELETE, cancels and drains, and
// submissions carrying a request id.
bool IsIdempotentCall(const std::string& method, const std::string& path,
                      const std::string& body);

}  // namespace corral::cli
