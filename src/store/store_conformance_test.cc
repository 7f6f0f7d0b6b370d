#include "store/store_conformance_test.h"

#include <sys/wait.h>
#include <unistd.h>

#include "core/codec.h"

namespace corral::store {

void StoreConformance::SetUp() {
  backend_ = GetParam().make();
  if (std::string why = backend_->SkipReason(); !why.empty()) GTEST_SKIP() << why;
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info->name();
  name = name.substr(0, name.find('/'));
  Status st = backend_->Prepare(name);
  ASSERT_TRUE(st.ok()) << st.ToString();
}

std::string BackendName(const ::testing::TestParamInfo<BackendParam>& info) {
  return info.param.name;
}

namespace {

Node MakeNode(const std::string& name) {
  Node n;
  n.name = name;
  n.gpus = {{0, "GPU-" + name, "sim", 1000, 0, true}};
  return n;
}

TEST_P(StoreConformance, AnEmptyStoreLoadsEmpty) {
  auto s = backend_->Open();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_TRUE((*s)->Commit({}).ok());
  auto st = (*s)->Load();
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_TRUE(st->jobs.empty());
  EXPECT_TRUE(st->nodes.empty());
  EXPECT_TRUE(st->queues.empty());
  EXPECT_TRUE(st->meta.empty());
  EXPECT_TRUE(st->changes.empty());
}

TEST_P(StoreConformance, CommitThenReopenSeesEverything) {
  {
    auto s = backend_->Open();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ASSERT_TRUE((*s)->Commit({PutJob{MakeJob(2, JobState::kPending)},
                              PutJob{MakeJob(1, JobState::kRunning)}, PutNode{MakeNode("n2")},
                              PutNode{MakeNode("n1")}, PutNode{MakeNode("gone")},
                              PutQueue{{"org/team", 4, 8, 2.0}}, PutMeta{"epoch", "3"}})
                    .ok());
    // Puts overwrite; a delete removes.
    Status st = (*s)->Commit({PutJob{MakeJob(2, JobState::kSucceeded)}, PutMeta{"epoch", "4"},
                              DeleteNode{"gone"}, PutQueue{{"org/team", 4, 16, 2.0}}});
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  auto s = backend_->Open();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto st = (*s)->Load();
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  ASSERT_EQ(st->jobs.size(), 2u);
  EXPECT_EQ(st->jobs[0].id, 1u);  // ascending id
  EXPECT_EQ(st->jobs[0].state, JobState::kRunning);
  EXPECT_EQ(st->jobs[1].id, 2u);
  EXPECT_EQ(st->jobs[1].state, JobState::kSucceeded);
  EXPECT_EQ(st->jobs[1].owner, "ana");
  EXPECT_EQ(st->jobs[1].spec.command, std::vector<std::string>{"true"});
  ASSERT_EQ(st->nodes.size(), 2u);
  EXPECT_EQ(st->nodes[0].name, "n1");
  EXPECT_EQ(st->nodes[0].gpus[0].uuid, "GPU-n1");
  EXPECT_EQ(st->nodes[1].name, "n2");
  ASSERT_EQ(st->queues.size(), 1u);
  EXPECT_EQ(st->queues[0].limit_gpus, 16);
  EXPECT_EQ(st->meta, (std::map<std::string, std::string>{{"epoch", "4"}}));
}

TEST_P(StoreConformance, ChangeLogIsOrderedLimitedAndTruncated) {
  auto s = backend_->Open();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  // Written out of order within a commit: read back by revision.
  ASSERT_TRUE((*s)->Commit({AppendChange{{2, "b"}}, AppendChange{{1, "a"}}}).ok());
  ASSERT_TRUE(
      (*s)->Commit({AppendChange{{3, "c"}}, PutMeta{kSnapshotRevisionKey, "2"}, TruncateChanges{2}})
          .ok());
  ASSERT_TRUE((*s)->Commit({AppendChange{{4, "{\"k\": \"d\\u00e9\"}"}}}).ok());
  auto st = (*s)->Load();
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  // Load hands back only the changes above the snapshot.
  EXPECT_EQ(st->changes, (std::vector<ChangeRecord>{{3, "c"}, {4, "{\"k\": \"d\\u00e9\"}"}}));
  auto all = (*s)->ReadChanges(0, 10);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), 3u);  // 1 truncated
  EXPECT_EQ((*all)[0], (ChangeRecord{2, "b"}));
  EXPECT_EQ((*all)[2].revision, 4u);
  auto one = (*s)->ReadChanges(1, 1);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, (std::vector<ChangeRecord>{{2, "b"}}));
  auto two = (*s)->ReadChanges(2, 2);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(*two, (std::vector<ChangeRecord>{{3, "c"}, {4, "{\"k\": \"d\\u00e9\"}"}}));
  auto none = (*s)->ReadChanges(4, 10);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

// A revision is written once: a commit that repeats one fails, and nothing of it stays,
// not even the edits before the failing one.
TEST_P(StoreConformance, AFailedCommitLeavesNothing) {
  auto s = backend_->Open();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_TRUE((*s)->Commit({AppendChange{{1, "a"}}, PutJob{MakeJob(1, JobState::kPending)}}).ok());
  Status failed =
      (*s)->Commit({PutMeta{"x", "1"}, PutJob{MakeJob(1, JobState::kFailed)},
                    PutJob{MakeJob(7, JobState::kPending)}, AppendChange{{1, "again"}}});
  EXPECT_FALSE(failed.ok());
  auto after = (*s)->Load();
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_FALSE(after->meta.count("x"));
  ASSERT_EQ(after->jobs.size(), 1u);
  EXPECT_EQ(after->jobs[0].state, JobState::kPending);
  EXPECT_EQ(after->changes, (std::vector<ChangeRecord>{{1, "a"}}));
  // The store is still usable after the failure.
  ASSERT_TRUE((*s)->Commit({AppendChange{{2, "b"}}}).ok());
  auto again = backend_->Open();
  ASSERT_TRUE(again.ok());
  auto reloaded = (*again)->Load();
  ASSERT_TRUE(reloaded.ok());
  EXPECT_EQ(reloaded->changes.size(), 2u);
  EXPECT_FALSE(reloaded->meta.count("x"));
}

// Acknowledged data survives SIGKILL of the writer: a child commits, reports the count over a
// pipe after each commit returns, and is killed mid-stream; everything it reported is there.
TEST_P(StoreConformance, AcknowledgedCommitsSurviveSigkillOfTheWriter) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    auto s = backend_->Open();
    if (!s.ok()) _exit(3);
    for (JobId id = 1;; ++id) {
      if (!(*s)->Commit({PutJob{MakeJob(id, JobState::kPending)}, AppendChange{{id, "{}"}}}).ok()) {
        _exit(4);
      }
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
  auto s = backend_->Open();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto st = (*s)->Load();
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  ASSERT_GE(st->jobs.size(), acked);
  ASSERT_EQ(st->changes.size(), st->jobs.size());  // each commit whole or not at all
  for (JobId i = 1; i <= acked; ++i) EXPECT_EQ(st->jobs[i - 1].id, i);
}

// A store written before schema versioning (the version-1 tables, no schema_version) is
// migrated at open, keeps its rows, and then opens again without migrating twice.
TEST_P(StoreConformance, AnOldStoreIsMigratedAndKeepsItsData) {
  Job job = MakeJob(5, JobState::kRunning);
  ASSERT_TRUE(backend_->Sql(backend_->SchemaV1()).ok());
  std::string doc = ToJson(job).dump();
  auto ins =
      backend_->Sql("INSERT INTO jobs (id, state, doc) VALUES (5, 'running', '" + doc + "')");
  ASSERT_TRUE(ins.ok()) << ins.status().ToString();
  ASSERT_TRUE(backend_->Sql("INSERT INTO meta (key, value) VALUES ('epoch', '9')").ok());
  ASSERT_EQ(*backend_->Sql(backend_->IndexExists("jobs_by_state")), "0");
  for (int open = 0; open < 2; ++open) {
    auto s = backend_->Open();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    auto st = (*s)->Load();
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    ASSERT_EQ(st->jobs.size(), 1u);
    EXPECT_EQ(st->jobs[0].id, 5u);
    EXPECT_EQ(st->jobs[0].state, JobState::kRunning);
    EXPECT_EQ(st->meta.at("epoch"), "9");
    EXPECT_EQ(*backend_->Sql("SELECT count(*) FROM schema_version"), "1");
    EXPECT_EQ(*backend_->Sql("SELECT version FROM schema_version"), std::to_string(kSchemaVersion));
    EXPECT_EQ(*backend_->Sql(backend_->IndexExists("jobs_by_state")), "1");
    EXPECT_EQ(*backend_->Sql("SELECT term FROM leadership"), "0");
  }
}

// Rows are written without the fields at their defaults (ToStoredJson); a row in the full form,
// as every earlier corral wrote them, loads beside them as the same job.
TEST_P(StoreConformance, JobRowsInTheFullFormLoadBesideTheShortOnes) {
  Job job = MakeJob(1, JobState::kSucceeded);
  job.spec.env = {{"SEED", "7"}};
  job.ended_at = 5000;
  corral::Run run;
  run.attempt = 1;
  run.placement = {{"n1", {0, 1}}};
  run.state = RunState::kSucceeded;
  run.cause = StopCause::kCompleted;  // as the core records every ended run
  run.exit_codes = {0};
  job.runs = {run};
  job.events = {{1000, "submitted", "by ana"}, {5000, "succeeded", ""}};
  auto s = backend_->Open();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_TRUE((*s)->Commit({PutJob{job}}).ok());
  Job old = job;
  old.id = 2;
  auto ins = backend_->Sql("INSERT INTO jobs (id, state, doc) VALUES (2, 'succeeded', '" +
                           ToJson(old).dump() + "')");
  ASSERT_TRUE(ins.ok()) << ins.status().ToString();
  auto short_len = backend_->Sql("SELECT length(doc) FROM jobs WHERE id = 1");
  auto full_len = backend_->Sql("SELECT length(doc) FROM jobs WHERE id = 2");
  ASSERT_TRUE(short_len.ok() && full_len.ok());
  EXPECT_LT(std::stoi(*short_len), std::stoi(*full_len));
  auto st = (*s)->Load();
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  ASSERT_EQ(st->jobs.size(), 2u);
  EXPECT_EQ(ToJson(st->jobs[0]), ToJson(job));
  EXPECT_EQ(ToJson(st->jobs[1]), ToJson(old));
}

// A store stamped at version 1 (after the first step) is taken through the remaining steps.
TEST_P(StoreConformance, AStoreAtAnEarlierVersionRunsOnlyTheLaterSteps) {
  ASSERT_TRUE(backend_->Sql(backend_->SchemaV1()).ok());
  ASSERT_TRUE(backend_->Sql("CREATE TABLE schema_version (version INTEGER NOT NULL)").ok());
  ASSERT_TRUE(backend_->Sql("INSERT INTO schema_version VALUES (1)").ok());
  auto s = backend_->Open();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(*backend_->Sql("SELECT version FROM schema_version"), std::to_string(kSchemaVersion));
  EXPECT_EQ(*backend_->Sql(backend_->IndexExists("jobs_by_state")), "1");
}

// A retired row leaves Load but for its tombstone, and is read back by id, by end time and
// in pages, on the store's own reading connection while the commit connection stays open.
TEST_P(StoreConformance, RetiredJobsLeaveLoadAndAreReadBackOnDemand) {
  auto s = backend_->Open();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  std::vector<StateEdit> put;
  for (JobId id = 1; id <= 5; ++id) {
    Job j = MakeJob(id, id == 5 ? JobState::kRunning : JobState::kSucceeded);
    j.ended_at = id == 5 ? 0 : static_cast<TimeMs>(id) * 1000;
    if (id == 2) j.owner = "bob";
    j.spec.queue = id == 3 ? "org/team" : "default";
    put.push_back(PutJob{j});
  }
  ASSERT_TRUE((*s)->Commit(put).ok());
  // Nothing is retired yet: the reader sees no rows.
  auto none = (*s)->ReadRetiredJobs({});
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->empty());
  Status st =
      (*s)->Commit({RetireJob{1, "succeeded"}, RetireJob{2, "failed"}, RetireJob{3, "succeeded"}});
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto loaded = (*s)->Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->jobs.size(), 2u);
  EXPECT_EQ(loaded->jobs[0].id, 4u);
  EXPECT_EQ(loaded->jobs[1].id, 5u);
  std::vector<std::pair<JobId, std::string>> tombstones{
      {1, "succeeded"}, {2, "failed"}, {3, "succeeded"}};
  EXPECT_EQ(loaded->retired, tombstones);
  auto ids = [](const Result<std::vector<Job>>& r) {
    std::vector<JobId> out;
    for (const Job& j : *r) out.push_back(j.id);
    return out;
  };
  auto all = (*s)->ReadRetiredJobs({});
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(ids(all), (std::vector<JobId>{1, 2, 3}));
  EXPECT_EQ((*all)[1].owner, "bob") << "the whole document comes back";
  EXPECT_EQ((*all)[2].spec.queue, "org/team");
  EXPECT_EQ(ids((*s)->ReadRetiredJobs({.id = 2})), (std::vector<JobId>{2}));
  EXPECT_TRUE((*s)->ReadRetiredJobs({.id = 4})->empty()) << "job 4 is not retired";
  EXPECT_EQ(ids((*s)->ReadRetiredJobs({.ended_since = 2000})), (std::vector<JobId>{2, 3}));
  EXPECT_EQ(ids((*s)->ReadRetiredJobs({.after = 1, .limit = 1})), (std::vector<JobId>{2}));
  // Owner and queue are filtered by the store, before any document is decoded.
  EXPECT_EQ(ids((*s)->ReadRetiredJobs({.user = "bob"})), (std::vector<JobId>{2}));
  EXPECT_EQ(ids((*s)->ReadRetiredJobs({.user = "ana"})), (std::vector<JobId>{1, 3}));
  EXPECT_EQ(ids((*s)->ReadRetiredJobs({.queue = "org/team"})), (std::vector<JobId>{3}));
  EXPECT_EQ(ids((*s)->ReadRetiredJobs({.queue = "default"})), (std::vector<JobId>{1, 2}))
      << "a queue at its default is in the document all the same";
  EXPECT_TRUE((*s)->ReadRetiredJobs({.user = "bob", .queue = "org/team"})->empty());
}

TEST_P(StoreConformance, AStoreANewerCorralWroteIsRefused) {
  {
    auto s = backend_->Open();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ASSERT_TRUE((*s)->Commit({PutJob{MakeJob(1, JobState::kPending)}}).ok());
  }
  ASSERT_TRUE(
      backend_->Sql("UPDATE schema_version SET version = " + std::to_string(kSchemaVersion + 1))
          .ok());
  auto s = backend_->Open();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "store schema version " + std::to_string(kSchemaVersion + 1) +
                                      " is newer than this corral (" +
                                      std::to_string(kSchemaVersion) + "); upgrade corral");
  // Refusing changed nothing.
  EXPECT_EQ(*backend_->Sql("SELECT version FROM schema_version"),
            std::to_string(kSchemaVersion + 1));
  EXPECT_EQ(*backend_->Sql("SELECT count(*) FROM jobs"), "1");
}

// Leadership is the store's: a store several heads share gives one of them a term and makes
// the others wait; a store of one head always leads, so the head needs no other path for it.
TEST_P(StoreConformance, LeadershipIsPartOfTheStore) {
  auto a = backend_->Open();
  auto b = backend_->Open();
  ASSERT_TRUE(a.ok() && b.ok());
  auto first = (*a)->TryLead();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(first->has_value()) << "nobody led: the first to ask leads";
  auto second = (*b)->TryLead();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ((*a)->Shared(), GetParam().name == "postgres");
  if ((*a)->Shared()) {
    EXPECT_FALSE(second->has_value()) << "one leader at a time";
  } else {
    EXPECT_TRUE(second->has_value()) << "a store of one head always leads";
  }
}

}  // namespace
}  // namespace corral::store
