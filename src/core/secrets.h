// Secrets without the head: where they come from (injected, so tests control it) and how two
// are compared. Agents, the head and the test fakes share these.
#pragma once

#include <cstddef>
#include <string>

namespace corral {

class RandomSource {
 public:
  virtual ~RandomSource() = default;
  virtual std::string Secret() = 0;  // 256 bits, hex
};

// `bytes` from the kernel's random source (getrandom), in hex: session ids, one-time tokens.
std::string RandomHex(size_t bytes);

// Compares in time independent of where the strings differ (a bearer secret against the one
// expected), so response times tell an attacker nothing about a guess's prefix.
bool TokensEqual(const std::string& a, const std::string& b);

}  // namespace corral
