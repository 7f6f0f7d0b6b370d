// The embedded dashboard as the head serves it: the files, their types and caching headers,
// 304 on a matching ETag, 404 for names not embedded, and every file the page loads present.
#include "web/web_handler.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "web/web_assets.h"

namespace corral::web {
namespace {

net::HttpResponse Get(const std::string& path, const std::string& if_none_match = "",
                      const std::string& method = "GET") {
  net::HttpRequest req;
  req.method = method;
  req.path = path;
  req.target = path;
  if (!if_none_match.empty()) req.headers["if-none-match"] = if_none_match;
  return ServeWeb(req);
}

TEST(WebHandler, ServesTheIndexAtTheRootWithItsTypeAndHeaders) {
  auto r = Get("/");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/html; charset=utf-8");
  EXPECT_NE(r.body.find("<title>Corral</title>"), std::string::npos);
  EXPECT_EQ(r.headers["Cache-Control"], "no-cache");
  EXPECT_EQ(r.headers["X-Content-Type-Options"], "nosniff");
  EXPECT_NE(r.headers["Content-Security-Policy"].find("script-src 'self'"), std::string::npos);
  ASSERT_GE(r.headers["ETag"].size(), 3u);
  EXPECT_EQ(r.headers["ETag"].front(), '"');
}

TEST(WebHandler, ScriptsAndStylesHaveTheirContentTypes) {
  EXPECT_EQ(Get("/ui/app.js").content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(Get("/ui/style.css").content_type, "text/css; charset=utf-8");
  EXPECT_EQ(Get("/ui/favicon.svg").content_type, "image/svg+xml");
}

TEST(WebHandler, AMatchingETagIsAnswered304WithoutABody) {
  std::string etag = Get("/ui/app.js").headers["ETag"];
  auto r = Get("/ui/app.js", etag);
  EXPECT_EQ(r.status, 304);
  EXPECT_TRUE(r.body.empty());
  EXPECT_EQ(Get("/ui/app.js", "\"other\", W/" + etag).status, 304);
  EXPECT_EQ(Get("/ui/app.js", "\"other\"").status, 200);
  // Each file has its own tag: a changed file is fetched again.
  EXPECT_NE(etag, Get("/ui/api.js").headers["ETag"]);
}

TEST(WebHandler, UnknownNamesUnderThePrefixAre404AndOtherMethods405) {
  auto r = Get("/ui/nope.js");
  EXPECT_EQ(r.status, 404);
  EXPECT_NE(r.body.find("no such file: /ui/nope.js"), std::string::npos);
  EXPECT_EQ(Get("/ui/").status, 404);
  EXPECT_EQ(Get("/ui").status, 404);
  EXPECT_EQ(Get("/ui/../v1/jobs").status, 404);
  EXPECT_EQ(Get("/", "", "POST").status, 405);
  EXPECT_EQ(Get("/", "", "HEAD").status, 200);
}

TEST(WebHandler, ClaimsOnlyTheRootAndItsPrefix) {
  EXPECT_TRUE(IsWebPath("/"));
  EXPECT_TRUE(IsWebPath("/ui/app.js"));
  EXPECT_TRUE(IsWebPath("/ui"));
  EXPECT_FALSE(IsWebPath("/v1/jobs"));
  EXPECT_FALSE(IsWebPath("/metrics"));
  EXPECT_FALSE(IsWebPath("/healthz"));
  EXPECT_FALSE(IsWebPath("/uix"));
}

// Every file the page asks for (index.html's links, the modules' imports) is embedded: a file
// left out of web/ or misspelt would otherwise only show as a blank page.
TEST(WebHandler, EveryFileThePageLoadsIsEmbedded) {
  std::set<std::string> served;
  for (const Asset& a : Assets()) served.insert(std::string(a.path));
  std::regex ref(R"re((?:src|href)="(/ui/[^"]+)"|from "\./([^"]+)")re");
  int refs = 0;
  for (const Asset& a : Assets()) {
    std::string body(a.body);
    for (std::sregex_iterator it(body.begin(), body.end(), ref), end; it != end; ++it) {
      std::string want = (*it)[1].matched ? (*it)[1].str() : "/ui/" + (*it)[2].str();
      EXPECT_TRUE(served.count(want)) << a.path << " loads " << want << ", which is not embedded";
      ++refs;
    }
  }
  EXPECT_GE(refs, 8);
}

}  // namespace
}  // namespace corral::web
