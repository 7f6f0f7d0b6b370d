// Placement near a job's data, weighed by time: a node lacking the data costs the fetch of what
// it lacks at its source's measured rate (Scheduler::SetSourceRate), set against how long the
// job would wait for the nodes that hold it (their runs' expected ends).
#include <gtest/gtest.h>

#include "sched/scheduler.h"
#include "sched/testing_builders.h"

namespace corral::sched {
namespace {

using testing::MakeJob;
using testing::MakeNode;
using testing::PlaceOf;
using testing::Running;

constexpr TimeMs kNow = 1'000'000;
constexpr int64_t kRate = 100'000'000;  // 100 MB/s
const std::string kImagenet = "sha256:" + std::string(64, 'a');
const std::string kCifar = "sha256:" + std::string(64, 'b');

// Bytes that take `ms` to fetch at kRate.
int64_t BytesFetchedIn(DurationMs ms) { return kRate / 1000 * ms; }

// n1 holds imagenet and is full with a run that is expected to end `frees_in` from now; n2 is
// free and lacks it. The job reads imagenet, whose fetch at kRate takes `fetch`.
Decisions PassWith(DurationMs frees_in, DurationMs fetch, bool measured = true) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(8).Holds(kImagenet));
  s.UpsertNode(MakeNode("n2").Gpus(8));
  if (measured) s.SetSourceRate("/shared", kRate);
  s.AddRunning(
      Running(MakeJob(100).Gpus(8).Limit(kNow + frees_in), {{"n1", {0, 1, 2, 3, 4, 5, 6, 7}}}, 0));
  s.AddPending(MakeJob(1).Gpus(8).Reads(kImagenet, BytesFetchedIn(fetch), "/shared"));
  return s.Schedule(kNow);
}

const Reservation* ReservationOf(const Decisions& d, JobId id) {
  for (const Reservation& r : d.reservations) {
    if (r.job == id) return &r;
  }
  return nullptr;
}

const WaitReason* WaitOf(const Decisions& d, JobId id) {
  for (const WaitReason& w : d.waiting) {
    if (w.job == id) return &w;
  }
  return nullptr;
}

TEST(DataPlacementTest, WaitsForTheNodeHoldingItsDataWhenTheFetchWouldTakeLonger) {
  Decisions d = PassWith(/*frees_in=*/2 * kMinute, /*fetch=*/30 * kMinute);
  EXPECT_EQ(PlaceOf(d, 1), nullptr);
  const Reservation* r = ReservationOf(d, 1);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->nodes, std::vector<std::string>{"n1"});
  EXPECT_EQ(r->start, kNow + 2 * kMinute);
  const WaitReason* w = WaitOf(d, 1);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->code, PendingCode::kReserved);
  EXPECT_NE(w->reason.find("on n1, which hold its data"), std::string::npos) << w->reason;
  EXPECT_NE(w->reason.find("would take 0:30:00"), std::string::npos) << w->reason;
}

TEST(DataPlacementTest, FetchesOnAFreeNodeWhenTheFetchIsShorterThanTheWait) {
  Decisions d = PassWith(/*frees_in=*/10 * kMinute, /*fetch=*/5 * kSecond);
  const PlaceDecision* p = PlaceOf(d, 1);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->placement[0].node, "n2");
  EXPECT_EQ(ReservationOf(d, 1), nullptr);
}

TEST(DataPlacementTest, AnUnmeasuredSourceNeverMakesAJobWait) {
  Decisions d = PassWith(/*frees_in=*/2 * kMinute, /*fetch=*/30 * kMinute, /*measured=*/false);
  const PlaceDecision* p = PlaceOf(d, 1);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->placement[0].node, "n2");
}

// A run without a time limit has no expected end: waiting for it is not known to be shorter.
TEST(DataPlacementTest, ARunWithoutATimeLimitIsNotWaitedFor) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(8).Holds(kImagenet));
  s.UpsertNode(MakeNode("n2").Gpus(8));
  s.SetSourceRate("/shared", kRate);
  s.AddRunning(Running(MakeJob(100).Gpus(8), {{"n1", {0, 1, 2, 3, 4, 5, 6, 7}}}, 0));
  s.AddPending(MakeJob(1).Gpus(8).Reads(kImagenet, BytesFetchedIn(kHour), "/shared"));
  Decisions d = s.Schedule(kNow);
  ASSERT_NE(PlaceOf(d, 1), nullptr);
  EXPECT_EQ(PlaceOf(d, 1)->placement[0].node, "n2");
}

// Among free nodes, the one whose fetch is shortest wins, not the one holding more datasets:
// n2 holds the small dataset and lacks the large one, n3 the other way round.
TEST(DataPlacementTest, AmongFreeNodesTheShortestFetchWins) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.UpsertNode(MakeNode("n2").Gpus(8).Holds(kCifar));
  s.UpsertNode(MakeNode("n3").Gpus(8).Holds(kImagenet));
  s.SetSourceRate("/shared", kRate);
  s.AddPending(MakeJob(1)
                   .Gpus(8)
                   .Reads(kImagenet, BytesFetchedIn(20 * kMinute), "/shared")
                   .Reads(kCifar, BytesFetchedIn(kMinute), "/shared"));
  Decisions d = s.Schedule(kNow);
  ASSERT_NE(PlaceOf(d, 1), nullptr);
  EXPECT_EQ(PlaceOf(d, 1)->placement[0].node, "n3");
}

// Unmeasured, each lacking one of two: the count ties and best fit decides (the first, n2),
// as placement did before rates were known.
TEST(DataPlacementTest, WithoutRatesTheNodeHoldingMoreDatasetsWins) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.UpsertNode(MakeNode("n2").Gpus(8).Holds(kCifar));
  s.UpsertNode(MakeNode("n3").Gpus(8).Holds(kImagenet).Holds(kCifar));
  s.AddPending(MakeJob(1)
                   .Gpus(8)
                   .Reads(kImagenet, BytesFetchedIn(20 * kMinute), "/shared")
                   .Reads(kCifar, BytesFetchedIn(kMinute), "/shared"));
  Decisions d = s.Schedule(kNow);
  ASSERT_NE(PlaceOf(d, 1), nullptr);
  EXPECT_EQ(PlaceOf(d, 1)->placement[0].node, "n3");
}

// A 2-replica gang: each replica's node must hold the data for the wait to pay off; the gang
// waits for n1 and n2 (both holding it, both busy for a minute) rather than fetch on n3, n4.
TEST(DataPlacementTest, AGangWaitsForNodesThatEachHoldItsData) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(8).Holds(kImagenet));
  s.UpsertNode(MakeNode("n2").Gpus(8).Holds(kImagenet));
  s.UpsertNode(MakeNode("n3").Gpus(8));
  s.UpsertNode(MakeNode("n4").Gpus(8));
  s.SetSourceRate("/shared", kRate);
  s.AddRunning(Running(MakeJob(100).Gpus(8).Replicas(2).Limit(kNow + kMinute),
                       {{"n1", {0, 1, 2, 3, 4, 5, 6, 7}}, {"n2", {0, 1, 2, 3, 4, 5, 6, 7}}}, 0));
  s.AddPending(MakeJob(1).Gpus(8).Replicas(2).Reads(kImagenet, BytesFetchedIn(kHour), "/shared"));
  Decisions d = s.Schedule(kNow);
  EXPECT_EQ(PlaceOf(d, 1), nullptr);
  const Reservation* r = ReservationOf(d, 1);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->nodes, (std::vector<std::string>{"n1", "n2"}));
}

}  // namespace
}  // namespace corral::sched
