#include "core/array_deps.h"

#include <gtest/gtest.h>

namespace corral {
namespace {

TEST(Array, SlurmForms) {
  struct Case {
    std::string text;
    std::vector<int32_t> indices;
    int32_t max_running;
  };
  for (const Case& c : std::vector<Case>{
           {"0-3", {0, 1, 2, 3}, 0},
           {"0-9:3", {0, 3, 6, 9}, 0},
           {"1,5,9", {1, 5, 9}, 0},
           {"0-15%4", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, 4},
           {"7", {7}, 0},
           {"1-3,2-4:2%2", {1, 2, 3, 4}, 2},
       }) {
    auto a = ParseArray(c.text);
    ASSERT_TRUE(a.ok()) << c.text << ": " << a.status().ToString();
    EXPECT_EQ(a->indices, c.indices) << c.text;
    EXPECT_EQ(a->max_running, c.max_running) << c.text;
  }
  EXPECT_EQ(ParseArray("0-999").value().indices.size(), 1000u);
}

TEST(Array, BadFormsNameTheFieldAndTheReason) {
  for (const char* bad : {"", "a-b", "5-1", "0-9:0", "0-9%0", "-1", "0-99999999", "1,,2"}) {
    auto a = ParseArray(bad);
    ASSERT_FALSE(a.ok()) << bad;
    EXPECT_NE(a.status().message().find("field 'array'"), std::string::npos)
        << a.status().message();
  }
  EXPECT_FALSE(ParseArray("0-200000").ok()) << "more than 100,000 elements";
}

TEST(Dependencies, SlurmForms) {
  auto d = ParseDependencies("afterok:12:13,afterany:14,singleton");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->size(), 3u);
  EXPECT_EQ((*d)[0], (Dependency{DependencyType::kAfterOk, {12, 13}}));
  EXPECT_EQ((*d)[1].type, DependencyType::kAfterAny);
  EXPECT_EQ((*d)[2].type, DependencyType::kSingleton);
  EXPECT_EQ(FormatDependencies(*d), "afterok:12:13,afterany:14,singleton");
  for (const char* bad : {"after:1", "afterok", "afterok:x", "singleton:3", "afterok:0"}) {
    auto r = ParseDependencies(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("field 'dependency'"), std::string::npos);
  }
}

}  // namespace
}  // namespace corral
