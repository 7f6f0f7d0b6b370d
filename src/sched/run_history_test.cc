// The recent run times the start-time estimates count on (run_history.h).
#include "sched/run_history.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sched/testing_builders.h"

namespace corral::sched {
namespace {

using testing::MakeJob;

// A run of `minutes` on `gpus` GPUs of user `user` in queue "q" that ended at a pass.
void EndRun(RunHistory& h, JobId id, const std::string& user, int gpus, int64_t minutes) {
  h.Removed(MakeJob(id).Gpus(gpus).User(user).Queue("q"), gpus, 0);
  h.Ended(minutes * kMinute);
}

TEST(RunHistoryTest, ARunEndsAtTheNextPassUnlessItsJobIsGivenBack) {
  RunHistory h;
  PendingJob victim = MakeJob(1).Gpus(2).User("u").Queue("q");
  h.Removed(victim, 2, 0);
  h.GivenBack(1);  // preempted and requeued: its job goes on
  h.Ended(30 * kMinute);
  EXPECT_TRUE(h.KeptFor(victim).empty());

  // Requeued with 10 minutes on its 2 GPUs attained, then run 5 more: 15 minutes in all.
  victim.attained_ms = 2 * 10 * kMinute;
  h.Removed(victim, 2, 40 * kMinute);
  h.Ended(45 * kMinute);
  const std::vector<std::vector<DurationMs>> kept = h.KeptFor(victim);
  ASSERT_EQ(kept.size(), 4u);  // (user, GPUs), user, (queue, GPUs), queue
  for (const auto& runs : kept) EXPECT_EQ(runs, std::vector<DurationMs>{15 * kMinute});
}

TEST(RunHistoryTest, WhatIsLeftIsTheGeometricMeanOfTheLongerRunsOfTheMostSpecificKey) {
  RunHistory h;
  // User a's 1-GPU runs: 10, 10, 40, 40 minutes; its 8-GPU run: 20 minutes; user b's 1-GPU run
  // in the same queue: 100 minutes.
  EndRun(h, 1, "a", 1, 10);
  EndRun(h, 2, "a", 1, 10);
  EndRun(h, 3, "a", 1, 40);
  EndRun(h, 4, "a", 1, 40);
  EndRun(h, 5, "a", 8, 20);
  EndRun(h, 6, "b", 1, 100);
  const PendingJob one = MakeJob(9).Gpus(1).User("a").Queue("q");
  // (10 x 10 x 40 x 40)^(1/4) = 20 minutes (the arithmetic mean would say 25).
  EXPECT_EQ(h.RemainingMs(one, 0), 20 * kMinute);
  // Once it has run 20 minutes, only the 40-minute runs outlived it: 20 are left.
  EXPECT_EQ(h.RemainingMs(one, 20 * kMinute), 20 * kMinute);
  // Past every run of its own keys, a broader key answers: the queue's 100-minute run.
  EXPECT_EQ(h.RemainingMs(one, 45 * kMinute), 55 * kMinute);
  // One 8-GPU run is too few for its own key: the user's five runs answer, (10 x 10 x 40 x 40
  // x 20)^(1/5) = 20 minutes.
  EXPECT_EQ(h.RemainingMs(MakeJob(10).Gpus(8).User("a").Queue("q"), 0), 20 * kMinute);
  // A user without runs of its own: its queue's.
  EXPECT_EQ(h.RemainingMs(MakeJob(11).Gpus(1).User("c").Queue("q"), 45 * kMinute), 55 * kMinute);
  // Past everything, or nothing kept: nothing to say.
  EXPECT_EQ(h.RemainingMs(one, 200 * kMinute), kUnknownTime);
  EXPECT_EQ(h.RemainingMs(MakeJob(12).Gpus(1).Queue("r"), 0), kUnknownTime);
}

TEST(RunHistoryTest, KeepsTheLastRunsOfEachKey) {
  RunHistory h;
  for (JobId id = 1; id <= kRunHistoryWindow + 4; ++id) EndRun(h, id, "a", 1, id);
  const auto kept = h.KeptFor(MakeJob(99).Gpus(1).User("a").Queue("q"));
  ASSERT_FALSE(kept.empty());
  ASSERT_EQ(kept[0].size(), static_cast<size_t>(kRunHistoryWindow));
  EXPECT_EQ(kept[0].front(), 5 * kMinute);  // the oldest four are gone
  EXPECT_EQ(kept[0].back(), (kRunHistoryWindow + 4) * kMinute);
}

// Runs of `minutes` of user `user` (queue "q", 1 GPU) whose owner's distribution says every run
// takes `says_minutes`, one after another from `*t`.
void EndRunsSaid(RunHistory& h, JobId* id, TimeMs* t, const std::string& user, int64_t minutes,
                 int64_t says_minutes, int runs) {
  RunTimeQuantiles d;
  d.at.fill(says_minutes * kMinute);
  for (int i = 0; i < runs; ++i) {
    h.Removed(MakeJob((*id)++).Gpus(1).User(user).Queue("q").Distribution(d), 1, *t);
    *t += minutes * kMinute;
    h.Ended(*t);
  }
}

TEST(RunHistoryTest, TheRulesCountAsLongAgainAsARunHasRunOrTheGeometricMeanWithTheCentre) {
  EXPECT_EQ(ApplyRemainingRule(RemainingRule::kCentre, 100 * kMinute, 30'000), 100 * kMinute);
  EXPECT_EQ(ApplyRemainingRule(RemainingRule::kElapsed, 100 * kMinute, 20 * kMinute), 20 * kMinute);
  EXPECT_EQ(ApplyRemainingRule(RemainingRule::kElapsed, 100 * kMinute, 30'000), kElapsedFloorMs);
  EXPECT_EQ(ApplyRemainingRule(RemainingRule::kBlend, 100 * kMinute, kMinute), 10 * kMinute);
}

TEST(RunHistoryTest, EachOwnerIsCountedOnTheRuleThatWasClosestForItsRunsThatEnded) {
  RunHistory h;
  JobId id = 1;
  TimeMs t = 0;
  const auto rule_of = [&h](const std::string& user) {
    return h.RuleFor(MakeJob(99).Gpus(1).User(user).Queue("q"));
  };
  // a's distribution says 1,000 minutes, its runs take 2: scored at 0 and 1 minute each, the
  // minute it has run (at least one) is closest. Three runs are six points, too few.
  EndRunsSaid(h, &id, &t, "a", 2, 1000, 3);
  EXPECT_EQ(rule_of("a"), RemainingRule::kCentre);
  EndRunsSaid(h, &id, &t, "a", 2, 1000, 1);
  EXPECT_EQ(rule_of("a"), RemainingRule::kElapsed);
  // b's says 100 minutes, its runs take 10: at 0, 1 and 4 minutes the geometric mean of the
  // two (10, 9.9 and 19.6 minutes, against 10, 9 and 6 left) is closest.
  EndRunsSaid(h, &id, &t, "b", 10, 100, 3);
  EXPECT_EQ(rule_of("b"), RemainingRule::kBlend);
  // c's distribution is right: its centre stays.
  EndRunsSaid(h, &id, &t, "c", 10, 10, 3);
  EXPECT_EQ(rule_of("c"), RemainingRule::kCentre);
  // An owner without ended runs: the centre. A job without an owner: its queue's runs, scored
  // for jobs without owners alone (none here).
  EXPECT_EQ(rule_of("d"), RemainingRule::kCentre);
  EXPECT_EQ(h.RuleFor(MakeJob(98).Gpus(1).Queue("q")), RemainingRule::kCentre);
}

}  // namespace
}  // namespace corral::sched
