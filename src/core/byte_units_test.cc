#include "core/byte_units.h"

#include <gtest/gtest.h>

namespace corral {
namespace {

TEST(FormatBytes, BytesWholeAndLargerUnitsWithOneDecimal) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(int64_t{3} << 30), "3.0 GiB");
  EXPECT_EQ(FormatBytes(int64_t{2048} << 40), "2048.0 TiB");  // no unit past TiB
}

}  // namespace
}  // namespace corral
