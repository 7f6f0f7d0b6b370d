// `corral usage` end to end: jobs run on a real local cluster, and the report's GPU time,
// job counts and waits follow what ran, by user and by queue.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cluster_fixture.h"

namespace corral::testing {
namespace {

using Json = nlohmann::json;

Json UsageJson(const LocalCluster& c, const std::vector<std::string>& flags) {
  std::vector<std::string> args = {"usage", "-o", "json"};
  args.insert(args.end(), flags.begin(), flags.end());
  auto r = c.Corral(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return Json::parse(r.out, nullptr, false);
}

const Json* Row(const Json& report, const std::string& key) {
  for (const Json& r : report["rows"]) {
    if (r["key"] == key) return &r;
  }
  return nullptr;
}

TEST(UsageCli, ReportsGpuTimeOfFinishedAndRunningJobs) {
  LocalCluster c("usage", 1, 4);
  c.Corral({"queues", "set", "train", "--quota", "4"});
  // 2 GPUs for about 2 s, finished; then 1 GPU in another queue, still running.
  std::string done = c.Submit({"--gpus", "2", "--queue", "train", "--", "sleep", "2"});
  ASSERT_EQ(c.Corral({"wait", done, "--timeout", "60s"}).exit_code, 0);
  std::string running = c.Submit({"--gpus", "1", "--", "sleep", "300"});
  ASSERT_TRUE(WaitUntil(30000, [&] {
    auto r = c.Corral({"show", running, "-o", "json"});
    return Json::parse(r.out, nullptr, false).value("state", "") == "running";
  }));

  Json by_queue = UsageJson(c, {"--by", "queue", "--since", "1h"});
  ASSERT_TRUE(by_queue.is_object());
  const Json* train = Row(by_queue, "train");
  const Json* def = Row(by_queue, "default");
  ASSERT_NE(train, nullptr) << by_queue.dump();
  ASSERT_NE(def, nullptr) << by_queue.dump();
  // `sleep 2` on 2 GPUs: about 4 GPU-seconds (start and exit reports add a little).
  double train_s = (*train)["gpu_seconds"].get<double>();
  EXPECT_GE(train_s, 3.8);
  EXPECT_LE(train_s, 12.0);
  EXPECT_EQ((*train)["jobs"], 1);
  EXPECT_EQ((*train)["started"], 1);
  EXPECT_GE((*train)["avg_wait_seconds"].get<double>(), 0.0);
  EXPECT_LT((*train)["avg_wait_seconds"].get<double>(), 10.0);
  EXPECT_EQ((*def)["jobs"], 1);

  // The running job's GPU time grows while it runs.
  double before = (*def)["gpu_seconds"].get<double>();
  ASSERT_TRUE(WaitUntil(10000, [&] {
    Json again = UsageJson(c, {"--by", "queue"});
    const Json* d = Row(again, "default");
    return d && (*d)["gpu_seconds"].get<double>() >= before + 1.0;
  }));

  // By user: one row for the admin who submitted both, the sum of the queues.
  Json by_user = UsageJson(c, {});
  ASSERT_EQ(by_user["rows"].size(), 1u) << by_user.dump();
  EXPECT_EQ(by_user["rows"][0]["jobs"], 2);
  EXPECT_EQ(by_user["total"]["jobs"], 2);
  EXPECT_GE(by_user["total"]["gpu_seconds"].get<double>(), train_s + before);

  // The table and CSV forms carry the same rows.
  auto table = c.Corral({"usage", "--by", "queue"});
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("train"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("TOTAL"), std::string::npos) << table.out;
  auto csv = c.Corral({"usage", "-o", "csv", "--by", "queue"});
  EXPECT_EQ(csv.out.rfind("queue,gpu_hours,", 0), 0u) << csv.out;

  // Bad input is refused with the flag named.
  auto bad = c.Corral({"usage", "--since", "banana"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--since"), std::string::npos) << bad.err;
  auto api = RunCommand({"/usr/bin/curl", "-s", "-H", "Authorization: Bearer " + c.token(),
                         c.addr() + "/v1/usage?by=color"});
  EXPECT_NE(api.out.find("query 'by': got \\\"color\\\""), std::string::npos) << api.out;
  c.Corral({"cancel", running});
}

}  // namespace
}  // namespace corral::testing
