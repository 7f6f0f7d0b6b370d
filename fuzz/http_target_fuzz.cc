// A request target as the HTTP server splits it (path, then query; net/http_server.cc's
// ToHttpRequest), and a base URL as the clients parse it. Round trips must hold.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "net/url.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string target(reinterpret_cast<const char*>(data), size);
  const auto q = target.find('?');
  const std::string path =
      corral::net::UrlDecode(std::string_view(target).substr(0, q), /*plus_as_space=*/false);
  (void)path;
  if (q != std::string::npos) {
    auto query = corral::net::ParseQuery(std::string_view(target).substr(q + 1));
    // Encoding what was parsed and parsing it again gives the same map.
    if (corral::net::ParseQuery(corral::net::EncodeQuery(query)) != query) std::abort();
  }
  if (corral::net::UrlDecode(corral::net::UrlEncode(target), false) != target) std::abort();
  if (auto url = corral::net::ParseUrl(target); url.ok()) {
    auto again = corral::net::ParseUrl(url->ToString());
    if (!again.ok() || again->ToString() != url->ToString()) std::abort();
  }
  return 0;
}
