#include "core/boxed.h"

#include <utility>

#include <gtest/gtest.h>

#include <string>
#include <variant>

namespace corral {
namespace {

struct Large {
  std::string name;
  char bytes[1024] = {};
  bool operator==(const Large&) const = default;
};

TEST(Boxed, ACopyIsAValueOfItsOwn) {
  Boxed<Large> a(Large{"a"});
  Boxed<Large> b = a;
  b->name = "b";
  EXPECT_EQ(a->name, "a");
  EXPECT_EQ(b->name, "b");
  a = b;
  b->name = "c";
  EXPECT_EQ(a->name, "b");
  EXPECT_FALSE(a == b);
  b->name = "b";
  EXPECT_TRUE(a == b);
}

TEST(Boxed, MovingTakesTheValueAndTheMovedFromBoxTakesAnother) {
  Boxed<Large> a(Large{"a"});
  Boxed<Large> b(std::move(a));
  EXPECT_EQ(b->name, "a");
  a = Boxed<Large>(Large{"again"});
  EXPECT_EQ(a->name, "again");
}

TEST(Boxed, AVariantOfABoxIsAsSmallAsAPointer) {
  using Inline = std::variant<int, Large>;
  using Held = std::variant<int, Boxed<Large>>;
  EXPECT_GT(sizeof(Inline), 1024u);
  EXPECT_LE(sizeof(Held), 2 * sizeof(void*));
}

}  // namespace
}  // namespace corral
