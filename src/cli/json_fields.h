// Fields of the head's JSON answers, read for display: a missing or null field prints as a
// fallback, so that one odd row never fails a whole listing.
#pragma once

#include <cstdint>
#include <string>

#include "core/codec.h"

namespace corral::cli {

// A string as it is, anything else as its JSON text.
inline std::string FieldText(const Json& j, const char* key, const std::string& fallback = "-") {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return it->is_string() ? it->get<std::string>() : it->dump();
}

inline int64_t FieldInt(const Json& j, const char* key, int64_t fallback = 0) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<int64_t>() : fallback;
}

}  // namespace corral::cli
