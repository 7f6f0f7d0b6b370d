// Reading an enum back from the name its Name function gives it, for the enums whose names
// travel in JSON and on the command line.
#pragma once

#include <string>

namespace corral {

// Sets `*out` to the value of `values` whose `name` is `text`; false (and `*out` untouched) if
// none is.
template <typename E, size_t N>
bool ParseByName(const std::string& text, const E (&values)[N], const char* (*name)(E), E* out) {
  for (E v : values) {
    if (text == name(v)) {
      *out = v;
      return true;
    }
  }
  return false;
}

}  // namespace corral
