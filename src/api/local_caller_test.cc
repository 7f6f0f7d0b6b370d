// The API for a request from the head's local socket (HttpRequest::peer set, as only the
// server's Unix listener sets it): the caller is the peer's Unix user with its groups' role;
// a token there is refused; an unnamed uid is 401; an agent's routes refuse it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <future>

#include "api/api_service.h"
#include "api/leader_gate.h"
#include "api/test_head.h"

namespace corral::api {
namespace {

using corral::testing::CountingRandom;
using corral::testing::FakeClock;

class LocalCaller : public ::testing::Test {
 protected:
  void SetUp() override {
    auto h = test::StartTestHead(&clock_, &random_);
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    head_ = std::move(*h);
    api_ = std::make_unique<ApiService>(head_.get());
    auto me = LookUpUnixUser(Me());
    ASSERT_TRUE(me.ok()) << me.status().ToString();
    me_ = *me;
  }
  void TearDown() override { head_->Stop(); }

  static net::PeerCredentials Me() {
    return {static_cast<uint32_t>(::getuid()), static_cast<uint32_t>(::getgid()), ::getpid()};
  }

  struct Reply {
    int status = 0;
    Json body;
    std::string error() const {
      return body.is_object() && body.contains("error") ? body["error"].value("message", "") : "";
    }
  };
  Reply Call(const std::string& method, const std::string& path, const Json& body = nullptr,
             std::optional<net::PeerCredentials> peer = Me(),
             std::map<std::string, std::string> headers = {}) {
    net::HttpRequest req;
    req.method = method;
    req.target = req.path = path;
    if (!body.is_null()) req.body = body.dump();
    req.headers = std::move(headers);
    req.peer = peer;
    req.remote = peer ? "local uid " + std::to_string(peer->uid) : "127.0.0.1:5555";
    std::promise<net::HttpResponse> p;
    api_->Handle(req, [&p](net::HttpResponse r) { p.set_value(std::move(r)); });
    net::HttpResponse r = p.get_future().get();
    if (r.render) r.body = r.render();
    return {r.status, Json::parse(r.body, nullptr, false)};
  }

  FakeClock clock_;
  CountingRandom random_;
  std::unique_ptr<head::Head> head_;
  std::unique_ptr<ApiService> api_;
  UnixUser me_;
};

TEST_F(LocalCaller, IsItsUnixUserAPlainUserWithoutAMapping) {
  Reply who = Call("GET", "/v1/whoami");
  ASSERT_EQ(who.status, 200) << who.body.dump();
  EXPECT_EQ(who.body["user"], me_.name);
  EXPECT_EQ(who.body["role"], "user");
  EXPECT_EQ(who.body["via"], "unix_socket");
  EXPECT_EQ(who.body["uid"], ::getuid());
  EXPECT_EQ(who.body["groups"], Json(me_.groups));

  Reply mine = Call("POST", "/v1/jobs", Json{{"spec", {{"command", {"true"}}}}});
  ASSERT_EQ(mine.status, 201) << mine.body.dump();
  EXPECT_EQ(mine.body["job"]["owner"], me_.name);
  // Another owner in the body is refused: only an admin submits for someone else.
  Reply as_other =
      Call("POST", "/v1/jobs", Json{{"spec", {{"command", {"true"}}}}, {"user", "someone-else"}});
  EXPECT_EQ(as_other.status, 403) << as_other.body.dump();
  EXPECT_EQ(Call("POST", "/v1/tokens", Json{{"user", "x"}}).status, 403);
}

TEST_F(LocalCaller, AMappedGroupGivesItsRole) {
  auto roles = ParseUnixGroupRoles({me_.groups.front() + "=admin"});
  ASSERT_TRUE(roles.ok());
  api_->SetUnixGroupRoles(*roles);
  Reply who = Call("GET", "/v1/whoami");
  EXPECT_EQ(who.body["role"], "admin");
  EXPECT_EQ(Call("POST", "/v1/tokens", Json{{"user", "x"}}).status, 201);
  Reply for_other =
      Call("POST", "/v1/jobs", Json{{"spec", {{"command", {"true"}}}}, {"user", "someone-else"}});
  ASSERT_EQ(for_other.status, 201) << for_other.body.dump();
  EXPECT_EQ(for_other.body["job"]["owner"], "someone-else");
}

TEST_F(LocalCaller, ATokenThereIsRefusedAndHeadersNameNobody) {
  Reply with_admin_token = Call("GET", "/v1/whoami", nullptr, Me(),
                                {{"authorization", std::string("Bearer ") + test::kAdmin}});
  EXPECT_EQ(with_admin_token.status, 400);
  EXPECT_NE(with_admin_token.error().find("the local socket takes no token"), std::string::npos)
      << with_admin_token.error();
  Reply claimed = Call("GET", "/v1/whoami", nullptr, Me(),
                       {{"x-remote-user", "admin"}, {"x-corral-user", "admin"}});
  EXPECT_EQ(claimed.body["user"], me_.name);
  EXPECT_EQ(claimed.body["role"], "user");
  // The same request over TCP, without a token, is nobody.
  EXPECT_EQ(Call("GET", "/v1/whoami", nullptr, std::nullopt).status, 401);
  EXPECT_EQ(Call("GET", "/v1/whoami", nullptr, std::nullopt,
                 {{"authorization", std::string("Bearer ") + test::kAdmin}})
                .body["via"],
            "token");
}

TEST_F(LocalCaller, AnUnnamedUidIsRefusedAndAgentsRoutesAreNotForUsers) {
  Reply unnamed =
      Call("GET", "/v1/whoami", nullptr, net::PeerCredentials{4000000123u, 4000000123u, 1});
  EXPECT_EQ(unnamed.status, 401);
  EXPECT_NE(unnamed.error().find("uid 4000000123 has no user name"), std::string::npos);
  EXPECT_EQ(Call("GET", "/v/svc/").status, 400) << "services are the TCP address's";
  Reply registered = Call("POST", "/v1/agent/register",
                          Json{{"name", "n1"},
                               {"address", "n1:7071"},
                               {"cpu_milli", 8000},
                               {"memory_mb", 16000},
                               {"gpus", Json::array()},
                               {"protocol", kAgentProtocol}});
  EXPECT_EQ(registered.status, 403) << registered.body.dump();
  EXPECT_NE(registered.error().find("takes its credential, not a Unix user"), std::string::npos);
}

// A request a node's agent forwarded from its own local socket (api/forwarded.h): the uid in the
// path is taken only with a current node credential, and is then that Unix user as on the
// head's socket.
class ForwardedCaller : public LocalCaller {
 protected:
  void SetUp() override {
    LocalCaller::SetUp();
    Reply registered = Call("POST", "/v1/agent/register",
                            Json{{"name", "n1"},
                                 {"address", "n1:7071"},
                                 {"cpu_milli", 8000},
                                 {"memory_mb", 16000},
                                 {"gpus", Json::array()},
                                 {"protocol", kAgentProtocol}},
                            std::nullopt, Bearer(test::kJoin));
    ASSERT_EQ(registered.status, 200) << registered.body.dump();
    node_ = registered.body.value("node_token", "");
    ASSERT_FALSE(node_.empty()) << registered.body.dump();
  }
  static std::map<std::string, std::string> Bearer(const std::string& secret) {
    return {{"authorization", "Bearer " + secret}};
  }
  // `method` of `path` as the node's agent forwards it for `uid`, with `bearer`.
  Reply Forwarded(const std::string& bearer, const std::string& method, const std::string& path,
                  const Json& body = nullptr, uint32_t uid = ::getuid()) {
    return Call(method, "/v1/forwarded/" + std::to_string(uid) + path, body, std::nullopt,
                bearer.empty() ? std::map<std::string, std::string>{} : Bearer(bearer));
  }
  std::string node_;
};

TEST_F(ForwardedCaller, ANodesCredentialForwardsItsUnixUserWhoGetsNoMore) {
  Reply who = Forwarded(node_, "GET", "/v1/whoami");
  ASSERT_EQ(who.status, 200) << who.body.dump();
  EXPECT_EQ(who.body["user"], me_.name);
  EXPECT_EQ(who.body["role"], "user");
  EXPECT_EQ(who.body["via"], "node_socket");
  EXPECT_EQ(who.body["uid"], ::getuid());
  Reply mine = Forwarded(node_, "POST", "/v1/jobs", Json{{"spec", {{"command", {"true"}}}}});
  ASSERT_EQ(mine.status, 201) << mine.body.dump();
  EXPECT_EQ(mine.body["job"]["owner"], me_.name);
  Reply as_other = Forwarded(node_, "POST", "/v1/jobs",
                             Json{{"spec", {{"command", {"true"}}}}, {"user", "someone-else"}});
  EXPECT_EQ(as_other.status, 403) << as_other.body.dump();
  // Root forwarded is the plain user root: no mapping names one of its groups.
  Reply root = Forwarded(node_, "GET", "/v1/whoami", nullptr, 0);
  ASSERT_EQ(root.status, 200) << root.body.dump();
  EXPECT_EQ(root.body["user"], "root");
  EXPECT_EQ(root.body["role"], "user");
  // A mapped group gives its role to a forwarded user as to a local one.
  auto roles = ParseUnixGroupRoles({me_.groups.front() + "=admin"});
  ASSERT_TRUE(roles.ok());
  api_->SetUnixGroupRoles(*roles);
  EXPECT_EQ(Forwarded(node_, "GET", "/v1/whoami").body["role"], "admin");
}

TEST_F(ForwardedCaller, OnlyACurrentNodesCredentialVouchesForAUser) {
  Reply admin = Forwarded(test::kAdmin, "GET", "/v1/whoami");
  EXPECT_EQ(admin.status, 403) << "a user's token, even an admin's, vouches for nobody";
  EXPECT_NE(admin.error().find("only from a node's credential"), std::string::npos)
      << admin.error();
  EXPECT_EQ(Forwarded(test::kJoin, "GET", "/v1/whoami").status, 403) << "the join token";
  EXPECT_EQ(Forwarded("", "GET", "/v1/whoami").status, 401);
  EXPECT_EQ(Forwarded("not-a-credential", "GET", "/v1/whoami").status, 401);
  // A removed node's credential forwards no one.
  ASSERT_EQ(Call("DELETE", "/v1/nodes/n1", nullptr, std::nullopt, Bearer(test::kAdmin)).status,
            200);
  Reply removed = Forwarded(node_, "GET", "/v1/whoami");
  EXPECT_EQ(removed.status, 401) << removed.body.dump();
  EXPECT_NE(removed.error().find("the forwarding node's credential"), std::string::npos)
      << removed.error();
}

TEST_F(ForwardedCaller, TheRouteCarriesOneUsersApiRequestAndNothingElse) {
  // Over the head's own socket, whose caller is its Unix user, the route is refused.
  Reply on_socket = Call("GET", "/v1/forwarded/0/v1/whoami", nullptr, Me(), Bearer(node_));
  EXPECT_EQ(on_socket.status, 400) << on_socket.body.dump();
  EXPECT_EQ(Forwarded(node_, "GET", "/v1/forwarded/0/v1/whoami").status, 400) << "twice";
  EXPECT_EQ(Forwarded(node_, "POST", "/v1/agent/sync", Json::object()).status, 400);
  EXPECT_EQ(Forwarded(node_, "GET", "/metrics").status, 400);
  EXPECT_EQ(Call("GET", "/v1/forwarded/abc/v1/whoami", nullptr, std::nullopt, Bearer(node_)).status,
            400);
  EXPECT_EQ(Call("GET", "/v1/forwarded/99999999999/v1/whoami", nullptr, std::nullopt, Bearer(node_))
                .status,
            400);
  // A node's credential without the route is still only an agent's.
  EXPECT_EQ(Call("GET", "/v1/whoami", nullptr, std::nullopt, Bearer(node_)).status, 403);
}

TEST(StandbySocket, AStandbysSocketNamesTheLeaderInsteadOfRedirectingToIt) {
  LeaderGate gate("http://self:7070");
  gate.SetLeaderUrl("http://leader:7070");
  auto ask = [&gate](std::optional<net::PeerCredentials> peer) {
    net::HttpRequest req;
    req.method = "GET";
    req.target = req.path = "/v1/jobs";
    req.peer = peer;
    std::promise<net::HttpResponse> p;
    gate.Handle(req, [&p](net::HttpResponse r) { p.set_value(std::move(r)); });
    return p.get_future().get();
  };
  net::HttpResponse local = ask(net::PeerCredentials{1001, 1001, 7});
  EXPECT_EQ(local.status, 409);
  Json body = Json::parse(local.body, nullptr, false);
  EXPECT_EQ(body["error"]["code"], "standby");
  EXPECT_NE(body["error"]["message"].get<std::string>().find("http://leader:7070"),
            std::string::npos);
  EXPECT_EQ(local.headers.count("Location"), 0u);
  net::HttpResponse tcp = ask(std::nullopt);
  EXPECT_EQ(tcp.status, 307);
  EXPECT_EQ(tcp.headers["Location"], "http://leader:7070/v1/jobs");
  // With no leader known yet, both are told to retry (it may be this head next).
  gate.SetLeaderUrl("");
  EXPECT_EQ(ask(net::PeerCredentials{1001, 1001, 7}).status, 503);
}

}  // namespace
}  // namespace corral::api
