// `corral events` and `corral jobs --watch` against a fake head.
#include <gtest/gtest.h>

#include <sstream>

#include "cli/cli_test_harness.h"

namespace corral::cli {
namespace {

ApiReply Reply(const Json& body) { return test::JsonReply(200, body); }

// The shared harness on a clock that stands still.
struct StillClockHarness : test::Harness {
  StillClockHarness() {
    ctx.now = [] { return TimeMs{1'700'000'000'000}; };
    ctx.sleep = [](DurationMs) {};
  }
};

Json Submitted(uint64_t rev) {
  return {{"rev", rev},
          {"at", 1'700'000'000'000},
          {"type", "job_submitted"},
          {"kind", "job"},
          {"key", rev},
          {"job", {{"owner", "ana"}, {"spec", {{"queue", "org/team"}}}}}};
}

TEST(CliEvents, PrintsEachChangeOnceAndResumesFromTheLast) {
  StillClockHarness h;
  h.fake->OnPath([](const std::string& path) -> Result<ApiReply> {
    if (path.find("since=0&") != std::string::npos) {
      return Reply({{"events", {Submitted(1), Submitted(2)}}, {"revision", 3}});
    }
    if (path.find("since=2&") != std::string::npos) {
      return Reply({{"events", {Submitted(3)}}, {"revision", 3}});
    }
    return Reply({{"events", Json::array()}, {"revision", 3}});
  });
  ASSERT_EQ(RunEvents({}, h.ctx), 0) << h.err.str();
  std::string out = h.out.str();
  EXPECT_NE(out.find("1  "), std::string::npos);
  EXPECT_NE(out.find("job_submitted  job 3  by ana to org/team"), std::string::npos) << out;
  ASSERT_EQ(h.fake->paths().size(), 3u);
  EXPECT_EQ(h.fake->paths()[1], "GET /v1/events?since=2&max=1000&wait=0")
      << "resumes after the last seen";
}

TEST(CliEvents, ARetirementSaysHowManyJobsLeftMemory) {
  StillClockHarness h;
  h.fake->OnPath([](const std::string& path) -> Result<ApiReply> {
    if (path.find("since=0&") == std::string::npos) {
      return Reply({{"events", Json::array()}, {"revision", 1}});
    }
    Json e{{"rev", 1},  {"at", 1'700'000'000'000}, {"type", "jobs_retired"}, {"kind", "job"},
           {"key", ""}, {"jobs", Json::array()}};
    for (int id = 1; id <= 12; ++id) e["jobs"].push_back(id);
    return Reply({{"events", {e}}, {"revision", 1}});
  });
  ASSERT_EQ(RunEvents({}, h.ctx), 0) << h.err.str();
  EXPECT_NE(
      h.out.str().find("jobs_retired  job   12 job(s) out of memory: 1 2 3 4 5 6 7 8 9 10 ..."),
      std::string::npos)
      << h.out.str();
}

TEST(CliEvents, AnArraySaysHowManyElementsItHas) {
  StillClockHarness h;
  h.fake->OnPath([](const std::string& path) -> Result<ApiReply> {
    if (path.find("since=0&") == std::string::npos) {
      return Reply({{"events", Json::array()}, {"revision", 1}});
    }
    Json e = Submitted(1);
    e["type"] = "array_submitted";
    e["key"] = 7;
    e["indices"] = {0, 2, 4};
    return Reply({{"events", {e}}, {"revision", 1}});
  });
  ASSERT_EQ(RunEvents({}, h.ctx), 0) << h.err.str();
  EXPECT_NE(h.out.str().find("array_submitted  job 7  3 element(s), by ana to org/team"),
            std::string::npos)
      << h.out.str();
}

TEST(CliEvents, FollowHoldsTheCallAndReportsAReset) {
  StillClockHarness h;
  h.fake->OnPath([](const std::string& path) -> Result<ApiReply> {
    if (path.find("since=0&") != std::string::npos) {
      return Reply({{"events", Json::array()}, {"revision", 40}, {"reset", true}});
    }
    return Reply({{"events", {Submitted(41)}}, {"revision", 41}});
  });
  ASSERT_EQ(RunEvents({"-f", "--updates", "2"}, h.ctx), 0) << h.err.str();
  EXPECT_NE(h.err.str().find("continuing from revision 40"), std::string::npos) << h.err.str();
  EXPECT_EQ(h.fake->paths()[1], "GET /v1/events?since=40&max=1000&wait=25000");
  EXPECT_NE(h.out.str().find("41  "), std::string::npos);
}

TEST(CliEvents, AMalformedAnswerIsAnErrorNamingTheField) {
  for (const Json& body : {Json{{"events", Json::array()}},
                           Json{{"events", {Json{{"type", "job_submitted"}}}}, {"revision", 3}},
                           Json{{"events", "none"}, {"revision", 3}}}) {
    StillClockHarness h;
    h.fake->OnPath([&](const std::string&) -> Result<ApiReply> { return Reply(body); });
    EXPECT_EQ(RunEvents({}, h.ctx), 1) << body.dump();
    EXPECT_NE(h.err.str().find("the head's events answer: "), std::string::npos) << h.err.str();
    EXPECT_TRUE(h.out.str().empty()) << h.out.str();
  }
  StillClockHarness h;
  h.fake->OnPath([](const std::string&) -> Result<ApiReply> {
    return Reply({{"events", Json::array()}});
  });
  EXPECT_EQ(RunEvents({}, h.ctx), 1);
  EXPECT_NE(h.err.str().find("revision: missing"), std::string::npos) << h.err.str();
}

TEST(CliJobsWatch, RedrawsOnlyWhenTheStreamSaysSomethingChanged) {
  StillClockHarness h;
  int lists = 0;
  int waits = 0;
  h.fake->OnPath([&](const std::string& path) -> Result<ApiReply> {
    if (path.rfind("/v1/jobs", 0) == 0) {
      ++lists;
      Json jobs = Json::array();
      for (int i = 1; i <= lists; ++i) {
        jobs.push_back({{"id", i},
                        {"owner", "ana"},
                        {"state", "pending"},
                        {"spec", {{"command", {"true"}}}},
                        {"runs", Json::array()}});
      }
      return Reply({{"jobs", jobs}, {"next_after", nullptr}});
    }
    if (path.find("wait=0") != std::string::npos)
      return Reply({{"revision", 7}, {"events", Json::array()}});
    // First hold: nothing happened (timed out); second: a change.
    ++waits;
    if (waits == 1) return Reply({{"revision", 7}, {"events", Json::array()}});
    return Reply({{"revision", 8}, {"events", {Submitted(8)}}});
  });
  ASSERT_EQ(RunJobs({"--watch", "--updates", "2"}, h.ctx), 0) << h.err.str();
  EXPECT_EQ(lists, 2) << "an empty hold must not redraw";
  EXPECT_EQ(waits, 2);
  std::string out = h.out.str();
  size_t last = out.rfind("\x1b[H\x1b[2J");
  ASSERT_NE(last, std::string::npos);
  EXPECT_NE(out.substr(last).find("2 "), std::string::npos) << out;
}

}  // namespace
}  // namespace corral::cli
