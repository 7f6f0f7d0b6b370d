// CliMain end to end over real HTTP on loopback: the HttpTransport adapter (token, headers,
// error bodies) and the "cannot reach" message. The head is a canned net::HttpServer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <mutex>
#include <sstream>

#include "cli/cli.h"
#include "core/codec.h"
#include "net/http_server.h"

namespace corral::cli {
namespace {

using ::testing::HasSubstr;

class CliHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<net::HttpServer>(
        [this](net::HttpRequest req, net::Responder respond) { respond(Handle(req)); }, 1);
    auto port = server_->Listen("127.0.0.1", 0);
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    server_->Start();
    addr_ = "http://127.0.0.1:" + std::to_string(*port);
    ::setenv("CORRAL_ADDR", addr_.c_str(), 1);
    ::setenv("CORRAL_TOKEN", "tok", 1);
    ::setenv("USER", "ana", 1);
    ::setenv("HOME", "/nonexistent-corral-home", 1);
    ::unsetenv("CORRAL_CONFIG");
  }
  void TearDown() override { server_->Stop(); }

  net::HttpResponse Handle(const net::HttpRequest& req) {
    if (req.BearerToken() != "tok") return net::JsonError(401, "unauthenticated", "bad token");
    if (req.method == "POST" && req.path == "/v1/jobs") {
      std::lock_guard<std::mutex> lock(mu_);
      last_body_ = req.body;
      return {201, "application/json", R"({"job": {"id": 11}})", {}};
    }
    if (req.method == "GET" && req.path == "/v1/jobs/11") {
      Job job;
      job.id = 11;
      job.state = JobState::kRunning;
      corral::Run run;
      run.attempt = 1;
      run.placement = {ReplicaPlacement{}};
      run.placement[0].node = "n1";
      run.exit_codes = {kNotExited};
      job.runs = {run};
      return {200, "application/json", Json{{"job", ToJson(job)}}.dump(), {}};
    }
    if (req.path == "/v1/jobs/11/logs") {
      int64_t offset = std::stoll(req.query.at("offset"));
      net::HttpResponse r{200, "text/plain", offset == 0 ? "line 1\n" : "", {}};
      r.headers["X-Corral-Next-Offset"] = offset == 0 ? "7" : "7";
      r.headers["X-Corral-Job-State"] = offset == 0 ? "running" : "succeeded";
      return r;
    }
    return net::JsonError(404, "not_found", "job 12 not found");
  }

  std::unique_ptr<net::HttpServer> server_;
  std::string addr_;
  std::mutex mu_;
  std::string last_body_;  // GUARDED_BY(mu_): written on the server's I/O thread
};

TEST_F(CliHttpTest, SubmitLogsAndErrors) {
  std::ostringstream out, err;
  ASSERT_EQ(CliMain("submit", {"--parsable", "--gpus", "2", "--user", "ana", "--", "echo", "hi"},
                    out, err),
            0)
      << err.str();
  EXPECT_EQ(out.str(), "11\n");
  {
    std::lock_guard<std::mutex> lock(mu_);
    EXPECT_THAT(last_body_, HasSubstr(R"("user":"ana")"));
  }

  out.str("");
  ASSERT_EQ(CliMain("logs", {"11", "-f"}, out, err), 0) << err.str();
  EXPECT_EQ(out.str(), "line 1\n");

  out.str("");
  EXPECT_EQ(CliMain("show", {"12"}, out, err), 1);
  EXPECT_EQ(err.str(), "corral show: job 12 not found\n");

  err.str("");
  ::setenv("CORRAL_TOKEN", "wrong", 1);
  EXPECT_EQ(CliMain("cancel", {"11"}, out, err), 1);
  EXPECT_THAT(err.str(), HasSubstr("bad token"));
}

TEST_F(CliHttpTest, UnreachableHeadIsNamed) {
  server_->Stop();
  std::ostringstream out, err;
  EXPECT_EQ(CliMain("jobs", {}, out, err), 1);
  EXPECT_THAT(err.str(), HasSubstr("cannot reach the head at " + addr_ + ": "));
}

TEST(CliMainTest, UsageErrorNeedsNoConfig) {
  ::unsetenv("CORRAL_ADDR");
  ::setenv("HOME", "/nonexistent-corral-home", 1);
  ::unsetenv("CORRAL_CONFIG");
  std::ostringstream out, err;
  EXPECT_EQ(CliMain("jobs", {"--nope"}, out, err), 2);
  EXPECT_THAT(err.str(), HasSubstr("--nope"));
  err.str("");
  EXPECT_EQ(CliMain("jobs", {}, out, err), 1);
  EXPECT_THAT(err.str(), HasSubstr("CORRAL_ADDR"));
}

}  // namespace
}  // namespace corral::cli
