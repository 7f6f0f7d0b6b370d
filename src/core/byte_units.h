// Byte counts as people read them: powers of 1024, one decimal above bytes.
#pragma once

#include <cstdint>
#include <string>

namespace corral {

// "512 B", "1.5 KiB", "2.0 GiB".
std::string FormatBytes(int64_t bytes);

}  // namespace corral
