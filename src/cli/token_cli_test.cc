// corral token list against a fake transport: the answer read as Credentials (the API's own
// encoder, less the hash, as the API sends it), and an answer it cannot read.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/cli_test_harness.h"
#include "core/credential.h"

namespace corral::cli {
namespace {

using namespace corral::cli::test;  // NOLINT: the shared harness
using ::testing::HasSubstr;

Json Shown(const Credential& c) {
  Json j = ToJson(c);
  j.erase("hash");
  return j;
}

TEST(TokenTest, ListShowsEachCredential) {
  Credential admin{"t-1", "h", Caller::User("root", Role::kAdmin), 1, 0};
  Credential lead{"t-2", "h", Caller::User("ana", Role::kQueueAdmin), 1, 0};
  lead.who.queues = {"org/a", "org/b"};
  Credential node{"t-3", "h", Caller::Node("gpu-7"), 1, 0};
  Harness h;
  h.fake->handler = [&](const FakeTransport::Sent&) {
    return Result<ApiReply>(
        JsonReply(200, {{"tokens", Json::array({Shown(admin), Shown(lead), Shown(node)})}}));
  };
  ASSERT_EQ(h.Run("token", {"list"}), 0) << h.err.str();
  EXPECT_THAT(h.out.str(), HasSubstr("t-1  user  root   admin        -"));
  EXPECT_THAT(h.out.str(), HasSubstr("t-2  user  ana    queue-admin  org/a,org/b"));
  EXPECT_THAT(h.out.str(), HasSubstr("t-3  node  gpu-7  user         -"));
}

TEST(TokenTest, AnAnswerItCannotReadIsAnError) {
  Harness h;
  h.fake->handler = [&](const FakeTransport::Sent&) {
    return Result<ApiReply>(JsonReply(
        200, {{"tokens", {{{"id", "t-1"}, {"who", {{"kind", "user"}, {"role", "boss"}}}}}}}));
  };
  EXPECT_EQ(h.Run("token", {"list"}), 1);
  EXPECT_THAT(h.err.str(), HasSubstr("the head's answer: credential: who: caller: role 'boss'"));
  h.fake->handler = [&](const FakeTransport::Sent&) {
    return Result<ApiReply>(JsonReply(200, {{"credentials", Json::array()}}));
  };
  EXPECT_EQ(h.Run("token", {"list"}), 1);
  EXPECT_THAT(h.err.str(), HasSubstr("no 'tokens' array"));
}

TEST(TokenTest, ACredentialReadsBackWhatWasWritten) {
  Credential c{"t-9", "abc", Caller::User("bo", Role::kQueueAdmin), 5, 9};
  c.who.queues = {"q"};
  c.who.groups = {"g"};
  Result<Credential> back = CredentialFromJson(ToJson(c));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, c);
  Result<Credential> no_id = CredentialFromJson(Json{{"who", ToJson(c.who)}});
  ASSERT_FALSE(no_id.ok());
  EXPECT_THAT(no_id.status().message(), HasSubstr("id is missing"));
}

}  // namespace
}  // namespace corral::cli
