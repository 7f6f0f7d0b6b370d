// corral qos against a fake transport: the table, what set and delete send, bad flags.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/cli_test_harness.h"

namespace corral::cli {
namespace {

using namespace corral::cli::test;  // NOLINT: the shared harness
using ::testing::HasSubstr;

TEST(QosTest, TableSetAndDelete) {
  Harness h;
  Json classes = {{{"name", "high"},
                   {"min_priority", 0},
                   {"max_priority", 100},
                   {"preempt", true},
                   {"users", {"ana", "bo"}},
                   {"queues", Json::array()}},
                  {{"name", "batch"},
                   {"min_priority", -10},
                   {"max_priority", 5},
                   {"preempt", false},
                   {"users", Json::array()},
                   {"queues", {"org/team"}}}};
  h.fake->handler = [&](const FakeTransport::Sent& s) {
    if (s.method == "PUT") {
      Json q = Json::parse(s.body);
      q["name"] = "batch";
      q["min_priority"] = q.value("min_priority", -1000000);
      q["max_priority"] = q.value("max_priority", 0);
      q["preempt"] = q.value("preempt", true);
      return Result<ApiReply>(JsonReply(200, {{"qos", q}}));
    }
    if (s.method == "DELETE") return Result<ApiReply>(JsonReply(200, {{"qos", classes[1]}}));
    return Result<ApiReply>(JsonReply(200, {{"qos", classes}}));
  };
  ASSERT_EQ(h.Run("qos", {}), 0) << h.err.str();
  EXPECT_EQ(h.out.str(),
            "NAME   PRIORITY  PREEMPT  USERS   QUEUES\n"
            "high   0..100    yes      ana,bo  -\n"
            "batch  -10..5    no       -       org/team\n");
  h.fake->sent.clear();
  ASSERT_EQ(h.Run("qos", {"set", "batch", "--max-priority", "5", "--no-preempt", "--queue",
                          "org/team", "--user", "cy", "--user", "di"}),
            0)
      << h.err.str();
  ASSERT_EQ(h.fake->sent.size(), 1u);
  EXPECT_EQ(h.fake->sent[0].method, "PUT");
  EXPECT_EQ(h.fake->sent[0].path, "/v1/qos/batch");
  EXPECT_EQ(Json::parse(h.fake->sent[0].body), (Json{{"max_priority", 5},
                                                     {"preempt", false},
                                                     {"queues", {"org/team"}},
                                                     {"users", {"cy", "di"}}}));
  h.fake->sent.clear();
  ASSERT_EQ(h.Run("qos", {"delete", "batch"}), 0) << h.err.str();
  EXPECT_EQ(h.fake->sent[0].method, "DELETE");
  EXPECT_EQ(h.fake->sent[0].path, "/v1/qos/batch");

  Harness bad;
  EXPECT_EQ(bad.Run("qos", {"set", "x", "--max-priority", "lots"}), 2);
  EXPECT_THAT(bad.err.str(), HasSubstr("--max-priority"));
  EXPECT_EQ(bad.Run("qos", {"set", "x", "--min-priority", "-2000000"}), 2);
  EXPECT_THAT(bad.err.str(), HasSubstr("--min-priority"));
  EXPECT_EQ(bad.Run("qos", {"frob"}), 2);
  EXPECT_TRUE(bad.fake->sent.empty()) << "nothing was sent";
}

// An answer the CLI cannot read (a user that is not a name) is an error naming the field,
// not an exception out of the table code.
TEST(QosTest, AnAnswerItCannotReadIsAnError) {
  Harness h;
  h.fake->handler = [&](const FakeTransport::Sent&) {
    return Result<ApiReply>(JsonReply(200, {{"qos", {{{"name", "x"}, {"users", {7}}}}}}));
  };
  EXPECT_EQ(h.Run("qos", {}), 1);
  EXPECT_THAT(h.err.str(), HasSubstr("the head's answer"));
}

}  // namespace
}  // namespace corral::cli
