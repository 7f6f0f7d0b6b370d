#include "web/web_handler.h"

#include "web/web_assets.h"

namespace corral::web {
namespace {

// The page talks only to its own origin and runs only its own files: no inline script or
// style, so injected markup could do nothing even if some slipped through.
constexpr char kContentSecurityPolicy[] =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const Asset* Find(const std::string& path) {
  for (const Asset& a : Assets()) {
    if (a.path == path) return &a;
  }
  return nullptr;
}

// Whether an If-None-Match header (a list of quoted tags, or "*") matches `etag`.
bool Matches(const std::string& if_none_match, std::string_view etag) {
  if (if_none_match == "*") return true;
  size_t i = 0;
  while (i < if_none_match.size()) {
    size_t j = if_none_match.find(',', i);
    if (j == std::string::npos) j = if_none_match.size();
    std::string_view tag(if_none_match.data() + i, j - i);
    while (!tag.empty() && tag.front() == ' ') tag.remove_prefix(1);
    while (!tag.empty() && tag.back() == ' ') tag.remove_suffix(1);
    if (tag.substr(0, 2) == "W/") tag.remove_prefix(2);
    if (tag == etag) return true;
    i = j + 1;
  }
  return false;
}

}  // namespace

bool IsWebPath(const std::string& path) {
  std::string_view p(path);
  std::string_view prefix(kUiPrefix);
  return p == "/" || p == prefix.substr(0, prefix.size() - 1) ||
         p.substr(0, prefix.size()) == prefix;
}

net::HttpResponse ServeWeb(const net::HttpRequest& req) {
  if (req.method != "GET" && req.method != "HEAD") {
    net::HttpResponse r = net::JsonError(
        405, "method_not_allowed", "the dashboard's files answer GET and HEAD, not " + req.method);
    r.headers["Allow"] = "GET, HEAD";
    return r;
  }
  const Asset* a = Find(req.path);
  if (!a) return net::JsonError(404, "not_found", "no such file: " + req.path);
  net::HttpResponse r;
  r.headers["ETag"] = std::string(a->etag);
  // Names are not fingerprinted, so browsers revalidate every time; an unchanged file costs
  // a 304 without a body.
  r.headers["Cache-Control"] = "no-cache";
  r.headers["X-Content-Type-Options"] = "nosniff";
  r.headers["Referrer-Policy"] = "no-referrer";
  r.headers["Content-Security-Policy"] = kContentSecurityPolicy;
  if (Matches(req.Header("if-none-match"), a->etag)) {
    r.status = 304;
    r.content_type.clear();
    return r;
  }
  r.content_type = std::string(a->content_type);
  r.body = std::string(a->body);
  return r;
}

}  // namespace corral::web
