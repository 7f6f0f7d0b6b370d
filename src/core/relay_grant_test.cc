#include "core/relay_grant.h"

#include <gtest/gtest.h>

namespace corral {
namespace {

constexpr TimeMs kNow = 1'800'000'000'000;

std::string KeyA() { return NodeGrantKey("credential-of-node-a"); }
std::string KeyB() { return NodeGrantKey("credential-of-node-b"); }

GrantRefusal Check(const std::string& key, const std::string& token, const std::string& node,
                   const std::string& run, TimeMs now = kNow) {
  return VerifyRelayGrant(key, token, node, run, now).refusal;
}

TEST(RelayGrant, TheGrantedRunOnTheGrantedNodeIsAcceptedUntilItExpires) {
  std::string g = SignRelayGrant(KeyA(), {"node-a", "7.1", kNow + 1000});
  EXPECT_EQ(Check(KeyA(), g, "node-a", "7.1"), GrantRefusal::kNone);
  EXPECT_EQ(Check(KeyA(), g, "node-a", "7.1", kNow + 999), GrantRefusal::kNone);
  EXPECT_EQ(Check(KeyA(), g, "node-a", "7.1", kNow + 1000), GrantRefusal::kExpired);
  EXPECT_EQ(VerifyRelayGrant(KeyA(), g, "node-a", "7.1", kNow + 5000).ToStatus().code(),
            ErrorCode::kUnauthenticated);
}

TEST(RelayGrant, AGrantForOneRunOpensNoOtherRun) {
  std::string g = SignRelayGrant(KeyA(), {"node-a", "7.1", kNow + 1000});
  EXPECT_EQ(Check(KeyA(), g, "node-a", "7.2"), GrantRefusal::kOtherRun);
  EXPECT_EQ(Check(KeyA(), g, "node-a", "8.1"), GrantRefusal::kOtherRun);
  EXPECT_EQ(Check(KeyA(), g, "node-a", "7.1.s0"), GrantRefusal::kOtherRun);
  EXPECT_EQ(VerifyRelayGrant(KeyA(), g, "node-a", "8.1", kNow).ToStatus().code(),
            ErrorCode::kPermissionDenied);
}

TEST(RelayGrant, AGrantForNodeAIsRefusedByNodeB) {
  std::string for_a = SignRelayGrant(KeyA(), {"node-a", "7.1", kNow + 1000});
  // Node B holds its own key: node A's grant does not verify there.
  EXPECT_EQ(Check(KeyB(), for_a, "node-b", "7.1"), GrantRefusal::kBadSignature);
  // Signed with B's key but naming A (a head never does this): B still refuses it.
  std::string naming_a = SignRelayGrant(KeyB(), {"node-a", "7.1", kNow + 1000});
  EXPECT_EQ(Check(KeyB(), naming_a, "node-b", "7.1"), GrantRefusal::kOtherNode);
}

TEST(RelayGrant, ForgedTamperedAndForeignBearersAreRefusedByType) {
  std::string g = SignRelayGrant(KeyA(), {"node-a", "7.1", kNow + 1000});
  // Extending the expiry breaks the signature.
  std::string later = SignRelayGrant(KeyA(), {"node-a", "7.1", kNow + 999999});
  std::string tampered = later.substr(0, later.rfind('.')) + g.substr(g.rfind('.'));
  EXPECT_EQ(Check(KeyA(), tampered, "node-a", "7.1"), GrantRefusal::kBadSignature);
  // Signed with the credential itself instead of its key: not this node's head.
  EXPECT_EQ(Check(KeyA(), SignRelayGrant("credential-of-node-a", {"node-a", "7.1", kNow + 1000}),
                  "node-a", "7.1"),
            GrantRefusal::kBadSignature);
  // A join token or a node credential is no grant at all.
  EXPECT_EQ(Check(KeyA(), "0123456789abcdef", "node-a", "7.1"), GrantRefusal::kMissing);
  EXPECT_EQ(Check(KeyA(), "", "node-a", "7.1"), GrantRefusal::kMissing);
  EXPECT_EQ(Check(KeyA(), "cg1.zz", "node-a", "7.1"), GrantRefusal::kMalformed);
  EXPECT_EQ(Check("", g, "node-a", "7.1"), GrantRefusal::kNoKey);
  EXPECT_EQ(VerifyRelayGrant("", g, "node-a", "7.1", kNow).ToStatus().code(),
            ErrorCode::kUnavailable);
}

TEST(RelayGrant, FieldsWithTheSeparatorCannotBeSplicedIntoAnotherGrant) {
  // "a.b" + "c" and "a" + "b.c" sign different bytes: the fields are hex.
  std::string g1 = SignRelayGrant(KeyA(), {"a.b", "c", kNow + 1000});
  std::string g2 = SignRelayGrant(KeyA(), {"a", "b.c", kNow + 1000});
  EXPECT_NE(g1, g2);
  EXPECT_EQ(Check(KeyA(), g1, "a.b", "c"), GrantRefusal::kNone);
  EXPECT_EQ(Check(KeyA(), g1, "a", "b.c"), GrantRefusal::kOtherNode);
}

TEST(RelayGrant, TheKeyIsTheSha256TheHeadKeepsOfTheCredential) {
  EXPECT_EQ(NodeGrantKey("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

}  // namespace
}  // namespace corral
