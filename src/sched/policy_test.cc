// Unit tests of the scheduling policies as components (policy.h): each policy's key, whether it
// orders by fair share or strictly, how it displaces, and the levels a run climbs.
#include "sched/policy.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "sched/testing_builders.h"

namespace corral::sched {
namespace {

using testing::MakeJob;

std::unique_ptr<const Policy> PolicyOf(OrderPolicy kind) {
  SchedulerConfig c;
  c.policy = kind;
  return MakePolicy(c);
}

TEST(PolicyTest, EachNameBuildsItsOwnPolicy) {
  for (OrderPolicy kind : {OrderPolicy::kCorral, OrderPolicy::kFifo, OrderPolicy::kSjf,
                           OrderPolicy::kSrtf, OrderPolicy::kLas}) {
    auto p = PolicyOf(kind);
    EXPECT_EQ(p->kind(), kind);
    EXPECT_STREQ(p->name(), OrderPolicyName(kind));
  }
}

TEST(PolicyTest, OnlyFifoIsStrictAndOnlyCorralOrdersByFairShare) {
  EXPECT_TRUE(PolicyOf(OrderPolicy::kFifo)->Strict());
  EXPECT_TRUE(PolicyOf(OrderPolicy::kCorral)->ByFairShare());
  for (OrderPolicy kind :
       {OrderPolicy::kSjf, OrderPolicy::kSrtf, OrderPolicy::kLas, OrderPolicy::kCorral}) {
    EXPECT_FALSE(PolicyOf(kind)->Strict()) << OrderPolicyName(kind);
  }
  for (OrderPolicy kind :
       {OrderPolicy::kFifo, OrderPolicy::kSjf, OrderPolicy::kSrtf, OrderPolicy::kLas}) {
    EXPECT_FALSE(PolicyOf(kind)->ByFairShare()) << OrderPolicyName(kind);
  }
}

TEST(PolicyTest, HowEachPolicyDisplaces) {
  EXPECT_EQ(PolicyOf(OrderPolicy::kFifo)->displacement(), Displacement::kNever);
  EXPECT_EQ(PolicyOf(OrderPolicy::kSjf)->displacement(), Displacement::kNever);
  EXPECT_EQ(PolicyOf(OrderPolicy::kSrtf)->displacement(), Displacement::kByKey);
  EXPECT_EQ(PolicyOf(OrderPolicy::kLas)->displacement(), Displacement::kByKey);
  EXPECT_EQ(PolicyOf(OrderPolicy::kCorral)->displacement(), Displacement::kByClaim);
  EXPECT_FALSE(PolicyOf(OrderPolicy::kFifo)->Preemptive());
  EXPECT_TRUE(PolicyOf(OrderPolicy::kLas)->Preemptive());
}

// Two jobs that each policy puts in a different order: `early` was submitted first, is long,
// and has run for 3 GPU-hours on 1 GPU; `late` is short and fresh.
TEST(PolicyTest, KeysOrderAsEachPolicySays) {
  const PendingJob early = MakeJob(1).Gpus(1).Submit(0).Oracle(10 * kHour);
  const PendingJob late = MakeJob(2).Gpus(1).Submit(kMinute).Oracle(kHour);
  const DurationMs early_attained = 3 * kHour;
  auto first = [&](OrderPolicy kind) {
    auto p = PolicyOf(kind);
    return p->Key(early, early_attained) < p->Key(late, 0) ? early.id : late.id;
  };
  EXPECT_EQ(first(OrderPolicy::kFifo), early.id);
  EXPECT_EQ(first(OrderPolicy::kSjf), late.id);   // 1 h against 10 h
  EXPECT_EQ(first(OrderPolicy::kSrtf), late.id);  // 1 h left against 7 h
  EXPECT_EQ(first(OrderPolicy::kLas), late.id);   // level 0 against level 1 (past 1 GPU-hour)
  EXPECT_EQ(first(OrderPolicy::kCorral), late.id);
  // Corral: priority first, whatever the levels.
  const PendingJob urgent = MakeJob(3).Gpus(1).Submit(0).Priority(5);
  auto corral = PolicyOf(OrderPolicy::kCorral);
  EXPECT_LT(corral->Key(urgent, 50 * kHour), corral->Key(late, 0));
  // The key's `a` grows with attained service where the policy displaces by key.
  auto las = PolicyOf(OrderPolicy::kLas);
  EXPECT_GT(las->Key(late, 20 * kHour).a, las->Key(late, 0).a);
  auto srtf = PolicyOf(OrderPolicy::kSrtf);
  EXPECT_LT(srtf->Key(early, 5 * kHour).a, srtf->Key(early, 0).a);
}

TEST(PolicyTest, TheLevelsARunClimbs) {
  const PendingJob job = MakeJob(1).Gpus(1);
  EXPECT_EQ(PolicyOf(OrderPolicy::kFifo)->LevelsAsItRuns(job), nullptr);
  EXPECT_EQ(PolicyOf(OrderPolicy::kSrtf)->LevelsAsItRuns(job), nullptr);
  SchedulerConfig c;
  c.las_thresholds_gpu_ms = {kHour, 5 * kHour};
  c.corral.las_preempt_hysteresis = 3.0;
  c.policy = OrderPolicy::kLas;
  auto las = MakePolicy(c);
  ASSERT_NE(las->LevelsAsItRuns(job), nullptr);
  EXPECT_EQ(*las->LevelsAsItRuns(job), c.las_thresholds_gpu_ms);
  EXPECT_EQ(las->LevelHysteresis(), 1.0);  // plain Tiresias: no hysteresis
  c.policy = OrderPolicy::kCorral;
  auto corral = MakePolicy(c);
  ASSERT_NE(corral->LevelsAsItRuns(job), nullptr);
  EXPECT_EQ(*corral->LevelsAsItRuns(job), c.las_thresholds_gpu_ms);
  EXPECT_EQ(corral->LevelHysteresis(), 3.0);
  // A job predicted from its owner's history climbs one level more.
  RunTimeQuantiles d;
  d.at.fill(30 * kHour);
  const PendingJob predicted = MakeJob(2).Gpus(1).Distribution(d);
  ASSERT_NE(corral->LevelsAsItRuns(predicted), nullptr);
  EXPECT_EQ(corral->LevelsAsItRuns(predicted)->size(), 3u);
  c.corral.las_within_queue = false;
  EXPECT_EQ(MakePolicy(c)->LevelsAsItRuns(job), nullptr);
}

}  // namespace
}  // namespace corral::sched
