// corral reservations against a fake transport: the table, what create and delete send, bad
// flags (nothing sent).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/cli_test_harness.h"

namespace corral::cli {
namespace {

using namespace corral::cli::test;  // NOLINT: the shared harness
using ::testing::HasSubstr;

TEST(ReservationsTest, TableCreateAndDelete) {
  Harness h;
  Json maint = {{"name", "maint"},           {"nodes", {"n1", "n2"}}, {"start_ms", kT0},
                {"end_ms", kT0 + 2 * kHour}, {"maintenance", true},   {"users", Json::array()},
                {"queues", Json::array()}};
  h.fake->handler = [&](const FakeTransport::Sent& s) {
    if (s.method == "POST" || s.method == "DELETE") {
      return Result<ApiReply>(JsonReply(200, {{"reservation", maint}}));
    }
    return Result<ApiReply>(JsonReply(200, {{"reservations", {maint}}}));
  };
  ASSERT_EQ(h.Run("reservations", {}), 0) << h.err.str();
  EXPECT_EQ(h.out.str(),
            "NAME   NODES  START                 END                   FLAGS  USERS  QUEUES\n"
            "maint  n1,n2  2025-11-22T06:00:34Z  2025-11-22T08:00:34Z  MAINT  any    any\n");
  h.fake->sent.clear();
  ASSERT_EQ(h.Run("reservations", {"create", "maint", "--nodes", "n1,n2", "--start", "now+1h",
                                   "--duration", "2h", "--maintenance"}),
            0)
      << h.err.str();
  ASSERT_EQ(h.fake->sent.size(), 1u);
  EXPECT_EQ(h.fake->sent[0].method, "POST");
  EXPECT_EQ(h.fake->sent[0].path, "/v1/reservations");
  EXPECT_EQ(Json::parse(h.fake->sent[0].body), (Json{{"name", "maint"},
                                                     {"nodes", "n1,n2"},
                                                     {"start_ms", h.now + kHour},
                                                     {"duration", "2h"},
                                                     {"maintenance", true}}));
  h.fake->sent.clear();
  ASSERT_EQ(
      h.Run("reservations", {"create", "train", "--nodes", "n1", "--start", "2026-11-28T06:00",
                             "--end", "2026-11-28T08:00:00Z", "--user", "ana"}),
      0)
      << h.err.str();
  Json sent = Json::parse(h.fake->sent.at(0).body);
  EXPECT_EQ(sent["start_ms"], 1795845600000);
  EXPECT_EQ(sent["end_ms"], 1795845600000 + 2 * kHour);
  EXPECT_EQ(sent["users"], Json({"ana"}));
  h.fake->sent.clear();
  ASSERT_EQ(h.Run("reservations", {"delete", "maint"}), 0) << h.err.str();
  EXPECT_EQ(h.fake->sent[0].method, "DELETE");
  EXPECT_EQ(h.fake->sent[0].path, "/v1/reservations/maint");

  Harness bad;
  EXPECT_EQ(bad.Run("reservations",
                    {"create", "x", "--nodes", "n1", "--start", "soon", "--duration", "1h"}),
            2);
  EXPECT_THAT(bad.err.str(), HasSubstr("--start"));
  EXPECT_EQ(bad.Run("reservations", {"create", "x", "--nodes", "n1", "--start", "now"}), 2);
  EXPECT_THAT(bad.err.str(), HasSubstr("--duration"));
  EXPECT_EQ(bad.Run("reservations", {"frob"}), 2);
  EXPECT_TRUE(bad.fake->sent.empty()) << "nothing was sent";
}

}  // namespace
}  // namespace corral::cli
