#include "net/url.h"

#include <cctype>
#include <charconv>

namespace corral::net {
namespace {

bool IsUnreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.' || c == '~';
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Status BadUrl(const std::string& url, const std::string& why) {
  return InvalidArgument("invalid URL '" + url + "': " + why +
                         " (expected http://host[:port][/prefix])");
}

}  // namespace

std::string ParsedUrl::HostPort() const {
  if (scheme == "unix") return host;
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return h + ":" + std::to_string(port);
}

std::string ParsedUrl::ToString() const {
  if (scheme == "unix") return "unix://" + socket_path;
  return scheme + "://" + HostPort() + path;
}

Result<ParsedUrl> ParseClientUrl(const std::string& url) {
  constexpr std::string_view kUnix = "unix://";
  if (url.rfind(kUnix, 0) != 0) return ParseUrl(url);
  ParsedUrl out;
  out.scheme = "unix";
  out.host = "localhost";
  out.socket_path = url.substr(kUnix.size());
  if (out.socket_path.empty() || out.socket_path.front() != '/') {
    return BadUrl(url, "want unix:///PATH, an absolute path to the head's socket");
  }
  return out;
}

Result<ParsedUrl> ParseUrl(const std::string& url) {
  ParsedUrl out;
  const auto sep = url.find("://");
  if (sep == std::string::npos) return BadUrl(url, "missing scheme");
  out.scheme = url.substr(0, sep);
  for (auto& c : out.scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (out.scheme != "http" && out.scheme != "https") {
    return BadUrl(url, "scheme '" + out.scheme + "' is not http or https");
  }
  std::string_view rest(url);
  rest.remove_prefix(sep + 3);
  if (rest.find_first_of("?#") != std::string_view::npos) {
    return BadUrl(url, "a base URL takes no query or fragment");
  }
  const auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash);
  if (authority.find('@') != std::string_view::npos)
    return BadUrl(url, "user info is not supported");
  if (authority.empty()) return BadUrl(url, "missing host");

  std::string_view port_text;
  if (authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return BadUrl(url, "unterminated IPv6 address");
    out.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return BadUrl(url, "unexpected text after IPv6 address");
      port_text = after.substr(1);
      if (port_text.empty()) return BadUrl(url, "empty port");
    }
  } else {
    const auto colon = authority.rfind(':');
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) return BadUrl(url, "empty port");
      authority = authority.substr(0, colon);
    }
    out.host = std::string(authority);
  }
  if (out.host.empty()) return BadUrl(url, "missing host");
  // A name or IPv4 address, or inside brackets an IPv6 one: anything else would not survive
  // HostPort()/ToString() (found by fuzz/http_target_fuzz.cc: "a::b" unbracketed, "x=y&z").
  const bool bracketed = authority.front() == '[';
  for (const char c : out.host) {
    const bool ok =
        bracketed
            ? (std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.')
            : (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_');
    if (!ok) {
      return BadUrl(url, std::string("invalid character '") + c + "' in host '" + out.host + "'");
    }
  }

  if (port_text.empty()) {
    out.port = out.scheme == "https" ? 443 : 80;
  } else {
    int port = 0;
    const auto [p, ec] =
        std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc{} || p != port_text.data() + port_text.size() || port < 1 || port > 65535) {
      return BadUrl(url, "port '" + std::string(port_text) + "' is not in 1..65535");
    }
    out.port = port;
  }
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  out.path = std::string(path);
  return out;
}

std::string UrlEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (IsUnreserved(c)) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string UrlDecode(std::string_view s, bool plus_as_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '%' && i + 2 < s.size()) {
      const int hi = HexValue(s[i + 1]);
      const int lo = HexValue(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(plus_as_space && c == '+' ? ' ' : c);
  }
  return out;
}

std::string EncodeQuery(const std::map<std::string, std::string>& query) {
  std::string out;
  for (const auto& [k, v] : query) {
    if (!out.empty()) out.push_back('&');
    out += UrlEncode(k);
    out.push_back('=');
    out += UrlEncode(v);
  }
  return out;
}

std::map<std::string, std::string> ParseQuery(std::string_view query) {
  std::map<std::string, std::string> out;
  while (!query.empty()) {
    const auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (pair.empty()) continue;
    const auto eq = pair.find('=');
    std::string key = UrlDecode(pair.substr(0, eq), true);
    std::string value = eq == std::string_view::npos ? "" : UrlDecode(pair.substr(eq + 1), true);
    out[std::move(key)] = std::move(value);
  }
  return out;
}

std::string PathWithQuery(std::string_view path, const std::map<std::string, std::string>& query) {
  std::string out(path);
  if (!query.empty()) out += "?" + EncodeQuery(query);
  return out;
}

std::vector<std::string> SplitPath(const std::string& path) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) parts.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return parts;
}

}  // namespace corral::net
