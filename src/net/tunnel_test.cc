// HttpServer's takeover (tunnel.h): connections under the prefix leave the server and are
// answered or spliced to an upstream, the rest are served as before.
#include "net/tunnel.h"

#include <gtest/gtest.h>

#include "net/http_client.h"
#include "net/http_server.h"
#include "net/http_test_util.h"

namespace corral::net {
namespace {

using namespace std::chrono_literals;
using namespace http_test;

TEST(Tunnel, TakenConnectionsAreSplicedOrAnsweredAndTheRestServed) {
  TestServer upstream(EchoHandler());
  std::string upstream_url = upstream.url();
  HttpServerOptions o;
  o.takeover_prefix = "/s/";
  o.takeover = [upstream_url](HttpRequest req, std::shared_ptr<TakenConnection> conn) {
    EXPECT_FALSE(conn->Encrypted());
    if (req.path == "/s/refused") return conn->Answer(JsonError(403, "forbidden", "not yours"));
    auto headers = req.headers;
    headers.erase("authorization");
    headers["x-spliced"] = "1";
    headers["connection"] = "close";
    conn->Splice(upstream_url, nullptr,
                 SerializeRequest(req.method, req.target + "&via=front", headers, req.body), 5s);
  };
  TestServer front(EchoHandler(), o);
  HttpClient client(front.url(), "secret");

  auto spliced = client.Request("POST", "/s/42/api?x=1", "payload", 5s);
  ASSERT_TRUE(spliced.ok()) << spliced.status().ToString();
  EXPECT_EQ(spliced->status, 200);
  auto echoed = nlohmann::json::parse(spliced->body);
  EXPECT_EQ(echoed["target"], "/s/42/api?x=1&via=front");
  EXPECT_EQ(echoed["body"], "payload");
  EXPECT_EQ(echoed["headers"]["x-spliced"], "1");
  EXPECT_EQ(echoed["token"], "") << "the front's credential stays at the front";

  auto refused = client.Request("GET", "/s/refused", "", 5s);
  ASSERT_TRUE(refused.ok()) << refused.status().ToString();
  EXPECT_EQ(refused->status, 403);
  EXPECT_NE(refused->body.find("not yours"), std::string::npos);

  auto served = client.Request("GET", "/v1/other", "", 5s);
  ASSERT_TRUE(served.ok()) << served.status().ToString();
  EXPECT_EQ(nlohmann::json::parse(served->body)["path"], "/v1/other");
  EXPECT_TRUE(WaitUntil([&] { return front.server.ConnectionCount() <= 1; }));
}

TEST(Tunnel, AnUpstreamThatCannotBeReachedIsA502) {
  HttpServerOptions o;
  o.takeover_prefix = "/s/";
  o.takeover = [](HttpRequest req, std::shared_ptr<TakenConnection> conn) {
    conn->Splice("http://127.0.0.1:1", nullptr, SerializeRequest("GET", req.target, {}, ""), 5s);
  };
  TestServer front(EchoHandler(), o);
  HttpClient client(front.url(), "");
  auto r = client.Request("GET", "/s/1/", "", 5s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 502);
  EXPECT_NE(r->body.find("127.0.0.1:1"), std::string::npos) << r->body;
}

TEST(Tunnel, CookiesAndRequests) {
  EXPECT_EQ(CookieValue("a=1; corral_session=xyz; b=2", "corral_session"), "xyz");
  EXPECT_EQ(CookieValue("a=1", "corral_session"), "");
  EXPECT_EQ(CookieWithout("a=1; corral_session=xyz; b=2", "corral_session"), "a=1; b=2");
  EXPECT_EQ(CookieWithout("corral_session=xyz", "corral_session"), "");
  EXPECT_EQ(SerializeRequest("POST", "/x", {{"host", "h"}, {"content-length", "99"}}, "ab"),
            "POST /x HTTP/1.1\r\nhost: h\r\ncontent-length: 2\r\n\r\nab");
  EXPECT_EQ(SerializeRequest("GET", "/x", {{"evil", "a\r\nb"}}, ""), "GET /x HTTP/1.1\r\n\r\n");
}

}  // namespace
}  // namespace corral::net
