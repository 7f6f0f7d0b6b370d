// Several heads on one PostgreSQL (DESIGN §7, HA), as processes: three `corral head`s, two
// agents and the CLI given the heads' address list. The leader is SIGKILLed while 300
// submissions stream in; a standby must lead within 10 s, and every acknowledged job must
// run and succeed exactly once (each job appends its own id to a file when it starts).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "ha_cluster.h"
#include "testing/pg_server.h"

namespace corral::testing {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

TEST(PgHa, AStandbyLeadsWithin10sOfTheLeadersSigkillAndNoJobIsLostOrRunTwice) {
  if (std::string why = PgServer::Unavailable(); !why.empty()) GTEST_SKIP() << why;
  auto server = PgServer::Start();
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto url = (*server)->CreateDatabase("corral");
  ASSERT_TRUE(url.ok()) << url.status().ToString();

  HaCluster c(*url, 3);
  c.StartHead(0);
  ASSERT_TRUE(WaitUntil(20000, [&] { return c.LogSays(0, "listening on"); }))
      << Slurp(c.HeadLog(0));
  for (int i : {1, 2}) {
    c.ShareTokens(0, i);
    c.StartHead(i);
  }
  ASSERT_TRUE(
      WaitUntil(20000, [&] { return c.LogSays(1, "standby on") && c.LogSays(2, "standby on"); }))
      << Slurp(c.HeadLog(1)) << Slurp(c.HeadLog(2));
  EXPECT_EQ(c.Leader(), 0);
  c.StartAgent(1, 4);
  c.StartAgent(2, 4);
  ASSERT_TRUE(WaitUntil(30000, [&] {
    auto r = c.Corral({"nodes", "-o", "json"});
    Json nodes = Json::parse(r.out, nullptr, false);
    if (nodes.is_object()) nodes = nodes.value("nodes", Json::array());
    int ready = 0;
    for (const auto& n : nodes) ready += n.value("state", "") == "ready";
    return ready == 2;
  }));

  const std::string starts = c.dir() + "/starts";
  constexpr int kJobs = 300;
  std::vector<std::string> acked;
  std::vector<std::string> failures;
  std::atomic<int> submitted{0};
  std::thread submitter([&] {
    for (int i = 0; i < kJobs; ++i) {
      auto r = c.Corral({"submit", "--parsable", "--gpus", "1", "--", "/bin/sh", "-c",
                         "echo $CORRAL_JOB_ID >> " + starts + "; sleep 0.2"});
      std::string id = r.out.substr(0, r.out.find('\n'));
      if (r.exit_code == 0 && !id.empty()) {
        acked.push_back(id);
      } else {
        failures.push_back(r.err);
      }
      ++submitted;
    }
  });
  ASSERT_TRUE(WaitUntil(60000, [&] { return submitted.load() >= kJobs / 3; }));
  c.KillHead(0);
  auto killed_at = Clock::now();
  int leader = -1;
  ASSERT_TRUE(WaitUntil(15000, [&] { return (leader = c.Leader()) > 0; }));
  double takeover_s = std::chrono::duration<double>(Clock::now() - killed_at).count();
  std::cout << "[ha] head" << leader << " leads " << takeover_s << " s after the leader's SIGKILL"
            << std::endl;
  EXPECT_LT(takeover_s, 10.0);
  submitter.join();
  EXPECT_TRUE(failures.empty()) << failures.size()
                                << " submissions failed, the first: " << failures.front();
  EXPECT_EQ(acked.size(), static_cast<size_t>(kJobs));

  // Every acknowledged job succeeds, and the cluster holds no job it did not acknowledge.
  std::map<std::string, std::string> state;
  bool done = WaitAllSucceeded([&](const std::vector<std::string>& a) { return c.Corral(a); },
                               acked, 180000, &state);
  ASSERT_TRUE(done) << "not every acknowledged job succeeded; see " << c.dir();
  EXPECT_EQ(state.size(), acked.size()) << "a retried submission made a second job";
  std::map<std::string, int> runs;
  std::istringstream lines(Slurp(starts));
  for (std::string line; std::getline(lines, line);) ++runs[line];
  for (const auto& id : acked)
    EXPECT_EQ(runs[id], 1) << "job " << id << " started " << runs[id] << " times";
  // The agents kept their runs through the failover: none was lost with a node.
  auto nodes = c.Corral({"nodes", "-o", "json"});
  EXPECT_EQ(nodes.out.find("\"down\""), std::string::npos) << nodes.out;
}

// A leader that hangs (SIGSTOP) keeps its PostgreSQL session, and with it the leader's lock:
// a standby must still take over once the leader's lease lapses, and the old leader, woken,
// must commit nothing (its session was ended and its term superseded) and exit.
TEST(PgHa, AHungLeaderIsDeposedAfterItsLeaseAndCommitsNothingWhenItWakes) {
  if (std::string why = PgServer::Unavailable(); !why.empty()) GTEST_SKIP() << why;
  auto server = PgServer::Start();
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto url = (*server)->CreateDatabase("corral");
  ASSERT_TRUE(url.ok()) << url.status().ToString();

  HaCluster c(*url, 2);
  c.StartHead(0, {"--leader-lease", "3s"});
  ASSERT_TRUE(WaitUntil(20000, [&] { return c.LogSays(0, "listening on"); }))
      << Slurp(c.HeadLog(0));
  c.ShareTokens(0, 1);
  c.StartHead(1, {"--leader-lease", "3s"});
  ASSERT_TRUE(WaitUntil(20000, [&] { return c.LogSays(1, "standby on"); })) << Slurp(c.HeadLog(1));
  c.StartAgent(1, 2);
  auto first = c.Corral({"submit", "--parsable", "--gpus", "1", "--", "true"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  std::string first_id = first.out.substr(0, first.out.find('\n'));
  ASSERT_EQ(c.Corral({"wait", first_id, "--timeout", "60s"}).exit_code, 0);
  // Idle for longer than the lease: an idle leader renews it by itself and keeps leading.
  std::this_thread::sleep_for(std::chrono::seconds(5));
  EXPECT_EQ(c.Leader(), 0) << Slurp(c.HeadLog(1));

  c.SignalHead(0, SIGSTOP);
  auto stopped_at = Clock::now();
  ASSERT_TRUE(WaitUntil(20000, [&] { return c.LogSays(1, "listening on"); }))
      << Slurp(c.HeadLog(1));
  double takeover_s = std::chrono::duration<double>(Clock::now() - stopped_at).count();
  std::cout << "[ha] the standby leads " << takeover_s << " s after the leader hung (lease 3 s)"
            << std::endl;
  EXPECT_GE(takeover_s, 2.0) << "not before the lease could lapse";
  EXPECT_LT(takeover_s, 10.0);
  EXPECT_TRUE(c.LogSays(1, "has not renewed its lease")) << Slurp(c.HeadLog(1));

  c.SignalHead(0, SIGCONT);
  ASSERT_TRUE(WaitUntil(15000, [&] { return c.HeadExited(0); }))
      << "the woken leader keeps serving: " << Slurp(c.HeadLog(0));
  EXPECT_TRUE(c.LogSays(0, "the store failed a commit")) << Slurp(c.HeadLog(0));
  EXPECT_EQ(c.Leader(), 1);
  auto second = c.Corral({"submit", "--parsable", "--gpus", "1", "--", "true"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  std::string second_id = second.out.substr(0, second.out.find('\n'));
  EXPECT_EQ(c.Corral({"wait", second_id, "--timeout", "60s"}).exit_code, 0);
  auto show = c.Corral({"show", first_id, "-o", "json"});
  EXPECT_EQ(Json::parse(show.out, nullptr, false).value("state", ""), "succeeded") << show.out;
}

}  // namespace
}  // namespace corral::testing
