// HttpTransport: ApiTransport over net::HttpClient (blocking, one keep-alive connection).
// Part of corral_cli_http, which links corral_net. Used from one thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "cli/transport.h"

namespace corral::net {
class HttpClient;
}

namespace corral::cli {

class HttpTransport final : public ApiTransport {
 public:
  HttpTransport(const std::string& base_url, const std::string& token,
                std::chrono::milliseconds timeout = std::chrono::seconds(30));
  ~HttpTransport() override;
  Result<ApiReply> Call(const std::string& method, const std::string& path_and_query,
                        const std::string& body) override;

 private:
  std::unique_ptr<net::HttpClient> client_;
  std::chrono::milliseconds timeout_;
};

}  // namespace corral::cli
