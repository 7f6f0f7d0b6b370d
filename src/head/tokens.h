// Bearer secrets: random 256-bit values, kept by the head only as their SHA-256; the files
// of mode 0600 under the state dir hand the admin and join secrets to the operator.
#pragma once

#include <string>
#include <string_view>

#include "core/secrets.h"
#include "core/status.h"

namespace corral::head {

using corral::RandomSource;
using corral::TokensEqual;

class UrandomSource final : public RandomSource {
 public:
  std::string Secret() override;
};

std::string Sha256Hex(std::string_view data);
std::string HmacSha256Hex(std::string_view key, std::string_view data);
std::string HexBytes(const unsigned char* data, size_t n);
// Reads the secret at `path`, or writes `fresh` there (mode 0600) on first start.
Result<std::string> LoadOrCreateToken(const std::string& path, const std::string& fresh);

}  // namespace corral::head
