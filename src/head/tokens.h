// Bearer tokens: random, hex, kept in files of mode 0600 under the state dir.
#pragma once

#include <string>

#include "core/status.h"

namespace corral::head {

std::string RandomToken();
// Reads the token at `path`, or creates it (mode 0600) on first start.
Result<std::string> LoadOrCreateToken(const std::string& path);
// Compares in time independent of where the strings differ.
bool TokensEqual(const std::string& a, const std::string& b);

}  // namespace corral::head
