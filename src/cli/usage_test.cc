// `corral usage` against a fake transport: what it asks the head, how it prints the answer,
// and how it refuses bad flags.
#include "core/usage.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "cli/cli_test_harness.h"

namespace corral::cli {
namespace {

using ::testing::HasSubstr;

// The shared harness at time 0, running `corral usage`.
struct UsageHarness : test::Harness {
  UsageHarness() {
    ctx.now = [] { return TimeMs{0}; };
  }
  int Run(const std::vector<std::string>& args) { return test::Harness::Run("usage", args); }
};

// A report as the head builds it, from figures a test can check against.
Json Report() {
  UsageReport r;
  r.by = UsageBy::kQueue;
  r.rows = {UsageRow{"train", 9000, 4, 2, 120, 1}, UsageRow{"a,b", 1800, 1, 1, 30, 0}};
  r.total = UsageRow{"total", 10800, 5, 3, 150, 1};
  return ToJson(r);
}

TEST(CliUsage, AsksForThePeriodInSecondsAndGrouping) {
  UsageHarness h;
  h.fake->AnswerAll(Report());
  ASSERT_EQ(h.Run({"--by", "queue", "--since", "2h"}), kExitOk) << h.err.str();
  ASSERT_EQ(h.fake->paths().size(), 1u);
  EXPECT_EQ(h.fake->paths()[0], "GET /v1/usage?by=queue&since=7200");
  UsageHarness d;
  d.fake->AnswerAll(Report());
  ASSERT_EQ(d.Run({}), kExitOk);
  EXPECT_EQ(d.fake->paths()[0], "GET /v1/usage?by=user&since=604800");  // a week, by user
}

TEST(CliUsage, TableShowsHoursAverageWaitAndTotal) {
  UsageHarness h;
  h.fake->AnswerAll(Report());
  ASSERT_EQ(h.Run({"--by", "queue"}), kExitOk);
  std::string out = h.out.str();
  EXPECT_THAT(out, HasSubstr("QUEUE"));
  EXPECT_THAT(out, HasSubstr("GPU-HOURS"));
  // train: 9000 s = 2.50 GPU-hours, 120 s of wait over 2 started jobs = 1m.
  EXPECT_THAT(out, ::testing::ContainsRegex("train +2\\.50 +4 +2 +1m00s +1"));
  EXPECT_THAT(out, ::testing::ContainsRegex("TOTAL +3\\.00 +5 +3 +50s +1"));
}

TEST(CliUsage, CsvHasAHeaderAndQuotesFieldsWithCommas) {
  UsageHarness h;
  h.fake->AnswerAll(Report());
  ASSERT_EQ(h.Run({"--by", "queue", "-o", "csv"}), kExitOk);
  std::string out = h.out.str();
  EXPECT_THAT(out,
              HasSubstr("queue,gpu_hours,gpu_seconds,jobs,started,avg_wait_seconds,"
                        "preemptions,gpu_util,cpu_efficiency,memory_efficiency,idle_gpu_jobs\n"));
  // No samples in the answer: the efficiency columns are empty.
  EXPECT_THAT(out, HasSubstr("train,2.5000,9000.0,4,2,60.0,1,,,,0\n"));
  EXPECT_THAT(out, HasSubstr("\"a,b\",0.5000,1800.0,1,1,30.0,0,,,,0\n"));
  EXPECT_THAT(out, HasSubstr("total,3.0000,10800.0,5,3,50.0,1,,,,0\n"));
}

TEST(CliUsage, JsonIsTheHeadsAnswer) {
  UsageHarness h;
  h.fake->AnswerAll(Report());
  ASSERT_EQ(h.Run({"-o", "json"}), kExitOk);
  EXPECT_EQ(Json::parse(h.out.str()), Report());
}

TEST(CliUsage, BadFlagsNameTheFlagAndTheValueWithoutCallingTheHead) {
  struct Case {
    std::vector<std::string> args;
    std::string want;
  };
  for (const Case& c : std::vector<Case>{
           {{"--since", "banana"}, "--since"},
           {{"--since", "0s"}, "at least 1s"},
           {{"--by", "color"}, "flag --by: got \"color\", want user or queue"},
           {{"-o", "xml"}, "flag -o: got \"xml\""},
       }) {
    UsageHarness h;
    EXPECT_EQ(h.Run(c.args), kExitUsage) << c.args[1];
    EXPECT_THAT(h.err.str(), HasSubstr(c.want));
    EXPECT_THAT(h.err.str(), HasSubstr(c.args[1]));
    EXPECT_TRUE(h.fake->paths().empty());
  }
}

TEST(CliUsage, AnAnswerItCannotReadIsAnError) {
  UsageHarness h;
  h.fake->AnswerAll(Json{{"by", "team"}, {"rows", Json::array()}});
  EXPECT_EQ(h.Run({}), kExitError);
  EXPECT_THAT(h.err.str(), HasSubstr("by: got \"team\""));
}

}  // namespace
}  // namespace corral::cli
