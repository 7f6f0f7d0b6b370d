#include "api/unix_identity.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>

namespace corral::api {
namespace {

UnixGroupRoles Roles(const std::vector<std::string>& values) {
  auto r = ParseUnixGroupRoles(values);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : UnixGroupRoles{};
}

TEST(UnixGroupRoles, ParsesEachRoleAndMergesAQueueAdminsQueues) {
  UnixGroupRoles r =
      Roles({"ops=admin", "staff=user", "vision=queue-admin:lab", "vision=queue-admin:lab/big"});
  ASSERT_EQ(r.by_group.size(), 3u);
  EXPECT_EQ(r.by_group.at("ops").role, Role::kAdmin);
  EXPECT_EQ(r.by_group.at("staff").role, Role::kUser);
  EXPECT_EQ(r.by_group.at("vision").role, Role::kQueueAdmin);
  EXPECT_EQ(r.by_group.at("vision").queues, (std::vector<std::string>{"lab", "lab/big"}));
}

TEST(UnixGroupRoles, BadValuesNameTheFlagAndTheValue) {
  for (const std::string bad :
       {"ops", "=admin", "ops=root", "ops=queue-admin", "ops=admin:lab", "ops=queue-admin:"}) {
    auto r = ParseUnixGroupRoles({bad});
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("--unix-group-role"), std::string::npos);
  }
  auto twice = ParseUnixGroupRoles({"ops=admin", "ops=user"});
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("group 'ops' is given two roles, admin and user"),
            std::string::npos)
      << twice.status().message();
}

TEST(CallerOfUnixUser, AnUnmappedUserIsAPlainUserWithItsGroups) {
  Caller c = CallerOfUnixUser({1001, "ana", {"ana", "vision"}}, Roles({"ops=admin"}));
  EXPECT_EQ(c.kind, Caller::Kind::kUser);
  EXPECT_EQ(c.name, "ana");
  EXPECT_EQ(c.role, Role::kUser);
  EXPECT_FALSE(c.IsAdmin());
  EXPECT_TRUE(c.queues.empty());
  EXPECT_EQ(c.groups, (std::vector<std::string>{"ana", "vision"}));
}

TEST(CallerOfUnixUser, TheHighestRoleOfItsGroupsWins) {
  UnixGroupRoles roles = Roles({"ops=admin", "vision=queue-admin:lab", "nlp=queue-admin:text"});
  Caller admin = CallerOfUnixUser({7, "root", {"root", "ops", "vision"}}, roles);
  EXPECT_EQ(admin.role, Role::kAdmin);
  EXPECT_TRUE(admin.IsAdmin());
  EXPECT_TRUE(admin.queues.empty());  // an admin manages every queue; none listed

  Caller qa = CallerOfUnixUser({8, "bo", {"bo", "vision", "nlp"}}, roles);
  EXPECT_EQ(qa.role, Role::kQueueAdmin);
  EXPECT_EQ(qa.queues, (std::vector<std::string>{"lab", "text"}));
  EXPECT_FALSE(qa.IsAdmin());
}

TEST(CallerOfUnixUser, RootIsAPlainUserUnlessAGroupOfItsIsMapped) {
  // uid 0 is not special: only a mapping of one of its groups gives it a role.
  Caller root = CallerOfUnixUser({0, "root", {"root"}}, Roles({"ops=admin"}));
  EXPECT_EQ(root.role, Role::kUser);
  EXPECT_EQ(CallerOfUnixUser({0, "root", {"root"}}, Roles({"root=admin"})).role, Role::kAdmin);
}

TEST(LookUpUnixUser, NamesTheCallingUserAndItsGroupsFromTheUserDatabase) {
  auto me = LookUpUnixUser(net::PeerCredentials{static_cast<uint32_t>(::getuid()),
                                                static_cast<uint32_t>(::getgid()), ::getpid()});
  ASSERT_TRUE(me.ok()) << me.status().ToString();
  EXPECT_EQ(me->uid, ::getuid());
  EXPECT_FALSE(me->name.empty());
  EXPECT_FALSE(me->groups.empty());  // its primary group at least
  if (::getuid() == 0) {
    EXPECT_EQ(me->name, "root");
    EXPECT_NE(std::find(me->groups.begin(), me->groups.end(), "root"), me->groups.end());
  }
}

TEST(LookUpUnixUser, AUidWithNoNameIsRefused) {
  auto nobody = LookUpUnixUser(net::PeerCredentials{4000000123u, 4000000123u, 1});
  ASSERT_FALSE(nobody.ok());
  EXPECT_EQ(nobody.status().code(), ErrorCode::kUnauthenticated);
  EXPECT_NE(nobody.status().message().find("uid 4000000123 has no user name"), std::string::npos)
      << nobody.status().message();
}

}  // namespace
}  // namespace corral::api
