#include "cli/http_transport.h"

#include <cctype>

#include "net/http_client.h"

namespace corral::cli {

HttpTransport::HttpTransport(const std::string& base_url, const std::string& token,
                             std::chrono::milliseconds timeout)
    : client_(std::make_unique<net::HttpClient>(base_url, token)), timeout_(timeout) {}

HttpTransport::~HttpTransport() = default;

Result<ApiReply> HttpTransport::Call(const std::string& method, const std::string& path_and_query,
                                     const std::string& body) {
  auto r = client_->Request(method, path_and_query, body, timeout_);
  if (!r.ok()) return r.status();
  ApiReply reply;
  reply.status = r->status;
  reply.content_type = r->content_type;
  reply.body = std::move(r->body);
  for (auto& [k, v] : r->headers) {
    std::string lower = k;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    reply.headers[lower] = v;
  }
  return reply;
}

}  // namespace corral::cli
