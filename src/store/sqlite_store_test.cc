#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "store/store.h"

namespace corral::store {
namespace {

std::string TempDb(const char* name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("corral-store-" + std::to_string(getpid()) + "-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return (dir / "corral.db").string();
}

Job MakeJob(JobId id, JobState state) {
  Job j;
  j.id = id;
  j.owner = "ana";
  j.spec.command = {"true"};
  j.state = state;
  return j;
}

TEST(SqliteStore, CommitThenReloadSeesEverything) {
  std::string path = TempDb("reload");
  {
    auto s = OpenSqliteStore(path);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    Node n;
    n.name = "n1";
    n.gpus = {{0, "GPU-0", "sim", 1000, 0, true}};
    ASSERT_TRUE((*s)->Commit({PutJob{MakeJob(2, JobState::kPending)},
                              PutJob{MakeJob(1, JobState::kRunning)}, PutNode{n},
                              PutQueue{{"org/team", 4, 8, 2.0}}, PutMeta{"epoch", "3"}})
                    .ok());
    ASSERT_TRUE((*s)->Commit({PutJob{MakeJob(2, JobState::kSucceeded)}}).ok());
  }
  auto s = OpenSqliteStore(path);
  ASSERT_TRUE(s.ok());
  auto st = (*s)->Load();
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  ASSERT_EQ(st->jobs.size(), 2u);
  EXPECT_EQ(st->jobs[0].id, 1u);
  EXPECT_EQ(st->jobs[1].state, JobState::kSucceeded);
  ASSERT_EQ(st->nodes.size(), 1u);
  EXPECT_EQ(st->nodes[0].gpus[0].uuid, "GPU-0");
  ASSERT_EQ(st->queues.size(), 1u);
  EXPECT_EQ(st->queues[0].limit_gpus, 8);
  EXPECT_EQ(st->meta.at("epoch"), "3");
}

TEST(SqliteStore, ChangeLogAboveTheSnapshotIsLoadedAndTruncated) {
  std::string path = TempDb("changes");
  auto s = OpenSqliteStore(path);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->Commit({AppendChange{{1, "a"}}, AppendChange{{2, "b"}}}).ok());
  ASSERT_TRUE(
      (*s)->Commit({AppendChange{{3, "c"}}, PutMeta{kSnapshotRevisionKey, "2"}, TruncateChanges{2}})
          .ok());
  auto st = (*s)->Load();
  ASSERT_TRUE(st.ok());
  ASSERT_EQ(st->changes, (std::vector<ChangeRecord>{{3, "c"}}));
  auto all = (*s)->ReadChanges(0, 10);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, (std::vector<ChangeRecord>{{2, "b"}, {3, "c"}}));  // 1 truncated
  auto one = (*s)->ReadChanges(1, 1);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, (std::vector<ChangeRecord>{{2, "b"}}));
  // A revision is written once: a second commit of the same one fails and changes nothing.
  EXPECT_FALSE((*s)->Commit({PutMeta{"x", "1"}, AppendChange{{3, "again"}}}).ok());
  auto after = (*s)->Load();
  ASSERT_TRUE(after.ok());
  EXPECT_FALSE(after->meta.count("x"));
}

// Acknowledged data survives SIGKILL of the writer: a child commits, reports the count over a
// pipe after each commit returns, and is killed mid-stream; everything it reported is there.
TEST(SqliteStore, AcknowledgedCommitsSurviveSigkill) {
  std::string path = TempDb("kill");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    auto s = OpenSqliteStore(path);
    if (!s.ok()) _exit(3);
    for (JobId id = 1;; ++id) {
      if (!(*s)->Commit({PutJob{MakeJob(id, JobState::kPending)}}).ok()) _exit(4);
      if (write(fds[1], &id, sizeof id) != sizeof id) _exit(5);
    }
  }
  close(fds[1]);
  JobId acked = 0, id = 0;
  while (acked < 50 && read(fds[0], &id, sizeof id) == sizeof id) acked = id;
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  close(fds[0]);
  ASSERT_GE(acked, 50u);
  auto s = OpenSqliteStore(path);
  ASSERT_TRUE(s.ok());
  auto st = (*s)->Load();
  ASSERT_TRUE(st.ok());
  ASSERT_GE(st->jobs.size(), acked);
  for (JobId i = 1; i <= acked; ++i) EXPECT_EQ(st->jobs[i - 1].id, i);
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
  for (JobId id = 1; id <= 5; ++id) {
    ASSERT_TRUE(
        (*s)->Commit({PutJob{MakeJob(id, JobState::kPending)}, AppendChange{{id, "{}"}}}).ok());
  }
  const std::string wal = path + "-wal";
  auto full = std::filesystem::file_size(wal);
  ASSERT_TRUE((*s)->Commit({PutJob{MakeJob(6, JobState::kPending)}, AppendChange{{6, "{}"}}}).ok());
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

}  // namespace
}  // namespace corral::store
