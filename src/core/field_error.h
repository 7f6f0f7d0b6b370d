// What the parsers of admin objects (job specs, QoS classes, reservations) say about a field
// they refuse, and the names they accept.
#pragma once

#include <string>

#include "core/codec.h"
#include "core/status.h"

namespace corral {

// InvalidArgument "field 'F': got <the value as JSON>, want <want>" (invalid UTF-8 replaced).
Status FieldError(const std::string& field, const Json& got, const std::string& want);

// 1-64 of letters, digits, '-', '_' and '.'.
bool IsGoodName(const std::string& s);

}  // namespace corral
