// What a node's agent forwards from its local socket (user_socket.h): the caller's uid from the
// kernel into the forwarding route, nothing the caller claims, and the head's answer back.
#include "agentnet/user_socket.h"

#include <gtest/gtest.h>

namespace corral::agentnet {
namespace {

net::HttpRequest OnSocket(const std::string& target, uint32_t uid = 1001) {
  net::HttpRequest req;
  req.method = "GET";
  req.target = target;
  req.path = target.substr(0, target.find('?'));
  req.peer = net::PeerCredentials{uid, uid, 42};
  return req;
}

TEST(UserSocket, ForwardsTheKernelsUidWithTheWholeTarget) {
  auto t = ForwardedTarget(OnSocket("/v1/jobs?state=running&user=bob", 1001));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(*t, "/v1/forwarded/1001/v1/jobs?state=running&user=bob");
  EXPECT_EQ(*ForwardedTarget(OnSocket("/v1/whoami", 0)), "/v1/forwarded/0/v1/whoami");
}

TEST(UserSocket, RefusesATokenAnAgentsRouteAndWhatIsNotTheApi) {
  net::HttpRequest with_token = OnSocket("/v1/whoami");
  with_token.headers["authorization"] = "Bearer some-token";
  auto refused = ForwardedTarget(with_token);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("takes no token"), std::string::npos);
  EXPECT_EQ(ForwardedTarget(OnSocket("/v1/forwarded/0/v1/whoami")).status().code(),
            ErrorCode::kPermissionDenied);
  EXPECT_EQ(ForwardedTarget(OnSocket("/v1/agent/sync")).status().code(),
            ErrorCode::kPermissionDenied);
  EXPECT_EQ(ForwardedTarget(OnSocket("/s/12/tree")).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ForwardedTarget(OnSocket("/metrics")).status().code(), ErrorCode::kNotFound);
}

TEST(UserSocket, RelaysTheHeadsAnswerWithTheHeadersTheCliReads) {
  net::HttpResponse from_head;
  from_head.status = 403;
  from_head.body = R"({"error":{"code":"permission_denied","message":"no"}})";
  from_head.headers = {{"content-type", "text/plain"},
                       {"x-corral-next-offset", "12"},
                       {"connection", "keep-alive"},
                       {"set-cookie", "a=b"}};
  net::HttpResponse out = RelayedAnswer(from_head);
  EXPECT_EQ(out.status, 403);
  EXPECT_EQ(out.body, from_head.body);
  EXPECT_EQ(out.content_type, "text/plain");
  EXPECT_EQ(out.headers, (std::map<std::string, std::string>{{"x-corral-next-offset", "12"}}));
  net::HttpResponse down = RelayedAnswer(Unavailable("connection refused"));
  EXPECT_EQ(down.status, 502);
  EXPECT_NE(down.body.find("connection refused"), std::string::npos);
}

}  // namespace
}  // namespace corral::agentnet
