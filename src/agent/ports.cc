#include "agent/ports.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace corral::agent {

std::vector<int32_t> ParseListeningPorts(const std::string& text, int32_t lo, int32_t hi) {
  // "  sl  local_address rem_address   st ...": local_address is HEXIP:HEXPORT, st 0A is LISTEN.
  std::vector<int32_t> out;
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string slot, local, remote, state;
    if (!(f >> slot >> local >> remote >> state) || state != "0A") continue;
    auto colon = local.rfind(':');
    if (colon == std::string::npos) continue;
    int32_t port = 0;
    try {
      port = static_cast<int32_t>(std::stol(local.substr(colon + 1), nullptr, 16));
    } catch (...) {
      continue;
    }
    if (port >= lo && port <= hi) out.push_back(port);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<int32_t> ListeningPorts(int32_t lo, int32_t hi) {
  std::vector<int32_t> out;
  for (const char* path : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    for (int32_t p : ParseListeningPorts(text.str(), lo, hi)) out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace corral::agent
