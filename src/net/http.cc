#include "net/http.h"

#include <cctype>
#include <nlohmann/json.hpp>
#include <string_view>

namespace corral::net {

std::string HttpRequest::Header(const std::string& lower_name) const {
  const auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

std::string HttpRequest::BearerToken() const {
  const auto it = headers.find("authorization");
  if (it == headers.end()) return "";
  std::string_view v = it->second;
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  };
  v = trim(v);
  constexpr std::string_view kScheme = "bearer";
  if (v.size() <= kScheme.size()) return "";
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(v[i])) != kScheme[i]) return "";
  }
  if (v[kScheme.size()] != ' ' && v[kScheme.size()] != '\t') return "";
  return std::string(trim(v.substr(kScheme.size())));
}

HttpResponse JsonError(int status, std::string code, std::string message) {
  HttpResponse r;
  r.status = status;
  nlohmann::json j;
  j["error"]["code"] = std::move(code);
  j["error"]["message"] = std::move(message);
  // replace: a message echoing user input must not throw on invalid UTF-8.
  r.body = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

}  // namespace corral::net
