// The arrivals the forward estimate expects (arrival_history.h) and what they do to its
// estimates (ForwardStarts).
#include "sched/arrival_history.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sched/scheduler.h"
#include "sched/start_estimate.h"
#include "sched/testing_builders.h"

namespace corral::sched {
namespace {

using testing::MakeJob;
using testing::MakeNode;
using testing::Running;

std::vector<JobId> IdsOf(const std::vector<const PendingJob*>& jobs) {
  std::vector<JobId> ids;
  for (const PendingJob* j : jobs) ids.push_back(j->id);
  return ids;
}

TEST(ArrivalHistoryTest, KeepsEachNewJobOnceInSubmissionOrder) {
  ArrivalHistory h;
  h.Record(MakeJob(1).Submit(10 * kMinute).Build());
  h.Record(MakeJob(3).Submit(30 * kMinute).Build());
  h.Record(MakeJob(2).Submit(20 * kMinute).Build());  // given late: goes to its place
  PendingJob requeued = MakeJob(1).Submit(10 * kMinute).Attained(kHour).Build();
  h.Record(requeued);  // a victim given again: not a second arrival
  PendingJob reserved = MakeJob(4).Submit(30 * kMinute).Build();
  reserved.reservation = "maint";
  h.Record(reserved);  // competes only on its reservation's nodes
  EXPECT_EQ(h.size(), 3);
  EXPECT_EQ(IdsOf(h.Within(kHour, kHour)), (std::vector<JobId>{1, 2, 3}));
  // The window: submitted in (now - window, now].
  EXPECT_EQ(IdsOf(h.Within(kHour, 45 * kMinute)), (std::vector<JobId>{2, 3}));
  EXPECT_EQ(IdsOf(h.Within(kHour, 40 * kMinute)), (std::vector<JobId>{3}));
  EXPECT_EQ(IdsOf(h.Within(25 * kMinute, kHour)), (std::vector<JobId>{1, 2}));
  EXPECT_TRUE(h.Within(kHour, 0).empty());
}

TEST(ArrivalHistoryTest, ForgetsJobsOlderThanItKeepsAndBoundsItsSize) {
  ArrivalHistory h;
  h.Record(MakeJob(1).Submit(0).Build());
  h.Record(MakeJob(2).Submit(kArrivalKeepMs + kMinute).Build());
  EXPECT_EQ(h.size(), 1) << "the first was submitted more than kArrivalKeepMs before the newest";
  h.Record(MakeJob(1).Submit(0).Build());
  EXPECT_EQ(h.size(), 1) << "an old job given again (a restart) is not an arrival";
  ArrivalHistory many;
  for (int64_t i = 0; i < kArrivalMaxKept + 5; ++i) {
    many.Record(MakeJob(static_cast<JobId>(i + 1)).Submit(i).Build());
  }
  EXPECT_EQ(many.size(), kArrivalMaxKept);
  EXPECT_EQ(many.Within(kArrivalMaxKept + 5, kHour).front()->id, 6u) << "the newest kept";
}

TEST(ArrivalHistoryTest, ExpectedArrivalsRepeatTheWindowEvenlySpaced) {
  PendingJob a = MakeJob(7).Gpus(2).User("ann").Priority(1).Limit(kHour).Submit(5).Build();
  a.attained_ms = 3 * kHour;
  PendingJob b = MakeJob(9).Gpus(8).User("bob").Submit(50 * kMinute).Build();
  const TimeMs now = kHour;
  // Two arrivals in the last hour: one every 30 minutes from now, a's then b's, again and again.
  ExpectedArrivals e({&a, &b}, now, kHour, kMinute);
  std::vector<PendingJob> got;
  while (e.Next() != kUnknownTime && e.Next() <= now + 2 * kHour) got.push_back(e.Take());
  ASSERT_EQ(got.size(), 4u);
  for (size_t k = 0; k < got.size(); ++k) {
    EXPECT_EQ(got[k].submitted_at, now + static_cast<TimeMs>(k + 1) * 30 * kMinute) << k;
    EXPECT_EQ(got[k].id, kSyntheticJobIdBase + k) << "a new job each time";
    EXPECT_EQ(got[k].user, k % 2 == 0 ? "ann" : "bob") << k;
    EXPECT_EQ(got[k].attained_ms, 0) << "nothing attained yet";
  }
  EXPECT_EQ(got[0].per_replica.WholeGpus(), 2);
  EXPECT_EQ(got[0].priority, 1);
  EXPECT_EQ(got[0].time_limit_ms, kHour);
  // Three in an hour: 20 minutes apart, each rounded up to a whole step after now.
  ExpectedArrivals odd({&a, &b, &a}, now, kHour, 7 * kMinute);
  EXPECT_EQ(odd.Next(), now + 21 * kMinute);
  (void)odd.Take();
  EXPECT_EQ(odd.Next(), now + 42 * kMinute);
  EXPECT_EQ(ExpectedArrivals({}, now, kHour, kMinute).Next(), kUnknownTime) << "none seen";
  // In one window only (the forward estimate's kExpectedArrivalWindows): then none.
  ExpectedArrivals once({&a, &b}, now, kHour, kMinute, /*windows=*/1);
  (void)once.Take();
  EXPECT_EQ(once.Next(), now + kHour);
  (void)once.Take();
  EXPECT_EQ(once.Next(), kUnknownTime);
}

std::map<JobId, StartEstimate> EstById(const std::vector<StartEstimate>& v) {
  std::map<JobId, StartEstimate> out;
  for (const StartEstimate& e : v) out[e.job] = e;
  return out;
}

// One node of 8 GPUs, held by run 1 until an hour after now; job 100 (8 GPUs, an hour's
// limit, priority 0, submitted three hours ago) waits for it. Over the two hours before now,
// a stream of whole-node jobs of ten minutes, one every 20 minutes, of priority
// `stream_priority`, all gone by now.
std::unique_ptr<Scheduler> BehindAStream(int stream_priority, TimeMs now) {
  auto s = std::make_unique<Scheduler>();
  s->UpsertNode(MakeNode("n1").Gpus(8));
  for (JobId k = 0; k < 6; ++k) {
    const TimeMs at = now - 2 * kHour + static_cast<TimeMs>(k + 1) * 20 * kMinute;
    s->AddPending(MakeJob(10 + k).Gpus(8).Limit(10 * kMinute).Priority(stream_priority).Submit(at));
    s->RemovePending(10 + k);  // (ran elsewhere, or was cancelled: it arrived all the same)
  }
  s->AddRunning(Running(MakeJob(1).Gpus(8).Limit(now + kHour).Submit(0),
                        {{"n1", {0, 1, 2, 3, 4, 5, 6, 7}}}, 0));
  s->AddPending(MakeJob(100).Gpus(8).Limit(kHour).Submit(now - 3 * kHour));
  (void)s->Schedule(now);
  return s;
}

TEST(ForwardArrivalsTest, AJobBehindAStreamOfHigherRankedArrivalsIsEstimatedLater) {
  const TimeMs now = 3 * kHour;
  auto s = BehindAStream(/*stream_priority=*/1, now);
  EstimateOptions without;
  without.arrival_window_ms = 0;
  const StartEstimate alone = EstById(s->EstimateStarts(now, without))[100];
  EXPECT_EQ(alone.start, now + kHour) << "when run 1's limit ends";
  EXPECT_EQ(alone.confidence, EstimateConfidence::kHigh);
  EstimateOptions with;
  with.arrival_window_ms = 2 * kHour;
  const StartEstimate behind = EstById(s->EstimateStarts(now, with))[100];
  // Expected: one every 20 minutes from now. At +60 three wait (+20, +40, +60) and go first,
  // ten minutes each, with +80 and +100 arriving meanwhile: the node is free for job 100 at
  // +110, before the next (+120).
  EXPECT_EQ(behind.start, now + 110 * kMinute);
  EXPECT_EQ(behind.confidence, EstimateConfidence::kMedium)
      << "expected arrivals ran before it: it rests on the arrival model";
  // The same stream ranked below job 100 (priority 0, submitted after it) overtakes nothing.
  auto low = BehindAStream(/*stream_priority=*/0, now);
  EXPECT_EQ(EstById(low->EstimateStarts(now, with))[100].start, now + kHour);
}

TEST(ForwardArrivalsTest, ExpectedArrivalsChangeNothingTheSchedulerDecides) {
  const TimeMs now = 3 * kHour;
  auto a = BehindAStream(1, now);
  auto b = BehindAStream(1, now);
  EstimateOptions with;
  with.arrival_window_ms = 2 * kHour;
  (void)a->EstimateStarts(now, with);
  EXPECT_EQ(a->ModelSummary(), b->ModelSummary());
  a->RemoveRunning(1);
  b->RemoveRunning(1);
  Decisions da = a->Schedule(now + kHour);
  Decisions db = b->Schedule(now + kHour);
  ASSERT_EQ(da.place.size(), 1u);
  ASSERT_EQ(db.place.size(), 1u);
  EXPECT_EQ(da.place[0].job, 100u) << "no expected arrival is a job of the scheduler's";
  EXPECT_EQ(db.place[0].job, 100u);
}

}  // namespace
}  // namespace corral::sched
