// Secrets without the head: where they come from (injected, so tests control it) and how two
// are compared. Agents, the head and the test fakes share these.
#pragma once

#include <string>

namespace corral {

class RandomSource {
 public:
  virtual ~RandomSource() = default;
  virtual std::string Secret() = 0;  // 256 bits, hex
};

// Compares in time independent of where the strings differ (a bearer secret against the one
// expected), so response times tell an attacker nothing about a guess's prefix.
bool TokensEqual(const std::string& a, const std::string& b);

}  // namespace corral
