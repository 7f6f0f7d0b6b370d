// A job without the right to preempt by priority (its owner's QoS) only orders the queue.
#include <gtest/gtest.h>

#include "sched/scheduler.h"
#include "sched/testing_builders.h"

namespace corral::sched {
namespace {

using testing::MakeJob;
using testing::MakeNode;
using testing::Running;

TEST(PreemptRightTest, HigherPriorityWithoutTheRightWaitsInsteadOfPreempting) {
  SchedulerConfig c;
  c.min_runtime_before_preempt_ms = 0;
  Scheduler s(c);
  s.UpsertNode(MakeNode("n1").Gpus(4));
  s.AddRunning(Running(MakeJob(100).Gpus(4).User("bob").Preemptible(), {{"n1", {0, 1, 2, 3}}}));
  PendingJob no_right = MakeJob(1).Gpus(4).User("ana").Priority(50);
  no_right.may_preempt = false;
  s.AddPending(no_right);
  Decisions d = s.Schedule(1000);
  EXPECT_TRUE(d.preempt.empty());
  // The same job with the right preempts bob's run.
  s.RemovePending(1);
  s.AddPending(MakeJob(1).Gpus(4).User("ana").Priority(50));
  d = s.Schedule(2000);
  ASSERT_EQ(d.preempt.size(), 1u);
  EXPECT_EQ(d.preempt[0].job, 100u);
}

}  // namespace
}  // namespace corral::sched
