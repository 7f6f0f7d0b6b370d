#include "cli/http_transport.h"

#include <cctype>

#include "net/head_client.h"

namespace corral::cli {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

bool IsIdempotentCall(const std::string& method, const std::string& path, const std::string& body) {
  if (method != "POST") return true;
  std::string p = path.substr(0, path.find('?'));
  if (EndsWith(p, "/cancel") || EndsWith(p, "/drain") || EndsWith(p, "/undrain")) return true;
  return p == "/v1/jobs" && body.find("\"request_id\"") != std::string::npos;
}

HttpTransport::HttpTransport(const std::string& addresses, const std::string& token,
                             std::chrono::milliseconds timeout)
    : timeout_(timeout) {
  auto list = net::ParseHeadList(addresses);
  if (list.ok()) {
    net::HeadClientOptions options;
    options.retry_lone_head_refusal = false;  // a person waits: say at once that it is down
    client_ = std::make_unique<net::HeadClient>(*list, token, options);
  } else {
    list_status_ = list.status();
  }
}

HttpTransport::~HttpTransport() = default;

Result<ApiReply> HttpTransport::Call(const std::string& method, const std::string& path_and_query,
                                     const std::string& body) {
  if (!client_) return list_status_;
  auto r = client_->Request(method, path_and_query, body, timeout_,
                            IsIdempotentCall(method, path_and_query, body));
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
