// `corral whatif` on a live recording: a real head and two agents (2 simulated GPUs each) run
// three dozen short jobs of four users in two queues (quotas 1 and 3) under contention; the
// head's own history, replayed through the simulator with no change, must start the jobs in
// the order the cluster did (Spearman >= 0.95), and swapping the quotas must move each
// queue's wait the expected way. Only an admin may read the history.
#include <gtest/gtest.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cluster_fixture.h"

namespace corral::testing {
namespace {

using Json = nlohmann::json;

TEST(WhatIf, ReplayingTheRecordedHistoryReproducesTheStartOrder) {
  LocalCluster c("whatif", 2, 2);
  ASSERT_EQ(c.Corral({"queues", "set", "a", "--quota", "1"}).exit_code, 0);
  ASSERT_EQ(c.Corral({"queues", "set", "b", "--quota", "3"}).exit_code, 0);
  // Queue a: ana and bob; queue b: cy and dan; run times 0.4 to 1.6 s. Submitted one after
  // the other while the first ones run: most wait, and the quotas decide who goes next.
  const char* kSleeps[] = {"0.4", "0.8", "1.2", "1.6"};
  std::vector<std::string> ids;
  for (int i = 0; i < 36; ++i) {
    const bool a = i % 2 == 0;
    std::string user = a ? (i % 4 == 0 ? "ana" : "bob") : (i % 4 == 1 ? "cy" : "dan");
    ids.push_back(c.Submit({"--user", user, "--queue", a ? "a" : "b", "--gpus", "1", "--cpus",
                            "0.1", "--", "sleep", kSleeps[(i / 2) % 4]}));
  }
  std::map<std::string, std::string> state;
  ASSERT_TRUE(
      WaitAllSucceeded([&](const auto& args) { return c.Corral(args); }, ids, 120000, &state))
      << "the jobs did not all succeed";

  auto replay = c.Corral({"whatif", "--since", "1h", "-o", "json"});
  ASSERT_EQ(replay.exit_code, 0) << replay.err;
  Json r = Json::parse(replay.out);
  EXPECT_EQ(r["jobs"], 36);
  EXPECT_EQ(r["measured_jobs"], 36);
  EXPECT_EQ(r["ranked_jobs"], 36);
  EXPECT_GE(r["spearman"].get<double>(), 0.95) << replay.out;
  ::testing::Test::RecordProperty("spearman", std::to_string(r["spearman"].get<double>()));

  auto swapped = c.Corral(
      {"whatif", "--since", "1h", "--set-quota", "a=3", "--set-quota", "b=1", "-o", "json"});
  ASSERT_EQ(swapped.exit_code, 0) << swapped.err;
  Json s = Json::parse(swapped.out);
  ASSERT_EQ(s["queues"].size(), 2u) << swapped.out;
  const Json& qa = s["queues"][0];
  const Json& qb = s["queues"][1];
  ASSERT_EQ(qa["name"], "a");
  ASSERT_EQ(qb["name"], "b");
  auto wait = [](const Json& q, const char* scenario) {
    return q[scenario]["avg_wait_seconds"].get<double>();
  };
  EXPECT_LT(wait(qa, "changed"), wait(qa, "replayed")) << swapped.out;
  EXPECT_GT(wait(qb, "changed"), wait(qb, "replayed")) << swapped.out;
  EXPECT_EQ(s["users"].size(), 4u);

  // The table for people: both scenarios per queue and per user.
  auto table = c.Corral({"whatif", "--since", "1h", "--set-quota", "a=3"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  std::cout << table.out;
  for (const char* want : {"Spearman", "WAIT changed", "ana", "dan"}) {
    EXPECT_NE(table.out.find(want), std::string::npos) << want << " in\n" << table.out;
  }

  // A user may not read the cluster's history.
  auto token = c.Corral({"token", "create", "--user", "ana"});
  ASSERT_EQ(token.exit_code, 0) << token.err;
  auto as_ana = RunCommand({CorralBin(), "whatif"},
                           {{"CORRAL_ADDR", c.addr()},
                            {"CORRAL_TOKEN", token.out.substr(0, token.out.find('\n'))},
                            {"CORRAL_CONFIG", c.dir() + "/none.json"}});
  EXPECT_EQ(as_ana.exit_code, 1);
  EXPECT_NE(as_ana.err.find("only an admin"), std::string::npos) << as_ana.err;
}

}  // namespace
}  // namespace corral::testing
