// A service survives its head's failover (docs/services.md, "Failover"): two `corral head`s on
// one PostgreSQL, one agent that follows both, a 2-replica service of real HTTP servers
// (Python's http.server). While the first head leads, the standby answers a request to
// /v/NAME/ with a redirect to the leader; the leader is SIGKILLed; the standby takes over and
// answers /v/NAME/ itself, from the same replicas (the same jobs and processes: they kept running),
// whose addresses it knows from the durable state and whose readiness it probes afresh.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "ha_cluster.h"
#include "net/http_client.h"
#include "service_cluster.h"
#include "testing/pg_server.h"

namespace corral::testing {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// What answered GET /v/echo/whoami through the head at `url`: its status, and the replica's
// job and pid (kSlowReplica's answer).
struct Answer {
  int status = 0;
  std::string replica;  // "JOB/PID"
};

Answer AskThrough(const std::string& url, const std::string& token) {
  net::HttpClient http(url, token);
  auto r = http.Get("/v/echo/whoami", std::chrono::seconds(5));
  if (!r.ok()) return {};
  Answer a{r->status, ""};
  Json j = Json::parse(r->body, nullptr, false);
  if (r->status == 200 && j.is_object()) {
    a.replica = j.value("job", "") + "/" + std::to_string(j.value("pid", 0));
  }
  return a;
}

TEST(ServiceFailover, TheStandbyServesAServiceFromItsRunningReplicasAfterTheLeadersSigkill) {
  if (std::string why = PgServer::Unavailable(); !why.empty()) GTEST_SKIP() << why;
  auto server = PgServer::Start();
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto url = (*server)->CreateDatabase("corral");
  ASSERT_TRUE(url.ok()) << url.status().ToString();

  HaCluster c(*url, 2);
  c.StartHead(0);
  ASSERT_TRUE(WaitUntil(20000, [&] { return c.LogSays(0, "listening on"); }))
      << Slurp(c.HeadLog(0));
  c.ShareTokens(0, 1);
  c.StartHead(1);
  ASSERT_TRUE(WaitUntil(20000, [&] { return c.LogSays(1, "standby on"); })) << Slurp(c.HeadLog(1));
  ASSERT_EQ(c.Leader(), 0);
  // Ports of this suite's own (the other service suites take 10000-16999).
  c.StartAgent(1, 4, {"--port-range", "17400-17499"});
  ASSERT_TRUE(WaitUntil(30000, [&] {
    Json nodes = Json::parse(c.Corral({"nodes", "-o", "json"}).out, nullptr, false);
    if (nodes.is_object()) nodes = nodes.value("nodes", Json::array());
    return nodes.is_array() && nodes.size() == 1 && nodes[0].value("state", "") == "ready";
  }));

  const std::string svc = c.dir() + "/svc";
  std::filesystem::create_directories(svc);
  std::filesystem::permissions(svc, std::filesystem::perms::all);
  std::ofstream(svc + "/server.py") << kSlowReplica;
  std::filesystem::permissions(svc + "/server.py", std::filesystem::perms::all);
  auto served = c.Corral({"serve", "echo", "--replicas", "2", "--port", "0", "--health", "/health",
                          "--", "/usr/bin/python3", svc + "/server.py"});
  ASSERT_EQ(served.exit_code, 0) << served.err;

  // Both replicas answer through the leader.
  const std::string token = c.Token();
  std::set<std::string> before;
  ASSERT_TRUE(WaitUntil(60000, [&] {
    Answer a = AskThrough(c.url(0), token);
    if (a.status == 200) before.insert(a.replica);
    return before.size() == 2;
  })) << Slurp(c.HeadLog(0));
  // The standby sends a service's callers to the leader.
  {
    net::HttpClient standby(c.url(1), token);
    auto r = standby.Get("/v/echo/whoami", std::chrono::seconds(5));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 307);
    EXPECT_EQ(r->headers["location"], c.url(0) + "/v/echo/whoami");
  }

  c.KillHead(0);
  const auto killed = Clock::now();
  ASSERT_TRUE(WaitUntil(15000, [&] { return c.Leader() == 1; })) << Slurp(c.HeadLog(1));
  Answer first;
  ASSERT_TRUE(WaitUntil(30000, [&] { return (first = AskThrough(c.url(1), token)).status == 200; }))
      << "the new leader does not serve /v/echo/: " << first.status << "\n"
      << Slurp(c.HeadLog(1));
  const double served_after = std::chrono::duration<double>(Clock::now() - killed).count();
  std::cout << "[svc-failover] the new leader served /v/echo/ " << served_after
            << " s after the leader's SIGKILL" << std::endl;
  EXPECT_LT(served_after, 20.0);

  // Every request now succeeds, answered by the replicas that ran before: no replica was
  // replaced, and both serve again (the new head learned both addresses and readiness).
  std::set<std::string> after;
  int failed = 0;
  for (int i = 0; i < 40; ++i) {
    Answer a = AskThrough(c.url(1), token);
    if (a.status == 200) {
      after.insert(a.replica);
    } else {
      ++failed;
    }
  }
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(after, before) << "the same replicas' jobs and processes answer";
  Json show = Json::parse(c.Corral({"services", "show", "echo", "-o", "json"}).out, nullptr, false)
                  .value("service", Json::object());
  int running = 0, ready = 0;
  for (const Json& r : show.value("replicas", Json::array())) {
    running += r.value("running", false) ? 1 : 0;
    ready += r.value("ready", false) ? 1 : 0;
  }
  EXPECT_EQ(running, 2) << show.dump();
  EXPECT_EQ(ready, 2) << show.dump();
  // A run outlives its agent by design: the replicas are stopped before the agent is.
  ASSERT_EQ(c.Corral({"services", "rm", "echo"}).exit_code, 0);
  EXPECT_TRUE(WaitUntil(30000, [&] {
    Json jobs =
        Json::parse(c.Corral({"jobs", "--state", "pending,scheduled,running", "-o", "json"}).out,
                    nullptr, false);
    return jobs.is_array() && jobs.empty();
  }));
}

}  // namespace
}  // namespace corral::testing
