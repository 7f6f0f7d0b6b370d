// Unit tests of admin reservations and maintenance windows (NodeReservation): no job is placed
// where its run could overlap one, backfill fills the node before it, a reservation's own jobs
// run only inside it, and start estimates keep off reserved nodes. Neither preemption nor a
// blocked job's plan counts on what would be freed on a node reserved against the job.
#include <gtest/gtest.h>

#include <algorithm>

#include "sched/scheduler.h"
#include "sched/testing_builders.h"

namespace corral::sched {
namespace {

using testing::MakeJob;
using testing::MakeNode;
using testing::Placed;

NodeReservation Window(std::string name, std::vector<std::string> nodes, TimeMs start, TimeMs end,
                       bool maintenance) {
  NodeReservation r;
  r.name = std::move(name);
  r.nodes = std::move(nodes);
  r.start = start;
  r.end = end;
  r.maintenance = maintenance;
  return r;
}

const WaitReason* WaitOf(const Decisions& d, JobId id) {
  for (const WaitReason& w : d.waiting) {
    if (w.job == id) return &w;
  }
  return nullptr;
}

std::string NodeOf(const Decisions& d, JobId id) {
  for (const PlaceDecision& p : d.place) {
    if (p.job == id) return p.placement.at(0).node;
  }
  return "";
}

PendingJob InReservation(PendingJob j, const std::string& reservation) {
  j.reservation = reservation;
  return j;
}

TEST(NodeReservations, AJobWhoseLimitOverlapsWaitsOneThatEndsBeforeIsBackfilled) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(4));
  s.SetReservation(Window("maint", {"n1"}, 10 * kHour, 12 * kHour, true));
  s.AddPending(MakeJob(1).Gpus(4).Limit(11 * kHour).Submit(0));
  s.AddPending(MakeJob(2).Gpus(4).Limit(10 * kHour).Submit(1));
  Decisions d = s.Schedule(0);
  EXPECT_FALSE(Placed(d, 1));
  EXPECT_TRUE(Placed(d, 2));  // ends exactly when the window starts
  const WaitReason* why = WaitOf(d, 1);
  ASSERT_NE(why, nullptr);
  EXPECT_EQ(why->code, PendingCode::kReservationWait);
  EXPECT_NE(why->reason.find("reservation maint (maintenance)"), std::string::npos) << why->reason;
  EXPECT_NE(why->reason.find("time limit would overlap"), std::string::npos) << why->reason;
  // Times a reader can place, not epoch milliseconds.
  EXPECT_NE(why->reason.find("from 1970-01-01T10:00:00Z to 1970-01-01T12:00:00Z"),
            std::string::npos)
      << why->reason;
  EXPECT_EQ(why->reason.find(" ms"), std::string::npos) << why->reason;
}

TEST(NodeReservations, AJobWithoutALimitWaitsUntilTheWindowIsOver) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(2));
  s.UpsertNode(MakeNode("n2").Gpus(2));
  s.SetReservation(Window("maint", {"n1"}, 10 * kHour, 12 * kHour, true));
  s.AddPending(MakeJob(1).Gpus(2).Submit(0));
  s.AddPending(MakeJob(2).Gpus(2).Submit(1));
  Decisions d = s.Schedule(0);
  EXPECT_EQ(NodeOf(d, 1), "n2");  // the unreserved node takes the first
  EXPECT_FALSE(Placed(d, 2));
  ASSERT_NE(WaitOf(d, 2), nullptr);
  EXPECT_EQ(WaitOf(d, 2)->code, PendingCode::kReservationWait);
  EXPECT_NE(WaitOf(d, 2)->reason.find("without a time limit"), std::string::npos);
  EXPECT_FALSE(Placed(s.Schedule(11 * kHour), 2));  // during it
  EXPECT_EQ(NodeOf(s.Schedule(12 * kHour), 2), "n1");
}

TEST(NodeReservations, ARemovedReservationFreesItsNodes) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(1));
  s.SetReservation(Window("maint", {"n1"}, kHour, 2 * kHour, true));
  s.AddPending(MakeJob(1).Gpus(1).Submit(0));
  EXPECT_FALSE(Placed(s.Schedule(0), 1));
  s.RemoveReservation("maint");
  EXPECT_TRUE(Placed(s.Schedule(1), 1));
}

TEST(NodeReservations, RunsAlreadyOnAReservedNodeAreNotStopped) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(2));
  s.AddRunning(testing::Running(MakeJob(7).Gpus(1).Preemptible(), {{"n1", {0}}}, 0));
  s.SetReservation(Window("maint", {"n1"}, 0, kHour, true));
  s.AddPending(MakeJob(1).Gpus(1).Priority(100).Submit(0));
  // Past the minimum run time: the run could be a victim, were its node not reserved.
  Decisions d = s.Schedule(30 * kMinute);
  EXPECT_TRUE(d.preempt.empty());
  EXPECT_FALSE(Placed(d, 1));
}

TEST(NodeReservations, AReservationsJobRunsOnlyInsideItOnItsNodes) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(2));
  s.UpsertNode(MakeNode("n2").Gpus(2));
  NodeReservation r = Window("train", {"n1"}, 10 * kHour, 12 * kHour, false);
  r.users = {"alice"};
  s.SetReservation(r);
  s.AddPending(InReservation(MakeJob(1).Gpus(2).User("alice").Limit(kHour).Submit(0), "train"));
  s.AddPending(InReservation(MakeJob(2).Gpus(2).User("alice").Limit(3 * kHour).Submit(1), "train"));
  s.AddPending(InReservation(MakeJob(3).Gpus(2).User("bob").Limit(kHour).Submit(2), "train"));
  Decisions before = s.Schedule(0);
  EXPECT_TRUE(before.place.empty());  // n2 is free, but not theirs
  ASSERT_NE(WaitOf(before, 1), nullptr);
  EXPECT_EQ(WaitOf(before, 1)->code, PendingCode::kReservationWait);
  EXPECT_NE(WaitOf(before, 1)->reason.find("reservation train, which starts"), std::string::npos);
  ASSERT_NE(WaitOf(before, 3), nullptr);  // reasons are reported when they change
  EXPECT_NE(WaitOf(before, 3)->reason.find("not allowed"), std::string::npos);
  // During it: job 1 on n1; job 2's limit runs past the end; bob is not allowed.
  s.AddPending(MakeJob(4).Gpus(2).Submit(3));  // no reservation: n2 only
  Decisions during = s.Schedule(10 * kHour);
  EXPECT_EQ(NodeOf(during, 1), "n1");
  EXPECT_FALSE(Placed(during, 2));
  EXPECT_FALSE(Placed(during, 3));
  EXPECT_EQ(NodeOf(during, 4), "n2");
  ASSERT_NE(WaitOf(during, 2), nullptr);
  EXPECT_NE(WaitOf(during, 2)->reason.find("runs past the end"), std::string::npos);
}

TEST(NodeReservations, AMaintenanceWindowTakesNoJobOfItsOwn) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(1));
  s.SetReservation(Window("maint", {"n1"}, 0, kHour, true));
  s.AddPending(InReservation(MakeJob(1).Gpus(1).Limit(kMinute), "maint"));
  Decisions d = s.Schedule(kMinute);
  EXPECT_FALSE(Placed(d, 1));
  ASSERT_NE(WaitOf(d, 1), nullptr);
  EXPECT_NE(WaitOf(d, 1)->reason.find("maintenance window"), std::string::npos);
}

TEST(NodeReservations, ANodeAddedAfterTheReservationIsReservedToo) {
  Scheduler s;
  s.SetReservation(Window("maint", {"n1"}, 0, kHour, true));
  s.UpsertNode(MakeNode("n1").Gpus(1));
  s.AddPending(MakeJob(1).Gpus(1));
  EXPECT_FALSE(Placed(s.Schedule(0), 1));
  EXPECT_TRUE(Placed(s.Schedule(kHour), 1));
}

TEST(NodeReservations, StartEstimatesKeepOffReservedNodes) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(2));
  s.SetReservation(Window("maint", {"n1"}, 10 * kHour, 12 * kHour, true));
  s.SetReservation(Window("train", {"n1"}, 20 * kHour, 21 * kHour, false));
  s.AddPending(MakeJob(1).Gpus(2).Submit(0));
  s.AddPending(InReservation(MakeJob(2).Gpus(2).Limit(kHour).Submit(1), "train"));
  std::vector<StartEstimate> e = s.EstimateStarts(0);
  auto of = [&](JobId id) {
    auto it = std::find_if(e.begin(), e.end(), [&](auto& x) { return x.job == id; });
    return it == e.end() ? StartEstimate{} : *it;
  };
  // Both reservations hold n1 until the last one ends.
  EXPECT_EQ(of(1).start, 21 * kHour);
  EXPECT_EQ(of(2).start, 20 * kHour);
  EXPECT_EQ(of(2).nodes, std::vector<std::string>{"n1"});
}

// Two nodes, each with a preemptible low-priority run; the run on n1 started later (it loses
// less work, so it is the first victim tried). A maintenance window on n1 starts in an hour.
class PreemptAroundAWindow : public ::testing::Test {
 protected:
  void SetUp() override {
    s.UpsertNode(MakeNode("n1").Gpus(2));
    s.UpsertNode(MakeNode("n2").Gpus(2));
    s.AddRunning(
        testing::Running(MakeJob(7).Gpus(2).Preemptible(), {{"n1", {0, 1}}}, 10 * kMinute));
    s.AddRunning(testing::Running(MakeJob(8).Gpus(2).Preemptible(), {{"n2", {0, 1}}}, 0));
    s.SetReservation(Window("maint", {"n1"}, 90 * kMinute, 3 * kHour, true));
  }
  std::vector<JobId> Victims(const Decisions& d) {
    std::vector<JobId> v;
    for (const PreemptDecision& p : d.preempt) v.push_back(p.job);
    return v;
  }
  Scheduler s;
};

TEST_F(PreemptAroundAWindow, AJobWithoutALimitPreemptsOnlyOffTheReservedNode) {
  s.AddPending(MakeJob(1).Gpus(2).Priority(100).Submit(20 * kMinute));
  Decisions d = s.Schedule(30 * kMinute);
  EXPECT_EQ(Victims(d), std::vector<JobId>{8});
  // Once the victim is gone the job starts on the room made for it, not on the reserved node.
  s.RemoveRunning(8);
  EXPECT_EQ(NodeOf(s.Schedule(31 * kMinute), 1), "n2");
}

TEST_F(PreemptAroundAWindow, AJobEndingBeforeTheWindowMayTakeTheCheaperVictim) {
  s.AddPending(MakeJob(1).Gpus(2).Priority(100).Limit(kHour).Submit(20 * kMinute));
  EXPECT_EQ(Victims(s.Schedule(30 * kMinute)), std::vector<JobId>{7});
}

TEST_F(PreemptAroundAWindow, NoVictimWhenEveryNodeIsReserved) {
  s.SetReservation(Window("maint2", {"n2"}, 90 * kMinute, 3 * kHour, true));
  s.AddPending(MakeJob(1).Gpus(2).Priority(100).Submit(20 * kMinute));
  Decisions d = s.Schedule(30 * kMinute);
  EXPECT_TRUE(d.preempt.empty());
  EXPECT_FALSE(Placed(d, 1));
}

// n1's run ends at 1h, n2's at 10h (neither preemptible); a window holds n1 from 2h to 4h.
// The blocked job's plan (its backfill reservation) must not count on n1 unless it would end
// by the window's start.
Reservation PlanFor(DurationMs limit) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(2));
  s.UpsertNode(MakeNode("n2").Gpus(2));
  s.AddRunning(testing::Running(MakeJob(7).Gpus(2).Limit(kHour), {{"n1", {0, 1}}}, 0));
  s.AddRunning(testing::Running(MakeJob(8).Gpus(2).Limit(10 * kHour), {{"n2", {0, 1}}}, 0));
  s.SetReservation(Window("maint", {"n1"}, 2 * kHour, 4 * kHour, true));
  s.AddPending(MakeJob(1).Gpus(2).Limit(limit).Submit(0));
  Decisions d = s.Schedule(0);
  EXPECT_EQ(d.reservations.size(), 1u);
  return d.reservations.empty() ? Reservation{} : d.reservations[0];
}

TEST(NodeReservations, APlanWithoutALimitNeverPointsAtAReservedNode) {
  Reservation r = PlanFor(0);
  EXPECT_EQ(r.nodes, std::vector<std::string>{"n2"});
  EXPECT_EQ(r.start, 10 * kHour);
}

TEST(NodeReservations, APlanMayUseAReservedNodeOnlyIfItEndsBeforeTheWindow) {
  Reservation fits = PlanFor(kHour);  // 1h to 2h on n1
  EXPECT_EQ(fits.nodes, std::vector<std::string>{"n1"});
  EXPECT_EQ(fits.start, kHour);
  // Started now it would end before the window, but its plan starts at 1h and would overlap.
  Reservation late = PlanFor(90 * kMinute);
  EXPECT_EQ(late.nodes, std::vector<std::string>{"n2"});
  EXPECT_EQ(late.start, 10 * kHour);
}

TEST(NodeReservations, StartEstimatesTakeNoVictimOnAReservedNode) {
  SchedulerConfig cfg;
  cfg.policy = OrderPolicy::kLas;
  Scheduler s(cfg);
  s.UpsertNode(MakeNode("n1").Gpus(2));
  s.UpsertNode(MakeNode("n2").Gpus(2));
  // A long preemptible run (LAS level 2 by 6h) on n1, inside a window; n2 frees at 8h.
  s.AddRunning(testing::Running(MakeJob(7).Gpus(2).Preemptible(), {{"n1", {0, 1}}}, 0));
  s.AddRunning(testing::Running(MakeJob(8).Gpus(2).Limit(8 * kHour), {{"n2", {0, 1}}}, 0));
  s.SetReservation(Window("maint", {"n1"}, 5 * kHour, 12 * kHour, true));
  s.AddPending(MakeJob(1).Gpus(2).Submit(0));
  std::vector<StartEstimate> e = s.EstimateStarts(6 * kHour);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].start, 8 * kHour);
  EXPECT_EQ(e[0].nodes, std::vector<std::string>{"n2"});
}

}  // namespace
}  // namespace corral::sched
