// The PostgreSQL backend against a real server that the test starts (testing/pg_server.h):
// the conformance suite, and what only a networked store has (a lost connection).
#include "store/postgres_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <mutex>
#include <optional>
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
  Result<std::unique_ptr<Store>> Open() override { return OpenStore(url_, ""); }
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
  std::vector<Result<std::unique_ptr<PostgresStore>>> opened;
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

// TryLead until it leads, for up to 2 s: a lock is freed with its session, but asynchronously
// (the backend exits after the signal; meanwhile a lapsed lease may be ended again, kUnavailable).
Result<std::optional<uint64_t>> LeadOnceFree(PostgresStore& s) {
  for (int i = 0; i < 100; ++i) {
    auto t = s.TryLead();
    if (t.ok() ? t->has_value() : t.status().code() != ErrorCode::kUnavailable) return t;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return std::optional<uint64_t>();
}

// Two heads on one database: the first leads term 1 and the second cannot lead while it holds
// the lock. When the first one's session is cut, the second takes the lock and term 2; the
// first one's late commits (after it reconnects) are refused, and nothing of them is stored.
TEST_F(PostgresStoreTest, ADeposedLeadersLateCommitIsRefused) {
  auto a = OpenPostgresStore(backend_.url() + "?application_name=head_a");
  auto b = OpenPostgresStore(backend_.url() + "?application_name=head_b");
  ASSERT_TRUE(a.ok() && b.ok());
  auto ta = (*a)->TryLead();
  ASSERT_TRUE(ta.ok()) << ta.status().ToString();
  ASSERT_EQ(*ta, std::optional<uint64_t>(1));
  auto tb = (*b)->TryLead();
  ASSERT_TRUE(tb.ok()) << tb.status().ToString();
  EXPECT_FALSE(tb->has_value()) << "two leaders at once";
  ASSERT_TRUE((*a)->Commit({PutJob{MakeJob(1)}}).ok());

  auto cut = backend_.Sql(
      "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = "
      "'head_a'");
  ASSERT_TRUE(cut.ok());
  ASSERT_EQ(*cut, "1");
  auto took = LeadOnceFree(**b);
  ASSERT_TRUE(took.ok()) << took.status().ToString();
  ASSERT_EQ(*took, std::optional<uint64_t>(2));
  ASSERT_TRUE((*b)->Commit({PutJob{MakeJob(2)}}).ok());

  Status lost = (*a)->Commit({PutJob{MakeJob(3)}});
  EXPECT_EQ(lost.code(), ErrorCode::kUnavailable) << lost.ToString();
  Status late = (*a)->Commit({PutJob{MakeJob(3)}});
  EXPECT_EQ(late.code(), ErrorCode::kFailedPrecondition) << late.ToString();
  EXPECT_EQ(late.message(),
            "deposed: the store's leadership term is 2, this head led term 1; its writes are "
            "refused");
  auto again = (*a)->TryLead();
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->has_value()) << "the new leader still holds the lock";
  auto st = (*b)->Load();
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  ASSERT_EQ(st->jobs.size(), 2u);
  EXPECT_EQ(st->jobs[1].id, 2u);
  EXPECT_EQ(*backend_.Sql("SELECT term FROM leadership"), "2");
}

// A leader that stops renewing (hung) keeps its session and the lock; a standby with a lease
// ends that session once the lease has lapsed, takes the lock and the next term, and the old
// leader's commits are refused. One that keeps committing (or commits nothing: an empty
// commit renews) is never deposed.
TEST_F(PostgresStoreTest, AStandbyDeposesALeaderWhoseLeaseLapsed) {
  auto a = OpenPostgresStore(backend_.url() + "?application_name=head_a");
  auto b = OpenPostgresStore(backend_.url() + "?application_name=head_b");
  ASSERT_TRUE(a.ok() && b.ok());
  (*a)->SetLease(1500);
  (*b)->SetLease(1500);
  ASSERT_EQ(*(*a)->TryLead(), std::optional<uint64_t>(1));
  for (int i = 0; i < 4; ++i) {  // 2 s of renewals, each inside the lease
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    ASSERT_TRUE((*a)->Commit({}).ok());
    auto t = (*b)->TryLead();
    ASSERT_TRUE(t.ok()) << "a renewing leader was deposed: " << t.status().ToString();
    EXPECT_FALSE(t->has_value());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));  // a goes silent
  auto ended = (*b)->TryLead();
  ASSERT_FALSE(ended.ok());
  EXPECT_EQ(ended.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(ended.status().message().find("has not renewed its lease"), std::string::npos)
      << ended.status().message();
  auto took = LeadOnceFree(**b);
  ASSERT_TRUE(took.ok()) << took.status().ToString();
  ASSERT_EQ(*took, std::optional<uint64_t>(2));
  EXPECT_FALSE((*a)->Commit({PutJob{MakeJob(7)}}).ok()) << "its session was ended";
  Status late = (*a)->Commit({PutJob{MakeJob(7)}});
  EXPECT_EQ(late.code(), ErrorCode::kFailedPrecondition) << late.ToString();
  auto st = (*b)->Load();
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(st->jobs.empty());
}

}  // namespace
}  // namespace corral::store
