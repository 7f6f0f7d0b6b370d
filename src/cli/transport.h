// The CLI's narrow view of the head's HTTP API: one call, one reply. The real implementation
// (HttpTransport, http_transport.h) is a thin adapter over net::HttpClient; tests use a fake.
// Owned by whoever runs a command; used from one thread.
#pragma once

#include <map>
#include <string>

#include "core/status.h"

namespace corral::cli {

struct ApiReply {
  int status = 0;
  std::string content_type;
  std::string body;
  std::map<std::string, std::string> headers;  // lower-case names

  // Header value by lower-case name, or "" when absent.
  std::string Header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

class ApiTransport {
 public:
  virtual ~ApiTransport() = default;
  // A non-ok Result means the head could not be reached (connection refused, timeout, ...);
  // an HTTP error status is an ok Result with status >= 400.
  virtual Result<ApiReply> Call(const std::string& method, const std::string& path_and_query,
                                const std::string& body) = 0;
};

}  // namespace corral::cli
