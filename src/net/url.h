// URL parsing and percent-encoding for the HTTP transport. Pure functions, any thread.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace corral::net {

// A base URL such as "http://head:8080" or "http://[::1]:8080/prefix".
struct ParsedUrl {
  std::string scheme;  // "http" or "https"
  std::string host;    // without IPv6 brackets
  int port = 0;        // defaulted from the scheme when absent (80 / 443)
  std::string path;    // "" or a prefix starting with '/', no trailing '/'
  // scheme "unix" (ParseClientUrl only): the local socket's path; host is then "localhost".
  std::string socket_path;

  // "host:port" with IPv6 brackets restored: what goes into the Host header.
  std::string HostPort() const;
  // scheme://host:port/path, normalized.
  std::string ToString() const;
};

// Accepts http:// and https:// URLs with an optional port and path prefix; rejects
// query strings, fragments, user info and other schemes with a message naming the URL.
Result<ParsedUrl> ParseUrl(const std::string& url);
// ParseUrl, and also unix:///PATH: a head's local socket (HttpClient connects to PATH and
// sends its requests as to http://localhost).
Result<ParsedUrl> ParseClientUrl(const std::string& url);

// Percent-encodes everything except the RFC 3986 unreserved set (A-Z a-z 0-9 - _ . ~):
// safe for a query key or value and for one path segment.
std::string UrlEncode(std::string_view s);

// Decodes %XX sequences (and '+' as a space when plus_as_space). A malformed escape is
// kept literally rather than rejected: lenient in what we accept.
std::string UrlDecode(std::string_view s, bool plus_as_space);

// "a=1&b=x%20y" <-> {{"a","1"},{"b","x y"}}. Keys are sorted (std::map), so the encoding
// is deterministic. A key without '=' maps to "". On a repeated key the last one wins.
std::string EncodeQuery(const std::map<std::string, std::string>& query);
std::map<std::string, std::string> ParseQuery(std::string_view query);

// path + "?" + EncodeQuery(query), or just path when query is empty.
std::string PathWithQuery(std::string_view path, const std::map<std::string, std::string>& query);

// The non-empty segments of a path: "/v1/jobs/7/" is {"v1", "jobs", "7"}.
std::vector<std::string> SplitPath(const std::string& path);

}  // namespace corral::net
