#include "net/http_server_message.h"

#include <cctype>

#include "net/strings_internal.h"
#include "net/url.h"

namespace corral::net {
namespace {

namespace http = boost::beast::http;

bool HasCrLf(std::string_view s) { return s.find_first_of("\r\n") != std::string_view::npos; }

}  // namespace

HttpRequest ToHttpRequest(http::request<http::string_body>&& r, const std::string& remote) {
  HttpRequest out;
  out.method = std::string(SV(r.method_string()));
  out.target = std::string(SV(r.target()));
  const auto q = out.target.find('?');
  out.path = UrlDecode(std::string_view(out.target).substr(0, q), /*plus_as_space=*/false);
  if (q != std::string::npos) out.query = ParseQuery(std::string_view(out.target).substr(q + 1));
  for (const auto& field : r) {
    std::string name = AsciiLower(SV(field.name_string()));
    auto [it, inserted] = out.headers.try_emplace(std::move(name), std::string(SV(field.value())));
    if (!inserted) {
      it->second += ", ";
      it->second += SV(field.value());
    }
  }
  out.body = std::move(r.body());
  out.remote = remote;
  return out;
}

void ToBeastResponse(HttpResponse&& r, unsigned version, bool keep_alive, bool head_request,
                     http::response<http::string_body>* res) {
  int status = r.status;
  // 1xx would be taken as an interim answer and leave the client waiting.
  if (status < 200 || status > 999) status = 500;
  res->version(version);
  res->result(static_cast<unsigned>(status));
  res->set(http::field::server, "corral");
  for (const auto& [name, value] : r.headers) {
    const std::string lname = AsciiLower(name);
    if (lname == "content-length" || lname == "connection" || lname == "transfer-encoding" ||
        lname.empty() || HasCrLf(name) || HasCrLf(value)) {
      continue;  // ours to set; CR/LF would allow header injection
    }
    res->set(name, value);
  }
  if (!r.content_type.empty() && !HasCrLf(r.content_type)) {
    res->set(http::field::content_type, r.content_type);
  }
  const bool bodyless = status == 204 || status == 304;
  if (!bodyless) res->body() = std::move(r.body);
  res->keep_alive(keep_alive);
  res->prepare_payload();
  if (head_request && !bodyless) {  // HEAD: the length of the body it would get, no body
    const auto length = res->body().size();
    res->body().clear();
    res->content_length(length);
  }
}

}  // namespace corral::net
