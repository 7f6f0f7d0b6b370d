// Start-time estimates: the sweep (start_estimate.h) alone, and over a live Scheduler.
#include "sched/start_estimate.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sched/scheduler.h"
#include "sched/testing_builders.h"

namespace corral::sched {
namespace {

using testing::MakeJob;
using testing::MakeNode;
using testing::Running;

std::map<JobId, StartEstimate> ById(const std::vector<StartEstimate>& v) {
  std::map<JobId, StartEstimate> out;
  for (const StartEstimate& e : v) out[e.job] = e;
  return out;
}

EstimateJob Job(JobId id, int32_t replicas, int32_t gpus, DurationMs duration) {
  EstimateJob j;
  j.id = id;
  j.replicas = replicas;
  j.gpus_per_replica = gpus;
  j.duration_ms = duration;
  return j;
}

TEST(SweepStartsTest, JobThatFitsNowStartsNow) {
  auto e = SweepStarts({{"n1", "", 8}}, {}, {Job(1, 1, 4, 1000)}, 500);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].start, 500);
  EXPECT_EQ(e[0].nodes, std::vector<std::string>{"n1"});
}

TEST(SweepStartsTest, GangStartsWhenEnoughNodesAreFree) {
  // Two nodes of 8: n1 frees at 100, n2 at 300. A gang of two 8-GPU replicas needs both.
  std::vector<EstimateNode> nodes = {{"n1", "", 0}, {"n2", "", 0}};
  std::vector<EstimateRelease> rel = {{100, 0, 8}, {300, 1, 8}};
  auto e = SweepStarts(nodes, rel, {Job(1, 2, 8, 1000)}, 0);
  EXPECT_EQ(e[0].start, 300);
  EXPECT_EQ(e[0].nodes, (std::vector<std::string>{"n1", "n2"}));
}

TEST(SweepStartsTest, UnknownWhenItNeverFitsAndTheJobsBehindAreStillEstimated) {
  // n1's run has no end: a 16-GPU gang on 2 x 8 never fits; the 4-GPU job behind it does.
  std::vector<EstimateNode> nodes = {{"n1", "", 0}, {"n2", "", 8}};
  std::vector<EstimateRelease> rel = {{kUnknownTime, 0, 8}};
  auto e = ById(SweepStarts(nodes, rel, {Job(1, 2, 8, 100), Job(2, 1, 4, 100)}, 10));
  EXPECT_EQ(e[1].start, kUnknownTime);
  EXPECT_TRUE(e[1].nodes.empty());
  EXPECT_EQ(e[2].start, 10);
}

TEST(SweepStartsTest, StartsFollowTheOrderAndEstimatedJobsEnd) {
  // One node of 8. Jobs of 8 GPUs lasting 100 each: 0, 100, 200. A job of unknown duration
  // then holds the node forever: the one behind it gets no estimate.
  std::vector<EstimateJob> jobs = {Job(1, 1, 8, 100), Job(2, 1, 8, 100), Job(3, 1, 8, 100),
                                   Job(4, 1, 8, 0), Job(5, 1, 1, 100)};
  auto e = SweepStarts({{"n1", "", 8}}, {}, jobs, 0);
  EXPECT_EQ(e[0].start, 0);
  EXPECT_EQ(e[1].start, 100);
  EXPECT_EQ(e[2].start, 200);
  EXPECT_EQ(e[3].start, 300);
  EXPECT_EQ(e[4].start, kUnknownTime);
}

TEST(SweepStartsTest, GpuModelAndReplicasPerNode) {
  std::vector<EstimateNode> nodes = {{"a", "A100", 8}, {"b", "H100", 2}, {"c", "H100", 0}};
  std::vector<EstimateRelease> rel = {{50, 2, 8}};
  EstimateJob h = Job(1, 2, 1, 10);
  h.gpu_model = "H100";
  h.max_replicas_per_node = 1;  // two distinct H100 nodes: c frees at 50
  auto e = SweepStarts(nodes, rel, {h}, 0);
  EXPECT_EQ(e[0].start, 50);
  EXPECT_EQ(e[0].nodes, (std::vector<std::string>{"b", "c"}));
}

TEST(SweepStartsTest, ATakenRunDoesNotFreeItsGpusAgainAtItsEnd) {
  // One node held by run 0 until 1000, preemptible from 100 by jobs of rank 0. Job 1 takes it
  // at 100 for 5000; job 2 (no class) then waits for job 1's end, not the victim's.
  std::vector<EstimateNode> nodes = {{"n1", "", 0}};
  std::vector<EstimateRelease> rel = {{1000, 0, 8, 0}};
  std::vector<EstimateRun> runs = {{.rank_class = 0, .rank = 1, .preemptible_at = 100}};
  EstimateJob taker = Job(1, 1, 8, 5000);
  taker.rank_class = 0;
  auto e = ById(SweepStarts(nodes, rel, {taker, Job(2, 1, 8, 10)}, 0, runs));
  EXPECT_EQ(e[1].start, 100);
  EXPECT_EQ(e[2].start, 5100);
  // A job of the same rank does not outrank it: it waits for the run's end.
  taker.rank = 1;
  e = ById(SweepStarts(nodes, rel, {taker}, 0, runs));
  EXPECT_EQ(e[1].start, 1000);
}

TEST(EstimateStartsTest, JobBehindARunWithALimitStartsAtItsEnd) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.AddRunning(Running(MakeJob(1).Gpus(8).Limit(60'000), {{"n1", {0, 1, 2, 3, 4, 5, 6, 7}}}, 0));
  s.AddPending(MakeJob(2).Gpus(4).Submit(10));
  auto e = ById(s.EstimateStarts(1000));
  ASSERT_EQ(e.count(2), 1u);
  EXPECT_EQ(e[2].start, 60'000);
  EXPECT_EQ(e[2].nodes, std::vector<std::string>{"n1"});
  // Estimating changes nothing the scheduler does next: the job still waits.
  Decisions d = s.Schedule(2000);
  EXPECT_TRUE(d.place.empty());
  EXPECT_EQ(s.GetStats().pending, 1);
}

TEST(EstimateStartsTest, PredictionsShortenARunsEndUnlessTurnedOff) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.AddRunning(Running(MakeJob(1).Gpus(8).Limit(100'000).Predicted(20'000),
                       {{"n1", {0, 1, 2, 3, 4, 5, 6, 7}}}, 0));
  s.AddPending(MakeJob(2).Gpus(8));
  EXPECT_EQ(s.EstimateStarts(1000)[0].start, 20'000);
  EstimateOptions limits_only;
  limits_only.use_predictions = false;
  EXPECT_EQ(s.EstimateStarts(1000, limits_only)[0].start, 100'000);
}

// A run with its owner's run-time distribution ends, as an estimate counts, at the mean of
// what the owner's runs that outlived it had left, not at their median (by which the policy
// orders): run times are skewed, and the median tells too early an end more often than not.
TEST(EstimateStartsTest, ARunWithADistributionEndsAtTheMeanOfWhatItsOwnersRunsHadLeft) {
  RunTimeQuantiles d;
  for (int i = 0; i < kRunQuantiles; ++i) d.at[i] = i < 12 ? 10 * kMinute : 60 * kMinute;
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.AddRunning(Running(MakeJob(1).Gpus(8).Distribution(d), {{"n1", {0, 1, 2, 3, 4, 5, 6, 7}}}, 0));
  s.AddPending(MakeJob(2).Gpus(8));
  // (12 x 10 + 4 x 60) / 16 = 22.5 minutes from its start; the median would say 10.
  EXPECT_EQ(s.EstimateStarts(kMinute)[0].start, 22 * kMinute + 30'000);
  // Once it has run 20 minutes only the 60-minute runs outlived it: 40 minutes are left.
  EXPECT_EQ(s.EstimateStarts(20 * kMinute)[0].start, 60 * kMinute);
  EstimateOptions sweep;
  sweep.method = EstimateMethod::kSweep;
  EXPECT_EQ(s.EstimateStarts(kMinute, sweep)[0].start, 22 * kMinute + 30'000) << "the same rule";
}

// A run without a distribution (its prediction is its queue's running mean) ends, as an
// estimate counts, at the geometric mean of what the last runs of its queue that outlived it
// had left: the ends the scheduler has seen, not the prediction the policy orders by.
TEST(EstimateStartsTest, ARunWithoutADistributionEndsAtWhatItsQueuesLastRunsThatOutlivedItHadLeft) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(8));
  const std::vector<ReplicaPlacement> all = {{"n1", {0, 1, 2, 3, 4, 5, 6, 7}}};
  // The queue's last four runs took 10, 10, 40 and 40 minutes; a preempted run that is given
  // back is no end.
  TimeMs t = 0;
  for (JobId id = 1; id <= 4; ++id) {
    s.AddRunning(Running(MakeJob(id).Gpus(8).Queue("q"), all, t));
    t += id >= 3 ? 40 * kMinute : 10 * kMinute;
    s.RemoveRunning(id);
    (void)s.Schedule(t);
  }
  // Job 5 runs 2 minutes, is preempted and requeued (given back before the pass), and starts
  // again: had that run counted, the queue's runs would be 10, 10, 40, 40 and 2 minutes.
  const PendingJob job5 = MakeJob(5).Gpus(8).Queue("q").Predicted(5 * kMinute, 0);
  s.AddRunning(Running(job5, all, t));
  s.RemoveRunning(5);
  s.AddPending(job5);
  t += 2 * kMinute;
  (void)s.Schedule(t);
  s.AddRunning(Running(job5, all, t));
  s.AddPending(MakeJob(6).Gpus(8).Queue("q"));
  // (10 x 10 x 40 x 40)^(1/4) = 20 minutes from its start, not the 5 its prediction says.
  EXPECT_EQ(ById(s.EstimateStarts(t))[6].start, t + 20 * kMinute);
  // Once it has run 25 minutes only the 40-minute runs outlived it: 15 minutes are left.
  EXPECT_EQ(ById(s.EstimateStarts(t + 25 * kMinute))[6].start, t + 40 * kMinute);
  // A prediction that is the true duration (the simulator's oracle) is kept.
  PendingJob known = job5;
  known.oracle_duration_ms = known.predicted_ms;
  s.AddRunning(Running(known, all, t));
  EXPECT_EQ(ById(s.EstimateStarts(t + kMinute))[6].start, t + 5 * kMinute);
}

// A run whose owner's runs ended far sooner than the owner's distribution said is counted on to
// run as long again as it has run, once enough of them ended (RunHistory::RuleFor); a job the
// forward run starts keeps the centre.
TEST(EstimateStartsTest, ARunOfAnOwnerWhoseRunsEndedSoonerThanSaidEndsAsLongAgainAsItHasRun) {
  RunTimeQuantiles d;
  d.at.fill(1000 * kMinute);
  const std::vector<ReplicaPlacement> all = {{"n1", {0, 1, 2, 3, 4, 5, 6, 7}}};
  const auto job = [&d](JobId id) { return MakeJob(id).Gpus(8).User("a").Distribution(d); };
  // After `ended` runs of 2 minutes, one that has run 10 minutes: when the job behind it starts.
  const auto start_behind = [&](JobId ended) {
    Scheduler s;
    s.UpsertNode(MakeNode("n1").Gpus(8));
    TimeMs t = 0;
    for (JobId id = 1; id <= ended; ++id) {
      s.AddRunning(Running(job(id), all, t));
      t += 2 * kMinute;
      s.RemoveRunning(id);
      (void)s.Schedule(t);
    }
    s.AddRunning(Running(job(10), all, t));
    s.AddPending(MakeJob(11).Gpus(8));
    return ById(s.EstimateStarts(t + 10 * kMinute))[11].start - t;
  };
  // Three runs are six points scored, too few: the mean of what the distribution's runs that
  // outlived 10 minutes had left, 990 minutes.
  EXPECT_EQ(start_behind(3), 1000 * kMinute);
  // Four: as long again as it has run.
  EXPECT_EQ(start_behind(4), 20 * kMinute);
}

// What an estimate rests on: a run's time limit (high), a prediction from enough of its
// owner's ended jobs (medium), or from few (low); and the weakest link of a chain.
TEST(EstimateStartsTest, ConfidenceFollowsWhatTheStartRestsOn) {
  auto first_behind = [](PendingJob run) {
    Scheduler s;
    s.UpsertNode(MakeNode("n1").Gpus(8));
    s.AddRunning(Running(std::move(run), {{"n1", {0, 1, 2, 3, 4, 5, 6, 7}}}, 0));
    s.AddPending(MakeJob(2).Gpus(8).Submit(10));
    return s.EstimateStarts(1000).at(0);
  };
  StartEstimate limit = first_behind(MakeJob(1).Gpus(8).Limit(60'000));
  EXPECT_EQ(limit.start, 60'000);
  EXPECT_EQ(limit.confidence, EstimateConfidence::kHigh);
  StartEstimate history = first_behind(MakeJob(1).Gpus(8).Limit(60'000).Predicted(20'000, 9));
  EXPECT_EQ(history.start, 20'000);
  EXPECT_EQ(history.confidence, EstimateConfidence::kMedium);
  StartEstimate few = first_behind(MakeJob(1).Gpus(8).Predicted(20'000, 1));
  EXPECT_EQ(few.start, 20'000);
  EXPECT_EQ(few.confidence, EstimateConfidence::kLow);
  // Other users' history only (a queue's): as weak.
  StartEstimate queue = first_behind(MakeJob(1).Gpus(8).Predicted(20'000, 0));
  EXPECT_EQ(queue.confidence, EstimateConfidence::kLow);

  // A chain: a run with a limit, then a pending job predicted from one ended job (first by its
  // priority), then two with a limit. The third starts at the second's predicted end: as weak as
  // that.
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.AddRunning(Running(MakeJob(1).Gpus(8).Limit(10'000), {{"n1", {0, 1, 2, 3, 4, 5, 6, 7}}}, 0));
  s.AddPending(MakeJob(2).Gpus(8).Submit(10).Predicted(5'000, 1).Priority(10));
  s.AddPending(MakeJob(3).Gpus(8).Submit(20).Limit(5'000));
  s.AddPending(MakeJob(4).Gpus(8).Submit(30).Limit(5'000));
  auto e = ById(s.EstimateStarts(0));
  EXPECT_EQ(e[2].start, 10'000);
  EXPECT_EQ(e[2].confidence, EstimateConfidence::kHigh);
  EXPECT_EQ(e[3].start, 15'000);
  EXPECT_EQ(e[3].confidence, EstimateConfidence::kLow);
  EXPECT_EQ(e[4].start, 20'000);
  EXPECT_EQ(e[4].confidence, EstimateConfidence::kLow);
}

TEST(SweepStartsTest, AStartIsAsSureAsTheWeakestReleaseOfItsInstant) {
  // Two nodes of 4: n1 frees at 100 on a limit, n2 at 100 on a weak prediction. A gang of
  // both starts at 100 resting on the weak one; a job needing n1 alone at 100 too, but the
  // sweep does not know which of the instant's releases made room: the weakest counts.
  std::vector<EstimateNode> nodes = {{"n1", "", 0}, {"n2", "", 0}};
  std::vector<EstimateRelease> rel = {{100, 0, 4, -1, EstimateConfidence::kHigh},
                                      {100, 1, 4, -1, EstimateConfidence::kLow}};
  auto e = SweepStarts(nodes, rel, {Job(1, 2, 4, 1000)}, 0);
  EXPECT_EQ(e[0].start, 100);
  EXPECT_EQ(e[0].confidence, EstimateConfidence::kLow);
  // Apart: the job that starts at n1's sure release is sure.
  rel[1].at = 200;
  e = SweepStarts(nodes, rel, {Job(1, 1, 4, 1000), Job(2, 1, 4, 1000)}, 0);
  EXPECT_EQ(e[0].start, 100);
  EXPECT_EQ(e[0].confidence, EstimateConfidence::kHigh);
  EXPECT_EQ(e[1].start, 200);
  EXPECT_EQ(e[1].confidence, EstimateConfidence::kLow);
  // A job that fits now is sure.
  e = SweepStarts({{"n1", "", 8}}, {}, {Job(1, 1, 4, 1000)}, 0);
  EXPECT_EQ(e[0].confidence, EstimateConfidence::kHigh);
}

TEST(EstimateStartsTest, FifoOrderOfTheSchedulerIsRespected) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.AddRunning(Running(MakeJob(1).Gpus(8).Limit(1000), {{"n1", {0, 1, 2, 3, 4, 5, 6, 7}}}, 0));
  // Submitted in order 3, 2, 4: each needs the whole node for 1000 ms.
  s.AddPending(MakeJob(2).Gpus(8).Limit(1000).Submit(20));
  s.AddPending(MakeJob(3).Gpus(8).Limit(1000).Submit(10));
  s.AddPending(MakeJob(4).Gpus(8).Limit(1000).Submit(30));
  auto e = ById(s.EstimateStarts(0));
  EXPECT_EQ(e[3].start, 1000);
  EXPECT_EQ(e[2].start, 2000);
  EXPECT_EQ(e[4].start, 3000);
  // A higher priority goes first.
  s.AddPending(MakeJob(5).Gpus(8).Limit(1000).Submit(40).Priority(10));
  e = ById(s.EstimateStarts(0));
  EXPECT_EQ(e[5].start, 1000);
  EXPECT_EQ(e[3].start, 2000);
}

TEST(EstimateStartsTest, UnknownWithoutLimitsOrPredictions) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.AddRunning(Running(MakeJob(1).Gpus(8), {{"n1", {0, 1, 2, 3, 4, 5, 6, 7}}}, 0));
  s.AddPending(MakeJob(2).Gpus(1));
  auto e = s.EstimateStarts(10);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].start, kUnknownTime);
  EXPECT_TRUE(e[0].nodes.empty());
}

TEST(EstimateStartsTest, UnschedulableNodesAreNotCounted) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(8).Unschedulable());
  s.UpsertNode(MakeNode("n2").Gpus(8));
  s.AddRunning(Running(MakeJob(1).Gpus(8).Limit(500), {{"n2", {0, 1, 2, 3, 4, 5, 6, 7}}}, 0));
  s.AddPending(MakeJob(2).Gpus(8));
  auto e = s.EstimateStarts(0);
  EXPECT_EQ(e[0].start, 500);
  EXPECT_EQ(e[0].nodes, std::vector<std::string>{"n2"});
}

// Under kCorral's LAS: run 1 holds the node for 100 h and has attained 3 GPU-hours (level 1,
// past twice the 1 h threshold); a new 8-GPU job (level 0) is placed by preempting it as soon as
// it has run min_runtime_before_preempt_ms (5 min from its start at 0).
constexpr DurationMs kRunLimit = 100 * kHour;
constexpr TimeMs kPreemptibleAt = 5 * kMinute;

std::unique_ptr<Scheduler> WithLongRun(SchedulerConfig cfg, bool preemptible, DurationMs attained,
                                       DurationMs job_attained = 0) {
  auto s = std::make_unique<Scheduler>(std::move(cfg));
  s->UpsertNode(MakeNode("n1").Gpus(8));
  s->AddRunning(Running(
      MakeJob(1).Gpus(8).Limit(kRunLimit).Preemptible(preemptible).Attained(attained).Submit(0),
      {{"n1", {0, 1, 2, 3, 4, 5, 6, 7}}}, 0));
  s->AddPending(MakeJob(2).Gpus(8).Limit(kHour).Attained(job_attained).Submit(10));
  return s;
}

TEST(EstimateStartsTest, NewJobUnderLasStartsWhenTheLongRunIsPreemptible) {
  auto s = WithLongRun({}, /*preemptible=*/true, 3 * kHour);
  auto e = ById(s->EstimateStarts(1000));
  EXPECT_EQ(e[2].start, kPreemptibleAt);
  EXPECT_EQ(e[2].nodes, std::vector<std::string>{"n1"});
  // A start by preemption rests on the sweep's model of it: not a bound.
  EXPECT_EQ(e[2].confidence, EstimateConfidence::kMedium);
  // The scheduler does what was estimated: not before, then by preempting run 1.
  EXPECT_TRUE(s->Schedule(1000).preempt.empty());
  Decisions d = s->Schedule(kPreemptibleAt);
  ASSERT_EQ(d.preempt.size(), 1u);
  EXPECT_EQ(d.preempt[0].job, 1);
  EXPECT_EQ(d.preempt[0].for_job, 2);
}

TEST(EstimateStartsTest, NonPreemptibleRunIsWaitedFor) {
  auto s = WithLongRun({}, /*preemptible=*/false, 3 * kHour);
  EXPECT_EQ(ById(s->EstimateStarts(1000))[2].start, kRunLimit);
}

TEST(EstimateStartsTest, FifoDoesNotPreempt) {
  SchedulerConfig fifo;
  fifo.policy = OrderPolicy::kFifo;
  auto s = WithLongRun(fifo, /*preemptible=*/true, 3 * kHour);
  EXPECT_EQ(ById(s->EstimateStarts(1000))[2].start, kRunLimit);
}

TEST(EstimateStartsTest, JobThatDoesNotOutrankTheRunWaitsForItsEnd) {
  // The job has 6 GPU-hours (level 1, too close to the 10 h threshold to displace anyone,
  // hysteresis 2); the run 25 (level 2).
  auto s = WithLongRun({}, /*preemptible=*/true, 25 * kHour, 6 * kHour);
  // Without expected arrivals: a new job like this one (level 0) would displace the run, and
  // this one would go before the requeued run after it.
  EstimateOptions no_arrivals;
  no_arrivals.arrival_window_ms = 0;
  EXPECT_EQ(ById(s->EstimateStarts(1000, no_arrivals))[2].start, kRunLimit);
  EXPECT_TRUE(s->Schedule(kPreemptibleAt).preempt.empty());
}

TEST(EstimateStartsTest, RunIsPreemptedOnceItsServiceCrossesTheHysteresis) {
  // 1 GPU-hour: level 1, but under 2 x 1 h until 7.5 min later on 8 GPUs.
  auto s = WithLongRun({}, /*preemptible=*/true, kHour);
  constexpr TimeMs kCrossing = 7 * kMinute + 30'000;
  EXPECT_EQ(ById(s->EstimateStarts(1000))[2].start, kCrossing);
  EXPECT_TRUE(s->Schedule(kPreemptibleAt).preempt.empty());
  EXPECT_EQ(s->Schedule(kCrossing).preempt.size(), 1u);
}

TEST(EstimateStartsTest, LasBaselinePreemptsByLevel) {
  SchedulerConfig las;
  las.policy = OrderPolicy::kLas;
  auto s = WithLongRun(las, /*preemptible=*/true, 3 * kHour);
  EXPECT_EQ(ById(s->EstimateStarts(1000))[2].start, kPreemptibleAt);
}

}  // namespace
}  // namespace corral::sched
