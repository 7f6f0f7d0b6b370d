// The head on PostgreSQL, end to end: a throwaway server (testing/pg_server.h), the real
// `corral head --store postgres://...` and agent processes, driven through the real CLI.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cluster_fixture.h"
#include "store/store.h"
#include "testing/pg_server.h"

namespace corral::testing {
namespace {

using Json = nlohmann::json;

std::unique_ptr<PgServer> StartServer() {
  auto s = PgServer::Start();
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(*s) : nullptr;
}

std::vector<Json> JobEvents(const LocalCluster& c, const std::string& id) {
  auto r = c.Corral({"events", "-o", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<Json> out;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    Json e = Json::parse(line, nullptr, false);
    if (e.value("kind", "") == "job" && e["key"].dump() == id) out.push_back(e);
  }
  return out;
}

TEST(PgCluster, AJobAndItsHistorySurviveAHeadSigkill) {
  if (std::string why = PgServer::Unavailable(); !why.empty()) GTEST_SKIP() << why;
  auto server = StartServer();
  ASSERT_TRUE(server);
  auto url = server->CreateDatabase("corral");
  ASSERT_TRUE(url.ok()) << url.status().ToString();

  LocalCluster c("pg", 1, 1, {"--store", *url});
  std::string id = c.Submit({"--gpus", "1", "--", "/bin/sh", "-c", "echo hello-pg"});
  auto w = c.Corral({"wait", id, "--timeout", "60s"});
  ASSERT_EQ(w.exit_code, 0) << w.out << w.err;
  auto show = [&] { return Json::parse(c.Corral({"show", id, "-o", "json"}).out, nullptr, false); };
  Json before = show();
  ASSERT_EQ(before["state"], "succeeded") << before.dump();
  std::vector<Json> history = JobEvents(c, id);
  ASSERT_GE(history.size(), 3u) << "submitted, placed/running, succeeded";
  // The rows are in PostgreSQL, and the head wrote no SQLite file.
  EXPECT_EQ(*server->Query("corral",
                           "SELECT (SELECT count(*) FROM changes WHERE doc LIKE '%hello-pg%') + "
                           "(SELECT count(*) FROM jobs WHERE doc LIKE '%hello-pg%') > 0"),
            "t");
  EXPECT_FALSE(std::filesystem::exists(c.head_dir() + "/corral.db"));

  c.KillHead(SIGKILL);
  c.StartHead();
  Json after = show();
  EXPECT_EQ(after["state"], "succeeded") << after.dump();
  EXPECT_EQ(after["exit_code"], 0);
  EXPECT_EQ(after["runs"], before["runs"]);
  EXPECT_EQ(after["submitted_at"], before["submitted_at"]);
  EXPECT_EQ(JobEvents(c, id), history) << "the job's change history is kept across the restart";
  EXPECT_EQ(c.Corral({"logs", id}).out, "hello-pg\n");
  // And the restarted head keeps working on the same database.
  std::string next = c.Submit({"--", "true"});
  EXPECT_EQ(c.Corral({"wait", next, "--timeout", "60s"}).exit_code, 0);
}

// --migrate-only brings a fresh database to the current schema and exits; a database a newer
// corral wrote stops the head with the reason.
TEST(PgCluster, MigrateOnlyAndANewerSchemaIsRefused) {
  if (std::string why = PgServer::Unavailable(); !why.empty()) GTEST_SKIP() << why;
  auto server = StartServer();
  ASSERT_TRUE(server);
  auto url = server->CreateDatabase("corral");
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  std::string dir = (std::filesystem::temp_directory_path() /
                     ("corral-it-pg-migrate-" + std::to_string(getpid())))
                        .string();
  auto m = RunCommand({CorralBin(), "head", "--state-dir", dir, "--store", *url, "--migrate-only"});
  EXPECT_EQ(m.exit_code, 0) << m.out << m.err;
  EXPECT_NE(m.out.find("schema is at version " + std::to_string(store::kSchemaVersion)),
            std::string::npos)
      << m.out;
  EXPECT_EQ(*server->Query("corral", "SELECT version FROM schema_version"),
            std::to_string(store::kSchemaVersion));

  ASSERT_TRUE(server->Query("corral", "UPDATE schema_version SET version = 99").ok());
  auto refused = RunCommand(
      {CorralBin(), "head", "--state-dir", dir, "--store", *url, "--listen", "127.0.0.1:0"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("store schema version 99 is newer than this corral (" +
                             std::to_string(store::kSchemaVersion) + "); upgrade corral"),
            std::string::npos)
      << refused.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace corral::testing
