// Admin reservations and maintenance windows through the head's core: admins alone create and
// delete them, bad ones are refused naming the field and change nothing, the scheduler keeps
// jobs whose run could overlap off the reserved nodes, and reservations survive a crash (the
// fixture, core_scenario.h, recovers after every step).
#include "head/core_scenario.h"

namespace corral::head::core_test {
namespace {

NodeReservationSpec Window(const std::string& name, std::vector<std::string> nodes, TimeMs start,
                           DurationMs duration, bool maintenance) {
  NodeReservationSpec r;
  r.name = name;
  r.nodes = std::move(nodes);
  r.start_ms = start;
  r.end_ms = start + duration;
  r.maintenance = maintenance;
  return r;
}

TEST_P(Scenario, AMaintenanceWindowKeepsOverlappingJobsOffItsNodes) {
  Register("n1", 2);
  Register("n2", 2);
  ASSERT_TRUE(
      core()
          .CreateReservation(kAdmin, Window("maint", {"n1"}, now() + kHour, kHour, true), now())
          .ok());
  Step();
  Job first = Submit(Spec(2));   // no limit: only n2
  Job second = Submit(Spec(2));  // no limit, n2 taken: waits for the window to pass
  JobSpec short_spec = Spec(2);
  short_spec.time_limit_ms = 30 * kMinute;  // ends before the window: backfills n1
  Job short_job = Submit(short_spec);
  // The reasons are checked before the step: they are not durable, and a recovered core learns
  // them in its next pass (when the backfilled job holds n1, with another reason).
  core().Schedule(now());
  ASSERT_EQ(Get(first.id).state, JobState::kScheduled);
  EXPECT_EQ(Get(first.id).CurrentRun()->placement.at(0).node, "n2");
  ASSERT_EQ(Get(short_job.id).state, JobState::kScheduled);
  EXPECT_EQ(Get(short_job.id).CurrentRun()->placement.at(0).node, "n1");
  Job waiting = Get(second.id);
  EXPECT_EQ(waiting.state, JobState::kPending);
  EXPECT_EQ(waiting.pending_code, PendingCode::kReservationWait);
  EXPECT_NE(waiting.pending_reason.find("reservation maint (maintenance)"), std::string::npos)
      << waiting.pending_reason;
  Step();
  ASSERT_EQ(core().ListReservations().size(), 1u);  // survives recovery
  EXPECT_EQ(core().ListReservations()[0].nodes, std::vector<std::string>{"n1"});
  h_.ExpectReplayEqualsLive();
}

TEST_P(Scenario, OnlyAdminsCreateReservationsAndBadOnesChangeNothing) {
  Register("n1", 2);
  auto by_user = core().CreateReservation(kAna, Window("r", {"n1"}, now(), kHour, false), now());
  EXPECT_EQ(by_user.status().code(), ErrorCode::kPermissionDenied);
  auto ghost = core().CreateReservation(kAdmin, Window("r", {"n9"}, now(), kHour, false), now());
  ASSERT_EQ(ghost.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(ghost.status().message().find("field 'nodes': no node 'n9'"), std::string::npos)
      << ghost.status().message();
  auto past =
      core().CreateReservation(kAdmin, Window("r", {"n1"}, now() - 2 * kHour, kHour, false), now());
  EXPECT_NE(past.status().message().find("field 'end_ms'"), std::string::npos);
  ASSERT_TRUE(
      core().CreateReservation(kAdmin, Window("a", {"n1"}, now(), 2 * kHour, false), now()).ok());
  Step();
  auto overlap =
      core().CreateReservation(kAdmin, Window("b", {"n1"}, now() + kHour, kHour, true), now());
  ASSERT_EQ(overlap.status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(overlap.status().message().find("node 'n1' is in reservation 'a'"), std::string::npos)
      << overlap.status().message();
  auto again = core().CreateReservation(kAdmin, Window("a", {"n1"}, now(), kHour, false), now());
  EXPECT_EQ(again.status().code(), ErrorCode::kAlreadyExists);
  // After it, the same node is free to reserve.
  EXPECT_TRUE(
      core()
          .CreateReservation(kAdmin, Window("c", {"n1"}, now() + 2 * kHour, kHour, true), now())
          .ok());
  Step();
  EXPECT_EQ(core().ListReservations().size(), 2u);
  EXPECT_EQ(core().DeleteReservation(kAna, "a", now()).status().code(),
            ErrorCode::kPermissionDenied);
  EXPECT_EQ(core().DeleteReservation(kAdmin, "nope", now()).status().code(), ErrorCode::kNotFound);
  ASSERT_TRUE(core().DeleteReservation(kAdmin, "a", now()).ok());
  Step();
  ASSERT_EQ(core().ListReservations().size(), 1u);
  EXPECT_EQ(core().ListReservations()[0].name, "c");
  h_.ExpectReplayEqualsLive();
}

TEST_P(Scenario, AJobSubmittedIntoAReservationRunsOnItsNodesDuringIt) {
  Register("n1", 2);
  Register("n2", 2);
  NodeReservationSpec train = Window("train", {"n1"}, now() + kHour, 2 * kHour, false);
  train.users = {"ana"};
  ASSERT_TRUE(core().CreateReservation(kAdmin, train, now()).ok());
  ASSERT_TRUE(
      core()
          .CreateReservation(kAdmin, Window("maint", {"n2"}, now() + 5 * kHour, kHour, true), now())
          .ok());
  Step();
  JobSpec in = Spec(2);
  in.reservation = "train";
  in.time_limit_ms = kHour;
  auto bobs = core().Submit(kBob, in, "", now());
  ASSERT_EQ(bobs.status().code(), ErrorCode::kPermissionDenied);
  EXPECT_NE(bobs.status().message().find("field 'reservation'"), std::string::npos);
  JobSpec maint = in;
  maint.reservation = "maint";
  EXPECT_EQ(core().Submit(kAna, maint, "", now()).status().code(), ErrorCode::kInvalidArgument);
  JobSpec none = in;
  none.reservation = "nope";
  EXPECT_EQ(core().Submit(kAna, none, "", now()).status().code(), ErrorCode::kInvalidArgument);
  Job job = Submit(in);
  Schedule();
  core().Schedule(now());  // reasons are not durable: a recovered core learns them in a pass
  EXPECT_EQ(Get(job.id).state, JobState::kPending);  // n2 is free, but the reservation is later
  EXPECT_EQ(Get(job.id).pending_code, PendingCode::kReservationWait);
  now() += kHour;
  Schedule();
  ASSERT_EQ(Get(job.id).state, JobState::kScheduled);
  EXPECT_EQ(Get(job.id).CurrentRun()->placement.at(0).node, "n1");
  h_.ExpectReplayEqualsLive();
}

TEST(NodeReservationParse, NamesTheBadField) {
  auto parse = [](const std::string& text) { return ParseNodeReservation(Json::parse(text)); };
  EXPECT_TRUE(parse(R"({"name":"m","nodes":"n1,n2","start_ms":5,"duration":"2h"})").ok());
  EXPECT_EQ(parse(R"({"name":"m","nodes":"n1,n2","start_ms":5,"duration":"2h"})")->end_ms,
            5 + 2 * kHour);
  auto backwards = parse(R"({"name":"m","nodes":["n1"],"start_ms":50,"end_ms":10})");
  ASSERT_FALSE(backwards.ok());
  EXPECT_NE(backwards.status().message().find("field 'end_ms'"), std::string::npos);
  auto both = parse(R"({"name":"m","nodes":["n1"],"start_ms":5,"end_ms":10,"duration":"1h"})");
  EXPECT_NE(both.status().message().find("exactly one"), std::string::npos);
  auto no_nodes = parse(R"({"name":"m","nodes":[],"start_ms":5,"duration":"1h"})");
  EXPECT_NE(no_nodes.status().message().find("field 'nodes'"), std::string::npos);
  auto bad_name = parse(R"({"name":"a b","nodes":["n1"],"start_ms":5,"duration":"1h"})");
  EXPECT_NE(bad_name.status().message().find("field 'name'"), std::string::npos);
  auto maint_users = parse(
      R"({"name":"m","nodes":["n1"],"start_ms":5,"duration":"1h","maintenance":true,"users":["a"]})");
  EXPECT_FALSE(maint_users.ok());
}

}  // namespace
}  // namespace corral::head::core_test
