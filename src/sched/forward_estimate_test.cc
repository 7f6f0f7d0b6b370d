// Start-time estimates from the scheduler's own pass run forward (ForwardStarts) and the fork
// it runs on (Scheduler::Fork).
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

std::map<JobId, StartEstimate> FwdById(const std::vector<StartEstimate>& v) {
  std::map<JobId, StartEstimate> out;
  for (const StartEstimate& e : v) out[e.job] = e;
  return out;
}

std::vector<ReplicaPlacement> AllOf(const std::string& node) {
  return {{node, {0, 1, 2, 3, 4, 5, 6, 7}}};
}

// Two nodes of 8 GPUs, each held by a run with a time limit; pending jobs of several shapes,
// each lasting exactly its time limit: a gang of two nodes, small jobs that backfill, one
// that waits behind the gang's reservation.
std::unique_ptr<Scheduler> Busy() {
  auto s = std::make_unique<Scheduler>();
  s->UpsertNode(MakeNode("n1").Gpus(8));
  s->UpsertNode(MakeNode("n2").Gpus(8));
  s->AddRunning(Running(MakeJob(1).Gpus(8).Limit(10 * kMinute).Submit(0), AllOf("n1"), 0));
  s->AddRunning(Running(MakeJob(2).Gpus(8).Limit(30 * kMinute).Submit(0), AllOf("n2"), 0));
  s->AddPending(MakeJob(3).Gpus(8).Replicas(2).Limit(20 * kMinute).Submit(10));
  s->AddPending(MakeJob(4).Gpus(4).Limit(15 * kMinute).Submit(20));
  s->AddPending(MakeJob(5).Gpus(2).Limit(5 * kMinute).Submit(30));
  s->AddPending(MakeJob(6).Gpus(8).Limit(kHour).Submit(40));
  s->AddPending(MakeJob(7).Gpus(1).Limit(3 * kMinute).Submit(50));
  return s;
}

// Drives a scheduler as its driver would, every job lasting exactly its time limit, and
// returns each job's first start.
std::map<JobId, TimeMs> DriveToTheEnd(Scheduler& s, TimeMs now) {
  std::map<JobId, TimeMs> started;
  std::multimap<TimeMs, JobId> ends = {{10 * kMinute, 1}, {30 * kMinute, 2}};
  std::map<JobId, DurationMs> limit = {
      {3, 20 * kMinute}, {4, 15 * kMinute}, {5, 5 * kMinute}, {6, kHour}, {7, 3 * kMinute}};
  TimeMs t = now;
  for (int step = 0; step < 100; ++step) {
    Decisions d = s.Schedule(t);
    for (const PlaceDecision& p : d.place) {
      started.try_emplace(p.job, t);
      ends.insert({t + limit.at(p.job), p.job});
    }
    EXPECT_TRUE(d.preempt.empty()) << "nothing here is preemptible";
    if (ends.empty()) break;
    t = ends.begin()->first;
    while (!ends.empty() && ends.begin()->first == t) {
      s.RemoveRunning(ends.begin()->second);
      ends.erase(ends.begin());
    }
  }
  return started;
}

TEST(ForwardStartsTest, EqualsWhatTheSchedulerThenDoesWhenDurationsAreExact) {
  auto s = Busy();
  auto estimates = FwdById(s->EstimateStarts(1000));
  std::map<JobId, TimeMs> actual = DriveToTheEnd(*s, 1000);
  ASSERT_EQ(actual.size(), 5u);
  for (const auto& [id, at] : actual) {
    ASSERT_EQ(estimates.count(id), 1u) << id;
    EXPECT_EQ(estimates[id].start, at) << "job " << id;
    // Every start rests on runs' time limits: bounds, not guesses.
    EXPECT_EQ(estimates[id].confidence, EstimateConfidence::kHigh) << "job " << id;
  }
  // And backfill is the pass's: the 1-GPU job starts before the gang, not behind it.
  EXPECT_LT(estimates[7].start, estimates[3].start);
}

TEST(ForwardStartsTest, TheSweepLeansLateWhereThePassBackfills) {
  auto s = Busy();
  EstimateOptions sweep;
  sweep.method = EstimateMethod::kSweep;
  auto by_sweep = FwdById(s->EstimateStarts(1000, sweep));
  auto forward = FwdById(s->EstimateStarts(1000));
  for (JobId id : {3, 4, 5, 6, 7}) EXPECT_LE(forward[id].start, by_sweep[id].start) << id;
  EXPECT_LT(forward[7].start, by_sweep[7].start) << "the sweep starts jobs in order only";
}

TEST(ForwardStartsTest, EstimatingChangesNothingTheSchedulerDoesNext) {
  auto a = Busy();
  auto b = Busy();
  (void)a->EstimateStarts(1000);
  EXPECT_EQ(a->ModelSummary(), b->ModelSummary());
  EXPECT_EQ(DriveToTheEnd(*a, 1000), DriveToTheEnd(*b, 1000));
}

TEST(ForwardStartsTest, AForkDecidesAsTheOriginal) {
  auto s = Busy();
  std::unique_ptr<Scheduler> fork = s->Fork();
  EXPECT_EQ(fork->ModelSummary(), s->ModelSummary());
  EXPECT_EQ(DriveToTheEnd(*fork, 1000), DriveToTheEnd(*s, 1000));
}

TEST(ForwardStartsTest, PastItsBudgetAJobGetsTheSweepsEstimateAtLowConfidence) {
  auto s = Busy();
  EstimateOptions bounded;
  bounded.max_passes = 1;  // the pass at now: nothing starts before the first end
  auto e = FwdById(s->EstimateStarts(1000, bounded));
  EstimateOptions sweep;
  sweep.method = EstimateMethod::kSweep;
  auto by_sweep = FwdById(s->EstimateStarts(1000, sweep));
  ASSERT_EQ(e.size(), 5u);
  for (JobId id : {3, 4, 5, 6, 7}) {
    EXPECT_EQ(e[id].start, by_sweep[id].start) << id;
    EXPECT_EQ(e[id].confidence, EstimateConfidence::kLow) << id;
  }
  // Enough passes for all: none falls back.
  bounded.max_passes = 64;
  for (const auto& [id, est] : FwdById(s->EstimateStarts(1000, bounded))) {
    EXPECT_EQ(est.confidence, EstimateConfidence::kHigh) << id;
  }
}

// One node of 8 GPUs held by a run until one minute; `n` whole-node jobs of one minute each
// wait in line: the forward run starts one per minute, each after a pass that walks the rest.
std::unique_ptr<Scheduler> WholeNodeLine(int n) {
  auto s = std::make_unique<Scheduler>();
  s->UpsertNode(MakeNode("n1").Gpus(8));
  s->AddRunning(Running(MakeJob(1).Gpus(8).Limit(kMinute).Submit(0), AllOf("n1"), 0));
  for (int i = 0; i < n; ++i) s->AddPending(MakeJob(2 + i).Gpus(8).Limit(kMinute).Submit(10 + i));
  return s;
}

TEST(ForwardStartsTest, TheDefaultWorkBoundIsTheHeads) {
  EXPECT_EQ(EstimateOptions{}.max_work, kForwardMaxWork);
}

// The work bound alone (passes to spare): the jobs the forward run started before it give
// their exact starts (high), the rest fall back to the sweep, no earlier than where the run
// stopped, at low confidence; a bigger bound starts more of them in the run.
TEST(ForwardStartsTest, PastItsWorkBoundAJobGetsTheSweepsEstimateAtLowConfidence) {
  const int n = 40;
  auto s = WholeNodeLine(n);
  std::unique_ptr<Scheduler> probe = s->Fork();
  (void)probe->Schedule(1000);
  const int64_t one_pass = probe->GetStats().last_pass_work;
  ASSERT_GT(one_pass, 0);
  EstimateOptions sweep;
  sweep.method = EstimateMethod::kSweep;
  auto by_sweep = FwdById(s->EstimateStarts(1000, sweep));
  int64_t started_in_run_before = -1;
  for (int64_t passes_of_work : {1, 10, 30}) {
    EstimateOptions bounded;
    bounded.max_passes = 100'000;
    bounded.max_work = passes_of_work * one_pass;
    auto e = FwdById(s->EstimateStarts(1000, bounded));
    ASSERT_EQ(e.size(), static_cast<size_t>(n)) << passes_of_work;
    int64_t high = 0;
    TimeMs last_high = 0;
    for (JobId id = 2; id < 2 + n; ++id) {
      const StartEstimate& est = e[id];
      if (est.confidence == EstimateConfidence::kHigh) {
        EXPECT_EQ(high, id - 2) << "the run's starts are a prefix of the line: job " << id;
        EXPECT_EQ(est.start, (id - 1) * kMinute) << "job " << id;
        ++high;
        last_high = est.start;
        continue;
      }
      EXPECT_EQ(est.confidence, EstimateConfidence::kLow) << "job " << id;
      EXPECT_GE(est.start, last_high) << "job " << id;
      // In this line the sweep's starts are exact too. With one pass of work the run stops at
      // job 2's instant (one minute) without starting it, where the sweep would have: it is told
      // that instant's lead from now doubled. The others start after where the run stopped:
      // the sweep's.
      const TimeMs sweep_start = by_sweep[id].start;
      const bool at_the_instant_reached = passes_of_work == 1 && id == 2;
      EXPECT_EQ(est.start, at_the_instant_reached ? 1000 + 2 * (sweep_start - 1000) : sweep_start)
          << "job " << id;
    }
    EXPECT_LT(high, n) << passes_of_work << " passes of work cannot start all " << n;
    EXPECT_GT(high, started_in_run_before) << passes_of_work << " passes of work";
    started_in_run_before = high;
  }
  // The default bound: every job of the line starts in the run.
  for (const auto& [id, est] : FwdById(s->EstimateStarts(1000))) {
    EXPECT_EQ(est.confidence, EstimateConfidence::kHigh) << id;
    EXPECT_EQ(est.start, (id - 1) * kMinute) << id;
  }
}

TEST(ForwardStartsTest, StopsOnceTheWatchedJobsHaveStarted) {
  auto s = Busy();
  EstimateOptions watch;
  watch.stop_when_started = {7};
  auto e = FwdById(s->EstimateStarts(1000, watch));
  auto all = FwdById(s->EstimateStarts(1000));
  EXPECT_EQ(e[7].start, all[7].start);
  EXPECT_EQ(e[6].start, kUnknownTime) << "started after the watched job: not asked about";
}

TEST(ForwardStartsTest, AJobBlockedBehindALimitedRunIsNeverToldNow) {
  // The pass has run and left job 2 waiting on a full node whose run has a limit.
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.AddRunning(Running(MakeJob(1).Gpus(8).Limit(kHour).Submit(0), AllOf("n1"), 0));
  s.AddPending(MakeJob(2).Gpus(4).Submit(10));
  (void)s.Schedule(500);
  auto e = FwdById(s.EstimateStarts(1000));
  EXPECT_EQ(e[2].start, kHour);
  EXPECT_EQ(e[2].confidence, EstimateConfidence::kHigh);
  // Behind a predicted end instead: later than now, and only as sure as the prediction.
  Scheduler p;
  p.UpsertNode(MakeNode("n1").Gpus(8));
  p.AddRunning(Running(MakeJob(1).Gpus(8).Predicted(kHour, 1).Submit(0), AllOf("n1"), 0));
  p.AddPending(MakeJob(2).Gpus(4).Submit(10));
  (void)p.Schedule(500);
  e = FwdById(p.EstimateStarts(1000));
  EXPECT_GT(e[2].start, 1000);
  EXPECT_EQ(e[2].confidence, EstimateConfidence::kLow);
}

TEST(ForwardStartsTest, AVictimIsRequeuedAndStartsAgainWhenTheTakerEnds) {
  // kCorral's LAS: run 1 (3 GPU-hours attained, 100 h limit) is displaced by job 2 (level 0,
  // one hour) once preemptible at 5 min; it is requeued and runs again when job 2 ends. Job 3
  // (8 GPUs, non-preemptible class behind) waits for both.
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.AddRunning(
      Running(MakeJob(1).Gpus(8).Limit(100 * kHour).Preemptible().Attained(3 * kHour).Submit(0),
              AllOf("n1"), 0));
  s.AddPending(MakeJob(2).Gpus(8).Limit(kHour).Submit(10));
  auto e = FwdById(s.EstimateStarts(1000));
  EXPECT_EQ(e[2].start, 5 * kMinute);
  EXPECT_EQ(e[2].confidence, EstimateConfidence::kMedium) << "a start on a victim's GPUs";
  Decisions d = s.Schedule(5 * kMinute);
  ASSERT_EQ(d.preempt.size(), 1u);
  EXPECT_EQ(d.preempt[0].job, 1);
}

}  // namespace
}  // namespace corral::sched
