// The main of every GoogleTest binary (corral_test). Under CI=true a skipped test is a failure:
// the suites that need root or a third-party tool skip only where a developer lacks them, and a
// CI machine that lacks them must not pass quietly.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string_view>

namespace {

class SkipIsFailure : public ::testing::EmptyTestEventListener {
  // Appended after the default printer, so called before it at a test's end: the printer then
  // reports the test failed, not skipped (and ctest does not count it as "Not Run").
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Skipped()) {
      ADD_FAILURE() << info.test_suite_name() << "." << info.name()
                    << " skipped, and CI=true: a skip is a failure here (install what it needs;"
                       " scripts/setup-tests.sh)";
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const char* ci = std::getenv("CI");
  if (ci != nullptr && std::string_view(ci) == "true") {
    ::testing::UnitTest::GetInstance()->listeners().Append(new SkipIsFailure);
  }
  return RUN_ALL_TESTS();
}
