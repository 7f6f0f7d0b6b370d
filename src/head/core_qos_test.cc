// QoS classes through the head's core: a submission's priority is held to its owner's (or its
// queue's) class, naming the limit; a class without the preemption right only orders the
// queue; classes survive a crash (the fixture, core_scenario.h, recovers after every step).
#include "head/core_scenario.h"

namespace corral::head::core_test {
namespace {

QosClass Qos(const std::string& name, int32_t max, bool preempt = true) {
  QosClass q;
  q.name = name;
  q.max_priority = max;
  q.preempt = preempt;
  return q;
}

TEST_P(Scenario, APriorityAboveTheUsersQosIsRefusedNamingTheLimit) {
  Register("n1", 2);
  QosClass high = Qos("high", 50);
  high.users = {"ana"};
  ASSERT_TRUE(core().SetQos(kAdmin, high, now()).ok());
  QosClass low = Qos("low", 5);
  low.queues = {"team"};
  ASSERT_TRUE(core().SetQos(kAdmin, low, now()).ok());
  Step();
  ASSERT_EQ(core().ListQos().size(), 2u);

  JobSpec s = Spec(1);
  s.priority = 60;
  auto refused = core().Submit(kAna, s, "", now());
  ASSERT_EQ(refused.status().code(), ErrorCode::kPermissionDenied);
  EXPECT_NE(
      refused.status().message().find("field 'priority': got 60, above the limit 50 of QoS 'high'"),
      std::string::npos)
      << refused.status().message();
  s.priority = 50;
  EXPECT_TRUE(core().Submit(kAna, s, "", now()).ok());  // ana's own class, in any queue
  // bob has no class of his own: the queue's applies to his jobs there.
  JobSpec team = Spec(1);
  team.queue = "team/vision";
  team.priority = 6;
  auto bobs = core().Submit(kBob, team, "", now());
  ASSERT_EQ(bobs.status().code(), ErrorCode::kPermissionDenied);
  EXPECT_NE(bobs.status().message().find("limit 5 of QoS 'low'"), std::string::npos)
      << bobs.status().message();
  team.priority = 5;
  EXPECT_TRUE(core().Submit(kBob, team, "", now()).ok());
  // Elsewhere, with no class, the head's own allowance (0) holds.
  JobSpec plain = Spec(1);
  plain.priority = 1;
  EXPECT_EQ(core().Submit(kBob, plain, "", now()).status().code(), ErrorCode::kPermissionDenied);
  // Admins are not held to a class.
  s.priority = 1000;
  EXPECT_TRUE(core().Submit(kAdmin, s, "ana", now()).ok());
  Step();
  EXPECT_EQ(core().ListQos()[0].name, "high");  // survives recovery
  h_.ExpectReplayEqualsLive();
}

TEST_P(Scenario, OnlyAdminsSetQosAndAUserIsInOneClassAtMost) {
  QosClass a = Qos("a", 10);
  a.users = {"ana"};
  auto by_user = core().SetQos(kAna, a, now());
  EXPECT_EQ(by_user.status().code(), ErrorCode::kPermissionDenied);
  ASSERT_TRUE(core().SetQos(kAdmin, a, now()).ok());
  Step();
  QosClass b = Qos("b", 20);
  b.users = {"ana", "bob"};
  auto twice = core().SetQos(kAdmin, b, now());
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("field 'users': user 'ana' is in QoS 'a' already"),
            std::string::npos)
      << twice.status().message();
  EXPECT_EQ(core().ListQos().size(), 1u);  // changed nothing
  EXPECT_EQ(core().DeleteQos(kAdmin, "nope", now()).status().code(), ErrorCode::kNotFound);
  ASSERT_TRUE(core().DeleteQos(kAdmin, "a", now()).ok());
  Step();
  EXPECT_TRUE(core().ListQos().empty());
  h_.ExpectReplayEqualsLive();
}

TEST_P(Scenario, AQosWithoutThePreemptionRightOnlyOrdersTheQueue) {
  Register("n1", 2);
  JobSpec bobs = Spec(2);
  bobs.preemptible = true;
  Job victim = Submit(bobs, kBob);
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(victim.id))}));
  QosClass urgent = Qos("urgent", 100, /*preempt=*/false);
  urgent.users = {"ana"};
  ASSERT_TRUE(core().SetQos(kAdmin, urgent, now()).ok());
  Step();
  JobSpec high = Spec(2);
  high.priority = 100;
  Job mine = Submit(high);
  Schedule();
  EXPECT_FALSE(Get(victim.id).CurrentRun()->stop_requested) << "no preemption right";
  EXPECT_EQ(Get(mine.id).state, JobState::kPending);
  // The right given to the class reaches the job already waiting.
  urgent.preempt = true;
  ASSERT_TRUE(core().SetQos(kAdmin, urgent, now()).ok());
  Step();
  Schedule();
  EXPECT_TRUE(Get(victim.id).CurrentRun()->stop_requested);
  h_.ExpectReplayEqualsLive();
}

}  // namespace
}  // namespace corral::head::core_test
