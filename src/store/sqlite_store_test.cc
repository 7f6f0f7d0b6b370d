// The SQLite backend: the conformance suite, and what only a file-backed store has.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "store/private_files.h"
#include "store/store.h"
#include "store/store_conformance_test.h"

namespace corral::store {
namespace {

std::string TempDb(const char* name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("corral-store-" + std::to_string(getpid()) + "-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return (dir / "corral.db").string();
}

class SqliteBackend final : public StoreBackend {
 public:
  std::string SkipReason() override { return ""; }
  Status Prepare(const std::string& name) override {
    path_ = TempDb(name.c_str());
    return Status::Ok();
  }
  Result<std::unique_ptr<Store>> Open() override { return OpenSqliteStore(path_); }
  Result<std::string> Sql(const std::string& sql) override {
    sqlite3* db = nullptr;
    if (sqlite3_open(path_.c_str(), &db) != SQLITE_OK) {
      sqlite3_close(db);
      return Internal("cannot open " + path_);
    }
    std::string first;
    bool seen = false;
    auto row = [](void* ctx, int, char** values, char**) {
      auto* out = static_cast<std::pair<std::string*, bool*>*>(ctx);
      if (!*out->second) *out->first = values[0] ? values[0] : "";
      *out->second = true;
      return 0;
    };
    std::pair<std::string*, bool*> ctx{&first, &seen};
    char* err = nullptr;
    int rc = sqlite3_exec(db, sql.c_str(), row, &ctx, &err);
    std::string msg = err ? err : "";
    sqlite3_free(err);
    sqlite3_close(db);
    if (rc != SQLITE_OK) return Internal(sql + ": " + msg);
    return first;
  }
  std::string SchemaV1() override {
    return R"(
      CREATE TABLE jobs (id INTEGER PRIMARY KEY, state TEXT NOT NULL, doc TEXT NOT NULL);
      CREATE TABLE nodes (name TEXT PRIMARY KEY, doc TEXT NOT NULL);
      CREATE TABLE queues (name TEXT PRIMARY KEY, doc TEXT NOT NULL);
      CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE changes (revision INTEGER PRIMARY KEY, doc TEXT NOT NULL);
    )";
  }
  std::string IndexExists(const std::string& name) override {
    return "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = '" + name + "'";
  }

 private:
  std::string path_;
};

INSTANTIATE_TEST_SUITE_P(Sqlite, StoreConformance,
                         ::testing::Values(BackendParam{
                             "sqlite", [] { return std::make_unique<SqliteBackend>(); }}),
                         BackendName);

TEST(OpenStore, TheUrlPicksTheBackend) {
  std::string dir = std::filesystem::path(TempDb("url")).parent_path().string();
  auto plain = OpenStore("", dir);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_TRUE(std::filesystem::exists(dir + "/corral.db"));
  auto sqlite = OpenStore("sqlite:" + dir + "/other.db", dir);
  ASSERT_TRUE(sqlite.ok()) << sqlite.status().ToString();
  EXPECT_TRUE(std::filesystem::exists(dir + "/other.db"));
  auto empty = OpenStore("sqlite:", dir);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().message(), "--store: 'sqlite:' needs a path, as in sqlite:PATH");
  // The password is not echoed back.
  auto bad = OpenStore("mysql://root:hunter2@db/corral", dir);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("unsupported store 'mysql'"), std::string::npos);
  EXPECT_EQ(bad.status().message().find("hunter2"), std::string::npos);
  // postgres:// reaches libpq: nothing listens on port 1, and the error says where it tried.
  auto pg = OpenStore("postgresql://corral@127.0.0.1:1/corral?connect_timeout=2", dir);
  ASSERT_FALSE(pg.ok());
  EXPECT_NE(pg.status().message().find("cannot connect to PostgreSQL at 127.0.0.1:1/corral"),
            std::string::npos)
      << pg.status().message();
}

// Job `id` and the change of revision `id` that made it, in one commit.
Status CommitJob(Store& store, JobId id) {
  return store.Commit({PutJob{MakeJob(id, JobState::kPending)}, AppendChange{{id, "{}"}}});
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 0777;
}

// Whatever the umask, the database and its WAL are the owner's alone: they hold every job's
// environment and the tokens' hashes.
TEST(SqliteStore, TheDatabaseAndItsWalAreTheOwnersAlone) {
  std::string path = TempDb("modes");
  mode_t old = umask(022);
  {
    auto s = OpenSqliteStore(path);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ASSERT_TRUE((*s)->Commit({AppendChange{{1, "{}"}}}).ok());
    EXPECT_EQ(ModeOf(path), 0600u);
    EXPECT_EQ(ModeOf(path + "-wal"), 0600u);
    EXPECT_EQ(ModeOf(path + "-shm"), 0600u);
  }
  // A store an older corral left world-readable is narrowed when opened.
  ASSERT_EQ(chmod(path.c_str(), 0644), 0);
  ASSERT_TRUE(OpenSqliteStore(path).ok());
  EXPECT_EQ(ModeOf(path), 0600u);
  umask(old);
}

TEST(SecureStateDir, CreatesOrNarrowsTheDirectoryAndItsFiles) {
  std::string dir = std::filesystem::path(TempDb("state-dir")).parent_path().string() + "/state";
  mode_t old = umask(022);
  ASSERT_TRUE(SecureStateDir(dir).ok());
  EXPECT_EQ(ModeOf(dir), 0700u);
  // Widened by hand (or made by an older corral): narrowed at the next start, links untouched.
  ASSERT_EQ(chmod(dir.c_str(), 0755), 0);
  { std::ofstream(dir + "/audit.log") << "x"; }
  ASSERT_EQ(chmod((dir + "/audit.log").c_str(), 0644), 0);
  std::string outside = dir + "-outside";
  { std::ofstream(outside) << "x"; }
  ASSERT_EQ(chmod(outside.c_str(), 0644), 0);
  std::filesystem::create_symlink(outside, dir + "/link");
  ASSERT_TRUE(SecureStateDir(dir).ok());
  EXPECT_EQ(ModeOf(dir), 0700u);
  EXPECT_EQ(ModeOf(dir + "/audit.log"), 0600u);
  EXPECT_EQ(ModeOf(outside), 0644u);
  umask(old);
  // Not a directory: an error naming the path.
  auto st = SecureStateDir(outside);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(outside), std::string::npos) << st.message();
}

TEST(SqliteStore, UnopenablePathIsAnError) {
  auto s = OpenSqliteStore("/nonexistent-dir/x/corral.db");
  EXPECT_FALSE(s.ok());
}

// A torn write: the machine died while the last commit's WAL frames were being written. The
// copy below is what the disk held (the store still open, so the WAL is not checkpointed away),
// with the last frame cut short. SQLite ignores the torn transaction: the store opens and
// holds every earlier commit whole, and of the torn one nothing (it was never acknowledged,
// since Commit returns only after the fsync).
TEST(SqliteStore, ATornLastWriteLosesOnlyThatCommitAndNothingElse) {
  std::string path = TempDb("torn");
  auto s = OpenSqliteStore(path);
  ASSERT_TRUE(s.ok());
  for (JobId id = 1; id <= 5; ++id) ASSERT_TRUE(CommitJob(**s, id).ok());
  const std::string wal = path + "-wal";
  auto full = std::filesystem::file_size(wal);
  ASSERT_TRUE(CommitJob(**s, 6).ok());
  auto with_last = std::filesystem::file_size(wal);
  ASSERT_GT(with_last, full);
  std::string copy = TempDb("torn-copy");
  std::filesystem::copy_file(path, copy, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(wal, copy + "-wal", std::filesystem::copy_options::overwrite_existing);
  // Cut inside the last commit's frames: past its first frame header, before its end.
  std::filesystem::resize_file(copy + "-wal", full + (with_last - full) / 2);
  auto torn = OpenSqliteStore(copy);
  ASSERT_TRUE(torn.ok()) << torn.status().ToString();
  auto st = (*torn)->Load();
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  ASSERT_EQ(st->jobs.size(), 5u);
  EXPECT_EQ(st->jobs.back().id, 5u);
  auto changes = (*torn)->ReadChanges(0, 100);
  ASSERT_TRUE(changes.ok());
  ASSERT_EQ(changes->size(), 5u);
  EXPECT_EQ(changes->back().revision, 5u);
}

// A backup taken while another thread keeps committing is one consistent snapshot: it opens
// as a store, and holds every job whose change it holds, up to the revision it reports.
TEST(SqliteStore, BackupWhileCommittingIsAConsistentSnapshotThatOpens) {
  std::string path = TempDb("backup");
  auto s = OpenSqliteStore(path);
  ASSERT_TRUE(s.ok());
  for (JobId id = 1; id <= 200; ++id) ASSERT_TRUE(CommitJob(**s, id).ok());
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (JobId id = 201; !stop && id < 100000; ++id) ASSERT_TRUE(CommitJob(**s, id).ok());
  });
  std::string copy = std::filesystem::path(path).parent_path() / "copy.db";
  auto info = (*s)->Backup(copy);
  stop = true;
  writer.join();
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->path, copy);
  EXPECT_GE(info->revision, 200u);
  EXPECT_EQ(info->jobs, static_cast<int64_t>(info->revision));  // one job per change, whole
  EXPECT_EQ(info->bytes, static_cast<int64_t>(std::filesystem::file_size(copy)));
  EXPECT_EQ(std::filesystem::status(copy).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  auto restored = OpenSqliteStore(copy);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  auto loaded = (*restored)->Load();
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(static_cast<int64_t>(loaded->jobs.size()), info->jobs);

  // Never over a file, never a relative path; neither leaves anything behind.
  auto again = (*s)->Backup(copy);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("never overwrites"), std::string::npos)
      << again.status().message();
  EXPECT_EQ(std::filesystem::file_size(copy), static_cast<uintmax_t>(info->bytes));
  auto relative = (*s)->Backup("copy2.db");
  ASSERT_FALSE(relative.ok());
  EXPECT_NE(relative.status().message().find("path: got 'copy2.db'"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists("copy2.db"));
}

}  // namespace
}  // namespace corral::store
