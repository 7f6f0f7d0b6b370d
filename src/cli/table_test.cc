#include "cli/table.h"

#include <gtest/gtest.h>

namespace corral::cli {
namespace {

TEST(TableTest, AlignsColumnsAndTrimsTrailingSpace) {
  Table t({"ID", "NAME", "STATE"});
  t.AddRow({"7", "train-resnet", "running"});
  t.AddRow({"12", "x", ""});
  EXPECT_EQ(t.Render(),
            "ID  NAME          STATE\n"
            "7   train-resnet  running\n"
            "12  x\n");
}

TEST(TableTest, HeaderOnly) {
  Table t({"A", "BB"});
  EXPECT_EQ(t.Render(), "A  BB\n");
}

TEST(FormatTest, Age) {
  EXPECT_EQ(FormatAge(-5), "0s");
  EXPECT_EQ(FormatAge(0), "0s");
  EXPECT_EQ(FormatAge(45 * kSecond + 999), "45s");
  EXPECT_EQ(FormatAge(2 * kMinute + 13 * kSecond), "2m13s");
  EXPECT_EQ(FormatAge(kHour + 2 * kMinute + 59 * kSecond), "1h02m");
  EXPECT_EQ(FormatAge(3 * 24 * kHour + 4 * kHour + 5 * kMinute), "3d04h");
}

TEST(FormatTest, MemoryCpusLabelsCommand) {
  EXPECT_EQ(FormatMemoryMb(0), "0");
  EXPECT_EQ(FormatMemoryMb(512), "512M");
  EXPECT_EQ(FormatMemoryMb(16384), "16G");
  EXPECT_EQ(FormatMemoryMb(1536), "1.5G");
  EXPECT_EQ(FormatMemoryMb(2 * 1024 * 1024), "2T");
  EXPECT_EQ(FormatCpus(1000), "1");
  EXPECT_EQ(FormatCpus(500), "0.5");
  EXPECT_EQ(FormatCpus(2250), "2.25");
  EXPECT_EQ(FormatLabels({}), "-");
  EXPECT_EQ(FormatLabels({{"zone", "a"}, {"rack", "r1"}}), "rack=r1,zone=a");
  EXPECT_EQ(FormatCommand({"python", "train.py", "--msg", "hi there", "it's"}),
            "python train.py --msg 'hi there' 'it'\\''s'");
}

TEST(FormatTest, TimestampUtc) {
  EXPECT_EQ(FormatTimestamp(0, true), "-");
  EXPECT_EQ(FormatTimestamp(1763791234000, true), "2025-11-22 06:00:34");
}

}  // namespace
}  // namespace corral::cli
