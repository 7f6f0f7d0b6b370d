// The store on PostgreSQL with synchronous streaming replication, against real servers the
// test starts on loopback (testing/pg_server.h): a primary and a pg_basebackup -R standby
// ("s1", synchronous_standby_names = 'ANY 1 (s1)'), the store on the libpq multi-host
// string of both. What it shows: a commit whose wait for the standby is cut short is never
// acknowledged, and after the standby is promoted every acknowledged change is there; the
// same scenario with that warning ignored loses an acknowledged change (the test can fail);
// a store refuses to lead without a synchronous standby where it must; a multi-host store
// follows the primary to the promoted standby; a standby head whose warm copy applied a
// change that the failover lost loads again when it takes over; and the real `corral head`
// on both hosts: refusing to lead without a synchronous standby, and exiting rather than
// answering a submission whose commit was not replicated.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <sstream>
#include <thread>

#include "cluster_fixture.h"
#include "head/change.h"
#include "head/warm_state.h"
#include "store/postgres_store.h"
#include "testing/pg_server.h"

namespace corral::testing {
namespace {

using store::StoreOptions;

constexpr char kDb[] = "corral";

Job MakeJob(JobId id) {
  Job j;
  j.id = id;
  j.owner = "ana";
  j.spec.command = {"true"};
  return j;
}

// A primary and its synchronous standby s1, a database on both, and the multi-host URL.
class SyncPair : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = PgServer::Unavailable(); !why.empty()) GTEST_SKIP() << why;
    auto p = PgServer::Start();
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    primary_ = std::move(*p);
    ASSERT_TRUE(primary_->CreateDatabase(kDb).ok());
    auto s = PgServer::StartStandby(*primary_, "s1");
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    standby_ = std::move(*s);
    url_ = "postgresql://postgres@127.0.0.1:" + std::to_string(primary_->port()) +
           ",127.0.0.1:" + std::to_string(standby_->port()) + "/" + kDb +
           "?target_session_attrs=read-write&connect_timeout=5";
  }
  void TearDown() override {
    // Every server stops, even a test's SIGSTOPped or stopped one (the destructor's pg_ctl).
    standby_.reset();
    primary_.reset();
  }

  // Set on the primary only (after the base backup): the promoted standby has none, so it
  // commits on its own once it is the primary.
  void MakeS1Synchronous() {
    ASSERT_TRUE(primary_
                    ->Query("postgres",
                            "ALTER SYSTEM SET synchronous_standby_names = 'ANY 1 "
                            "(s1)'")
                    .ok());
    ASSERT_TRUE(primary_->Query("postgres", "SELECT pg_reload_conf()").ok());
    for (int i = 0; i < 300; ++i) {
      auto n = primary_->Query(
          "postgres", "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'quorum'");
      if (n.ok() && *n == "1") return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    FAIL() << "s1 never became a quorum standby";
  }

  // The primary dies; the standby, stopped before, starts again and is promoted.
  void FailOver() {
    ASSERT_TRUE(primary_->Crash().ok());
    ASSERT_TRUE(standby_->Resume().ok());
    Status promoted = standby_->Promote();
    ASSERT_TRUE(promoted.ok()) << promoted.ToString();
  }

  // The backend pid of the session waiting for synchronous replication ("" after 60 s).
  std::string WaitingOnSyncRep() {
    for (int i = 0; i < 600; ++i) {
      auto pid = primary_->Query(
          "postgres", "SELECT pid FROM pg_stat_activity WHERE wait_event = 'SyncRep' LIMIT 1");
      if (pid.ok() && !pid->empty()) return *pid;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return "";
  }

  std::unique_ptr<PgServer> primary_;
  std::unique_ptr<PgServer> standby_;
  std::string url_;
};

// What one run of the cancel scenario saw: the ids acknowledged, whether the cancelled
// commit was acknowledged, and the ids present after the failover.
struct Outcome {
  std::set<JobId> acknowledged;
  std::set<JobId> present;
  Status cancelled_commit;
  std::set<JobId> Lost() const {
    std::set<JobId> lost;
    for (JobId id : acknowledged) {
      if (!present.count(id)) lost.insert(id);
    }
    return lost;
  }
};

class SyncCancel : public SyncPair {
 protected:
  // Job 1 commits (replicated); the standby stops; job 2's commit waits for it and its
  // session is cancelled with pg_cancel_backend, which ends the wait with a warning; the
  // primary dies and the standby is promoted (it never received job 2's WAL).
  void Run(const StoreOptions& options, Outcome* out) {
    MakeS1Synchronous();
    auto s = store::OpenPostgresStore(url_, options);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    auto term = (*s)->TryLead();
    ASSERT_TRUE(term.ok() && term->has_value()) << term.status().ToString();
    ASSERT_TRUE((*s)->Commit({store::PutJob{MakeJob(1)}}).ok());
    out->acknowledged.insert(1);
    ASSERT_TRUE(standby_->Stop().ok());

    auto waiting =
        std::async(std::launch::async, [&] { return (*s)->Commit({store::PutJob{MakeJob(2)}}); });
    std::string pid = WaitingOnSyncRep();
    ASSERT_FALSE(pid.empty()) << "no commit waited for the standby: the session's own "
                                 "synchronous_commit did not override the server's off";
    EXPECT_EQ(waiting.wait_for(std::chrono::milliseconds(500)), std::future_status::timeout);
    ASSERT_TRUE(primary_->Query("postgres", "SELECT pg_cancel_backend(" + pid + ")").ok());
    out->cancelled_commit = waiting.get();
    if (out->cancelled_commit.ok()) out->acknowledged.insert(2);
    // The cancelled commit is visible on the primary, never replicated.
    EXPECT_EQ(*primary_->Query(kDb, "SELECT count(*) FROM jobs WHERE id = 2"), "1");

    FailOver();
    StoreOptions after;
    after.sync_standby = StoreOptions::SyncStandby::kSkip;  // the new primary stands alone
    auto reopened = store::OpenPostgresStore(url_, after);
    ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
    auto loaded = (*reopened)->Load();
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    for (const Job& j : loaded->jobs) out->present.insert(j.id);
  }
};

TEST_F(SyncCancel, ACommitWhoseReplicationWaitIsCancelledIsNotAcknowledgedAndNothingAckedIsLost) {
  Outcome out;
  ASSERT_NO_FATAL_FAILURE(Run(StoreOptions{}, &out));
  EXPECT_EQ(out.cancelled_commit.code(), ErrorCode::kUnavailable)
      << out.cancelled_commit.ToString();
  EXPECT_NE(out.cancelled_commit.message().find("may not have replicated it"), std::string::npos)
      << out.cancelled_commit.message();
  EXPECT_EQ(out.acknowledged, std::set<JobId>{1});
  EXPECT_TRUE(out.Lost().empty());
  EXPECT_EQ(out.present, std::set<JobId>{1});
}

// The negative control: with the warning ignored (as before), the same scenario acknowledges
// job 2 and the failover loses it.
TEST_F(SyncCancel, WithTheWarningIgnoredTheSameScenarioLosesAnAcknowledgedCommit) {
  StoreOptions ignoring;
  ignoring.ignore_unreplicated_commits = true;
  Outcome out;
  ASSERT_NO_FATAL_FAILURE(Run(ignoring, &out));
  EXPECT_TRUE(out.cancelled_commit.ok()) << out.cancelled_commit.ToString();
  EXPECT_EQ(out.Lost(), std::set<JobId>{2});
}

// pg_terminate_backend (how a standby head ends a lapsed leader's session) during the wait:
// the commit fails too, and is not acknowledged.
TEST_F(SyncPair, ACommitWhoseSessionIsTerminatedDuringTheWaitFails) {
  MakeS1Synchronous();
  auto s = store::OpenPostgresStore(url_);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_TRUE(standby_->Stop().ok());
  auto waiting =
      std::async(std::launch::async, [&] { return (*s)->Commit({store::PutJob{MakeJob(5)}}); });
  std::string pid = WaitingOnSyncRep();
  ASSERT_FALSE(pid.empty());
  ASSERT_TRUE(primary_->Query("postgres", "SELECT pg_terminate_backend(" + pid + ")").ok());
  Status st = waiting.get();
  EXPECT_EQ(st.code(), ErrorCode::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find("may not have replicated it"), std::string::npos) << st.message();
}

// The startup check: several hosts and no synchronous standby refuses, naming what is
// missing and the way out; --allow-async-store (kSkip) opens; one host opens unless the
// check is required; a configured standby that does not stream refuses too.
TEST_F(SyncPair, AStoreOnSeveralHostsRefusesToLeadWithoutASynchronousStandby) {
  auto refused = store::OpenPostgresStore(url_);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("synchronous_standby_names is empty"),
            std::string::npos)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find("--allow-async-store"), std::string::npos);

  StoreOptions skip;
  skip.sync_standby = StoreOptions::SyncStandby::kSkip;
  EXPECT_TRUE(store::OpenPostgresStore(url_, skip).ok());
  std::string one_host = primary_->Url(kDb);
  EXPECT_TRUE(store::OpenPostgresStore(one_host).ok());
  StoreOptions require;
  require.sync_standby = StoreOptions::SyncStandby::kRequire;
  EXPECT_EQ(store::OpenPostgresStore(one_host, require).status().code(),
            ErrorCode::kFailedPrecondition);

  ASSERT_NO_FATAL_FAILURE(MakeS1Synchronous());
  auto leads = store::OpenPostgresStore(url_);
  ASSERT_TRUE(leads.ok()) << leads.status().ToString();
  EXPECT_TRUE(store::OpenPostgresStore(one_host, require).ok());

  // A standby head opened while s1 streamed; s1 stops: taking the lock is refused.
  ASSERT_TRUE(standby_->Stop().ok());
  auto t = (*leads)->TryLead();
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(t.status().message().find("none streams as sync or quorum"), std::string::npos)
      << t.status().message();
  EXPECT_EQ(*primary_->Query(kDb, "SELECT term FROM leadership"), "0");
  // Refusing, it did not keep the lock: another session can take it.
  EXPECT_EQ(*primary_->Query(kDb, "SELECT pg_try_advisory_lock(7414050173)"), "t");
}

// A multi-host store follows the primary: after the primary dies and the standby is
// promoted, the commit in flight fails (its outcome unknown) and the next calls reach the
// new primary, where every acknowledged change is, and the leader's term still holds.
TEST_F(SyncPair, AMultiHostStoreFindsThePromotedStandby) {
  MakeS1Synchronous();
  auto s = store::OpenPostgresStore(url_);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(*(*s)->TryLead(), std::optional<uint64_t>(1));
  ASSERT_TRUE((*s)->Commit({store::PutJob{MakeJob(1)}}).ok());
  ASSERT_TRUE(standby_->Stop().ok());  // it has job 1: the commit waited for it
  FailOver();
  EXPECT_FALSE((*s)->Commit({store::PutJob{MakeJob(2)}}).ok());
  Status again;
  for (int i = 0; i < 50; ++i) {  // the next call reconnects; give a loaded machine time
    again = (*s)->Commit({store::PutJob{MakeJob(3)}});
    if (again.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(again.ok()) << again.ToString();
  auto loaded = (*s)->Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  std::set<JobId> ids;
  for (const Job& j : loaded->jobs) ids.insert(j.id);
  EXPECT_EQ(ids, (std::set<JobId>{1, 3}));
  EXPECT_EQ(*standby_->Query(kDb, "SELECT count(*) FROM jobs"), "2");
}

store::ChangeRecord ChangeAt(uint64_t revision) {
  head::Change c;
  c.revision = revision;
  c.at = static_cast<TimeMs>(revision) * 1000;
  c.what = head::HeadStarted{.epoch = revision};
  return {revision, head::ToJson(c).dump()};
}

// A standby head's warm copy applies a change the leader's server shows after the leader's
// commit was cancelled; the failover loses it. Taking over, the warm copy must not keep it:
// it loads again, at the revision the store holds.
TEST_F(SyncPair, AWarmStandbyDropsAChangeTheFailoverLost) {
  MakeS1Synchronous();
  auto leader = store::OpenPostgresStore(url_ + "&application_name=leader");
  StoreOptions alone;  // it leads on the promoted standby, which has no standby of its own
  alone.sync_standby = StoreOptions::SyncStandby::kSkip;
  auto standby = store::OpenPostgresStore(url_ + "&application_name=standby", alone);
  ASSERT_TRUE(leader.ok() && standby.ok());
  ASSERT_EQ(*(*leader)->TryLead(), std::optional<uint64_t>(1));
  ASSERT_TRUE((*leader)->Commit({store::AppendChange{ChangeAt(1)}}).ok());
  auto warm = head::WarmState::Load(**standby);
  ASSERT_TRUE(warm.ok()) << warm.status().ToString();
  ASSERT_EQ(warm->revision(), 1u);

  ASSERT_TRUE(standby_->Stop().ok());
  auto waiting = std::async(std::launch::async,
                            [&] { return (*leader)->Commit({store::AppendChange{ChangeAt(2)}}); });
  std::string pid = WaitingOnSyncRep();
  ASSERT_FALSE(pid.empty());
  ASSERT_TRUE(primary_->Query("postgres", "SELECT pg_cancel_backend(" + pid + ")").ok());
  EXPECT_FALSE(waiting.get().ok());
  ASSERT_TRUE(warm->CatchUp(**standby).ok());
  ASSERT_EQ(warm->revision(), 2u) << "the standby head saw the unreplicated change";

  leader->reset();  // the old leader exits (its commit failed)
  FailOver();
  std::optional<uint64_t> term;
  for (int i = 0; i < 50 && !term; ++i) {
    auto t = (*standby)->TryLead();
    if (t.ok()) term = *t;
    if (!term) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_EQ(term, std::optional<uint64_t>(2));
  Status took = warm->TakeOver(**standby);
  ASSERT_TRUE(took.ok()) << took.ToString();
  EXPECT_EQ(warm->revision(), 1u);
  EXPECT_EQ(warm->reloads(), 1);
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `corral head` on both hosts: without a synchronous standby it exits 1 naming what is
// missing and the flag that leads anyway, with which it serves.
TEST_F(SyncPair, TheHeadRefusesToLeadWithoutASynchronousStandbyUnlessAllowed) {
  std::string dir = (std::filesystem::temp_directory_path() /
                     ("corral-it-pgsync-refuse-" + std::to_string(getpid())))
                        .string();
  std::filesystem::remove_all(dir);
  // `timeout`: a head that led would serve until killed.
  auto refused = RunCommand({"/usr/bin/timeout", "60", CorralBin(), "head", "--state-dir", dir,
                             "--store", url_, "--listen", "127.0.0.1:0"});
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_NE(refused.err.find("refusing to lead: PostgreSQL at 127.0.0.1:"), std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("synchronous_standby_names is empty"), std::string::npos);
  EXPECT_NE(refused.err.find("--allow-async-store"), std::string::npos);
  auto both = RunCommand({CorralBin(), "head", "--state-dir", dir, "--store", url_,
                          "--allow-async-store", "--require-sync-standby"});
  EXPECT_EQ(both.exit_code, 2) << both.err;
  auto weak = RunCommand({CorralBin(), "head", "--state-dir", dir, "--store", url_,
                          "--store-synchronous-commit", "local"});
  EXPECT_EQ(weak.exit_code, 2) << weak.err;
  EXPECT_NE(weak.err.find("--store-synchronous-commit"), std::string::npos) << weak.err;
  std::filesystem::remove_all(dir);

  LocalCluster c("pgsync-allow", 0, 1, {"--store", url_, "--allow-async-store"});
  auto jobs = c.Corral({"jobs"});
  EXPECT_EQ(jobs.exit_code, 0) << jobs.err;
}

// The real head and CLI: a submission whose commit's wait for the standby is cancelled is
// not acknowledged (the CLI fails), the head exits saying why, and after the failover the
// acknowledged submission is on the new primary.
TEST_F(SyncPair, TheHeadAnswersNoSubmissionWhoseCommitWasNotReplicated) {
  MakeS1Synchronous();
  LocalCluster c("pgsync-cancel", 0, 1, {"--store", url_});
  c.Submit({"--", "echo", "acked-marker"});
  ASSERT_TRUE(standby_->Stop().ok());
  auto waiting = std::async(std::launch::async, [&] {
    return c.Corral({"submit", "--parsable", "--", "echo", "never-acknowledged"});
  });
  std::string pid = WaitingOnSyncRep();
  ASSERT_FALSE(pid.empty());
  ASSERT_TRUE(primary_->Query("postgres", "SELECT pg_cancel_backend(" + pid + ")").ok());
  CommandResult submitted = waiting.get();
  EXPECT_NE(submitted.exit_code, 0) << "acknowledged: " << submitted.out;
  std::string log = ReadText(c.dir() + "/head.log");
  EXPECT_NE(log.find("the store failed a commit, exiting"), std::string::npos) << log;
  EXPECT_NE(log.find("may not have replicated it"), std::string::npos) << log;

  FailOver();
  // A job is in its change's document, and in its row once a snapshot wrote it.
  auto stored = [&](const std::string& marker) {
    return *standby_->Query(kDb, "SELECT (SELECT count(*) FROM changes WHERE doc LIKE '%" + marker +
                                     "%') + (SELECT count(*) FROM jobs WHERE doc LIKE '%" + marker +
                                     "%') > 0");
  };
  EXPECT_EQ(stored("acked-marker"), "t");
  EXPECT_EQ(stored("never-acknowledged"), "f");
}

}  // namespace
}  // namespace corral::testing
