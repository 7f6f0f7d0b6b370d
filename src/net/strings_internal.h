// String helpers that several of net's files share. Internal to corral_net.
#pragma once

#include <boost/utility/string_view.hpp>
#include <cctype>
#include <string>
#include <string_view>

namespace corral::net {

// Boost 1.74's beast::string_view is boost::string_view, not std::string_view.
inline std::string_view SV(boost::string_view s) { return {s.data(), s.size()}; }

// ASCII lower case: HTTP header names.
inline std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// "[::1]" -> "::1": an IPv6 host as written in a URL or a listen address.
inline std::string StripBrackets(const std::string& s) {
  if (s.size() > 2 && s.front() == '[' && s.back() == ']') return s.substr(1, s.size() - 2);
  return s;
}

}  // namespace corral::net
