// The PostgreSQL backend against a real server that the test starts (testing/pg_server.h):
// the conformance suite, and what only a networked store has (a lost connection).
#include "store/postgres_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <thread>

#include "store/store_conformance_test.h"
#include "testing/pg_server.h"

namespace corral::store {
namespace {

using corral::testing::PgServer;

// One server per test process (ctest runs each test in its own), stopped at exit.
class PgEnvironment final : public ::testing::Environment {
 public:
  static PgEnvironment* Get() {
    static PgEnvironment* env =
        static_cast<PgEnvironment*>(::testing::AddGlobalTestEnvironment(new PgEnvironment));
    return env;
  }
  Result<PgServer*> Server() {
    if (!server_) {
      auto s = PgServer::Start();
      if (!s.ok()) return s.status();
      server_ = std::move(*s);
    }
    return server_.get();
  }
  void TearDown() override { server_.reset(); }

 private:
  std::unique_ptr<PgServer> server_;
};
[[maybe_unused]] PgEnvironment* const kRegistered = PgEnvironment::Get();

class PostgresBackend final : public StoreBackend {
 public:
  std::string SkipReason() override { return PgServer::Unavailable(); }
  Status Prepare(const std::string& name) override {
    auto server = PgEnvironment::Get()->Server();
    if (!server.ok()) return server.status();
    server_ = *server;
    db_ = name;
    std::transform(db_.begin(), db_.end(), db_.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    auto url = server_->CreateDatabase(db_);
    if (!url.ok()) return url.status();
    url_ = *url;
    return Status::Ok();
  }
  Result<std::unique_ptr<Store>> Open() override { return OpenPostgresStore(url_); }
  Result<std::string> Sql(const std::string& sql) override { return server_->Query(db_, sql); }
  std::string SchemaV1() override {
    return R"(
      CREATE TABLE jobs (id BIGINT PRIMARY KEY, state TEXT NOT NULL, doc TEXT NOT NULL);
      CREATE TABLE nodes (name TEXT PRIMARY KEY, doc TEXT NOT NULL);
      CREATE TABLE queues (name TEXT PRIMARY KEY, doc TEXT NOT NULL);
      CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE changes (revision BIGINT PRIMARY KEY, doc TEXT NOT NULL);
    )";
  }
  std::string IndexExists(const std::string& name) override {
    return "SELECT count(*) FROM pg_indexes WHERE indexname = '" + name + "'";
  }
  const std::string& url() const { return url_; }
  const std::string& db() const { return db_; }
  PgServer* server() const { return server_; }

 private:
  PgServer* server_ = nullptr;
  std::string db_;
  std::string url_;
};

INSTANTIATE_TEST_SUITE_P(Postgres, StoreConformance,
                         ::testing::Values(BackendParam{
                             "postgres", [] { return std::make_unique<PostgresBackend>(); }}),
                         BackendName);

Job MakeJob(JobId id) {
  Job j;
  j.id = id;
  j.owner = "ana";
  j.spec.command = {"true"};
  return j;
}

class PostgresStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = backend_.SkipReason(); !why.empty()) GTEST_SKIP() << why;
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    Status st = backend_.Prepare(name);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  // Ends every other session on the test's database, as a server restart or a network cut
  // would from the client's side.
  void DropConnections() {
    auto r = backend_.Sql(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '" +
        backend_.db() + "' AND pid <> pg_backend_pid()");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(*r, "1");
  }
  PostgresBackend backend_;
};

// A Commit on a connection the server dropped fails naming the loss; the next call reconnects
// and works, and the failed commit left nothing.
TEST_F(PostgresStoreTest, ALostConnectionFailsTheCommitAndTheNextCallReconnects) {
  auto s = OpenPostgresStore(backend_.url());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_TRUE((*s)->Commit({PutJob{MakeJob(1)}}).ok());
  DropConnections();
  Status lost = (*s)->Commit({PutJob{MakeJob(2)}});
  ASSERT_FALSE(lost.ok());
  EXPECT_EQ(lost.code(), ErrorCode::kUnavailable);
  EXPECT_NE(lost.message().find("lost the connection to PostgreSQL at 127.0.0.1:"),
            std::string::npos)
      << lost.message();
  Status again = (*s)->Commit({PutJob{MakeJob(3)}});
  ASSERT_TRUE(again.ok()) << again.ToString();
  auto st = (*s)->Load();
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  ASSERT_EQ(st->jobs.size(), 2u);
  EXPECT_EQ(st->jobs[0].id, 1u);
  EXPECT_EQ(st->jobs[1].id, 3u);
  // Reads reconnect the same way.
  DropConnections();
  EXPECT_FALSE((*s)->ReadChanges(0, 10).ok());
  EXPECT_TRUE((*s)->ReadChanges(0, 10).ok());
}

TEST_F(PostgresStoreTest, AMissingDatabaseIsAClearError) {
  auto s = OpenPostgresStore(backend_.server()->Url("no_such_db"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("cannot connect to PostgreSQL at 127.0.0.1:"),
            std::string::npos);
  EXPECT_NE(s.status().message().find("no_such_db"), std::string::npos) << s.status().message();
}

// Two heads starting at once on a fresh database migrate it once (the advisory lock).
TEST_F(PostgresStoreTest, ConcurrentOpensMigrateOnce) {
  std::vector<Result<std::unique_ptr<Store>>> opened;
  std::vector<std::thread> threads;
  std::mutex mu;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      auto s = OpenPostgresStore(backend_.url());
      std::lock_guard lock(mu);
      opened.push_back(std::move(s));
    });
  }
  for (auto& t : threads) t.join();
  for (auto& s : opened) EXPECT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(*backend_.Sql("SELECT count(*) FROM schema_version"), "1");
  EXPECT_EQ(*backend_.Sql("SELECT version FROM schema_version"), std::to_string(kSchemaVersion));
}

}  // namespace
}  // namespace corral::store
