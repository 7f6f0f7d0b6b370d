// What the JSON codecs (codec.cc, codec_agent.cc) share: checked reads of fields, and turning
// a decoder's exception into a Status. Internal to corral_core.
#pragma once

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "core/codec.h"

namespace corral::codec_internal {

// Internal decoders throw nlohmann exceptions; the public *FromJson functions turn them into
// a Status so that nothing throws across the module boundary.

// nlohmann casts a float to an integer unchecked: undefined outside the type's range
// (fuzz_agent_protocol found it). Every integer field, required or optional, scalar or list,
// is read through this: a float must be whole and in range.
template <typename T>
inline T Checked(const Json& v, const char* key) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (v.is_number_float()) {
      const double d = v.get<double>();
      const double end = std::ldexp(1.0, std::numeric_limits<T>::digits);  // exact: 2^bits
      const double lo = std::is_signed_v<T> ? -end : 0.0;
      if (!(d >= lo && d < end && d == std::trunc(d))) {
        throw std::out_of_range(std::string("field '") + key + "': " + v.dump() +
                                " is not an integer in range");
      }
    }
  } else if constexpr (std::is_same_v<T, std::vector<int32_t>>) {
    if (!v.is_array()) throw std::invalid_argument(std::string("field '") + key + "': not a list");
    T out;
    out.reserve(v.size());
    for (const Json& x : v) out.push_back(Checked<int32_t>(x, key));
    return out;
  }
  return v.get<T>();
}

// A required field: missing is an error, like j.at(key).
template <typename T>
T Req(const Json& j, const char* key) {
  return Checked<T>(j.at(key), key);
}

template <typename T>
T Get(const Json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return Checked<T>(*it, key);
}

template <typename T, typename F>
Result<T> Decode(const Json& j, const char* what, F f) {
  try {
    if (!j.is_object()) return InvalidArgument(std::string(what) + ": expected a JSON object");
    return f(j);
  } catch (const std::exception& e) {
    return InvalidArgument(std::string(what) + ": " + e.what());
  }
}

// Inside a Decode: a nested decoder's error becomes this one's.
template <typename T>
T Must(Result<T> r) {
  if (!r.ok()) throw std::runtime_error(r.status().message());
  return std::move(*r);
}

}  // namespace corral::codec_internal
