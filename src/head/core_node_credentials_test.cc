// Each node's own credential: issued at registration, rotated when the node registers again
// (with it or with the join token), revoked when an operator removes the node; each step
// straight and with a crash after it.
#include "head/core_scenario.h"

namespace corral::head::core_test {
namespace {

bool Opens(HeadCore& core, const std::string& secret, const std::string& node, TimeMs now) {
  auto who = core.Authenticate(secret, now);
  return who.ok() && who->kind == Caller::Kind::kNode && who->name == node;
}

TEST_P(Scenario, ANodeRegisteringAgainWithItsCredentialRotatesIt) {
  Register("n1", 1);
  Register("n2", 1);
  ASSERT_TRUE(Opens(core(), "secret-n1", "n1", now()));
  RegisterRequest again;
  again.name = "n1";
  again.address = "n1.example:7071";
  auto r = core().Register(Caller::Node("n1"), again, "rotated-n1", now());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Step();
  EXPECT_FALSE(core().Authenticate("secret-n1", now()).ok()) << "the old credential stops";
  EXPECT_TRUE(Opens(core(), "rotated-n1", "n1", now()));
  EXPECT_TRUE(Opens(core(), "secret-n2", "n2", now())) << "another node's is untouched";
  // One node's credential registers no other node, and changes nothing.
  const uint64_t rev = core().revision();
  again.name = "n2";
  auto stolen = core().Register(Caller::Node("n1"), again, "mine-now", now());
  ASSERT_FALSE(stolen.ok());
  EXPECT_EQ(stolen.status().code(), ErrorCode::kPermissionDenied);
  EXPECT_NE(stolen.status().message().find("registers only node n1"), std::string::npos)
      << stolen.status().message();
  EXPECT_EQ(core().revision(), rev);
  EXPECT_TRUE(Opens(core(), "secret-n2", "n2", now()));
  h_.ExpectDerivedStateRebuilds();
  h_.ExpectReplayEqualsLive();
}

TEST_P(Scenario, ARemovedNodesCredentialIsRefusedAndANodeWithALiveRunIsNotRemoved) {
  Register("n1", 1);
  Register("n2", 1);
  Job job = Submit(Spec(1));
  Schedule();
  const std::string busy = Get(job.id).CurrentRun()->placement.at(0).node;
  const std::string idle = busy == "n1" ? "n2" : "n1";
  const uint64_t rev = core().revision();
  // Bad input changes nothing and says why.
  auto live = core().RemoveNode(kAdmin, busy, now());
  ASSERT_FALSE(live.ok());
  EXPECT_EQ(live.status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(live.status().message().find("live run(s) (job " + std::to_string(job.id) + ")"),
            std::string::npos)
      << live.status().message();
  EXPECT_EQ(core().RemoveNode(kAna, idle, now()).status().code(), ErrorCode::kPermissionDenied);
  auto unknown = core().RemoveNode(kAdmin, "n9", now());
  EXPECT_EQ(unknown.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(unknown.status().message().find("'n9'"), std::string::npos);
  EXPECT_EQ(core().revision(), rev);

  auto removed = core().RemoveNode(kAdmin, idle, now());
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_EQ(removed->name, idle);
  Step();
  EXPECT_EQ(core().GetNode(idle).status().code(), ErrorCode::kNotFound);
  auto refused = core().Authenticate("secret-" + idle, now());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kUnauthenticated);
  EXPECT_TRUE(Opens(core(), "secret-" + busy, busy, now()));
  for (const NodeView& v : core().ListNodes(now())) EXPECT_NE(v.node.name, idle);
  // Jobs are placed on the nodes that remain only.
  Job next = Submit(Spec(1));
  Schedule();
  EXPECT_EQ(Get(next.id).state, JobState::kPending) << "the removed node takes no run";
  h_.ExpectDerivedStateRebuilds();

  // The join token registers it again, with a new credential.
  Register(idle, 1);
  EXPECT_TRUE(Opens(core(), "secret-" + idle, idle, now()));
  Schedule();
  EXPECT_EQ(Get(next.id).state, JobState::kScheduled);
  EXPECT_EQ(Get(next.id).CurrentRun()->placement.at(0).node, idle);
  h_.ExpectDerivedStateRebuilds();
  h_.ExpectReplayEqualsLive();
  h_.ExpectStoredLogReplaysToAcked();  // the removal's record decodes to the same change
}

}  // namespace
}  // namespace corral::head::core_test
