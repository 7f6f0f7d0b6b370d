// The head's shell with real threads around the core: write-ahead answers, the revision of
// each answer, restart from the store, and what it answers when the store fails, stalls or
// loses an acknowledgement.
#include "head/head.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include "head/change.h"
#include "head/head_shell_fixture.h"
#include "testing/fakes.h"

namespace corral::head {
namespace {

using namespace shell_testing;  // NOLINT: the fixture's names
using corral::testing::CountingRandom;
using corral::testing::FakeClock;
using corral::testing::FaultStore;
using corral::testing::MemoryDisk;
using corral::testing::MemoryStore;

// The head keeps 20,000 changes for the event stream, each as large as the largest
// alternative: a Job or a Service held inline in one makes every change that large.
TEST(Change, IsSmallerThanTheJobsAndServicesItCarries) {
  EXPECT_LT(sizeof(Change), sizeof(Job));
  EXPECT_LT(sizeof(Change), sizeof(Service));
  EXPECT_LT(sizeof(Change), sizeof(ServiceSpec));
}

TEST_F(HeadShell, AnswersCarryTheRevisionTheyReflectAndSurviveARestart) {
  auto a = Submit();
  auto b = Submit();
  ASSERT_TRUE(a.result.ok() && b.result.ok());
  EXPECT_GT(a.revision, 0u);
  EXPECT_EQ(b.revision, a.revision + 1) << "one change per submission";
  EXPECT_EQ(a.result->owner, "admin");
  uint64_t epoch = head_->epoch();
  head_.reset();
  Open();
  EXPECT_EQ(head_->epoch(), epoch + 1);
  auto jobs = List();
  ASSERT_TRUE(jobs.result.ok());
  ASSERT_EQ(jobs.result->size(), 2u);
  EXPECT_GT(jobs.revision, b.revision) << "the new leadership is a change too";
}

// Cancelling a huge array goes a slice per turn (HeadConfig::cancel_slice): another caller's
// listing, asked for while it runs, is answered between two slices (it sees elements the cancel
// has not reached yet), not after the whole cancel, and every element ends cancelled. On SQLite,
// as a head runs (the in-memory fake copies every row at each commit). How long a listing waits
// is a benchmark's question, not this test's.
#if defined(__SANITIZE_ADDRESS__) || !defined(NDEBUG)
constexpr int kHugeArray = 10000;  // unoptimised or instrumented (CI's ASan pass)
#else
constexpr int kHugeArray = 100000;
#endif

TEST_F(HeadShell, AHugeArraysCancelLeavesOthersAnswered) {
  head_.reset();
  char tmpl[] = "/tmp/corral-cancel-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  auto sqlite = store::OpenSqliteStore(dir + "/corral.db");
  ASSERT_TRUE(sqlite.ok()) << sqlite.status().ToString();
  HeadConfig config = config_;
  config.durability.snapshot_every = 1;  // the submission's rows are written before the cancel
  auto h = Head::Create(config, std::move(*sqlite), &clock_, &random_, {kAdmin, "join-secret"});
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  head_ = std::move(*h);
  head_->Start();
  auto bob = Async<NewToken>([&](auto cb) {
               head_->Run(kAdmin, CreateToken{{"bob", Role::kUser, {}, 0}}, cb);
             }).get();
  ASSERT_TRUE(bob.result.ok());
  // An admin: no array limit.
  auto array = SubmitTrue(*head_, kAdmin, "0-" + std::to_string(kHugeArray - 1));
  ASSERT_TRUE(array.result.ok()) << array.result.status().ToString();
  // The submission's own cost, not measured here: once idle, the head writes the 100,000 new
  // jobs' snapshot rows (what --max-array-size bounds for users). A submission after that
  // commit is answered when it is done.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ASSERT_TRUE(SubmitTrue(*head_, kAdmin).result.ok());
  auto cancel = Async<Job>([&](auto cb) {
    head_->Run(kAdmin, CancelJob{array.result->id, false}, cb);
  });
  int listings = 0;
  int mid_cancel = 0;  // listings answered while some element was still pending
  do {
    auto listed =
        Async<std::vector<Job>>([&](auto cb) {
          head_->Run(
              bob.result->secret,
              ListJobs{{.states = {JobState::kPending}, .limit = 1, .array_id = array.result->id}},
              cb);
        }).get();
    ASSERT_TRUE(listed.result.ok()) << listed.result.status().ToString();
    ++listings;
    if (!listed.result->empty()) ++mid_cancel;
  } while (cancel.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready);
  std::cout << "cancelling " << kHugeArray << " elements in slices of " << config.cancel_slice
            << ": " << listings << " listings meanwhile, " << mid_cancel
            << " of them before the last slice\n";
  // The cancel was asked first, so every listing comes after its first slice: one that still
  // sees a pending element was answered between slices.
  EXPECT_GE(mid_cancel, 1) << "no listing was answered before the whole cancel was done";
  auto done = cancel.get();
  ASSERT_TRUE(done.result.ok()) << done.result.status().ToString();
  auto pending =
      Async<std::vector<Job>>([&](auto cb) {
        head_->Run(
            kAdmin,
            ListJobs{{.states = {JobState::kPending}, .limit = 10, .array_id = array.result->id}},
            cb);
      }).get();
  ASSERT_TRUE(pending.result.ok());
  EXPECT_TRUE(pending.result->empty()) << "every element is cancelled";
  head_.reset();
  std::filesystem::remove_all(dir);
}

// What the API's throttle asks of a bearer before any turn of the state machine: a held,
// unexpired credential, from the start (bootstrap tokens) and as tokens come and go.
TEST_F(HeadShell, CurrentCredentialsAreKnownToAnyThread) {
  EXPECT_TRUE(head_->IsCurrentCredential(kAdmin));
  EXPECT_TRUE(head_->IsCurrentCredential("join-secret"));
  EXPECT_FALSE(head_->IsCurrentCredential("random"));
  EXPECT_FALSE(head_->IsCurrentCredential(""));
  auto t = Async<NewToken>([&](auto cb) {
             head_->Run(kAdmin, CreateToken{{"ana", Role::kUser, {}, kHour}}, cb);
           }).get();
  ASSERT_TRUE(t.result.ok());
  EXPECT_TRUE(head_->IsCurrentCredential(t.result->secret));
  clock_.Advance(2 * kHour);
  EXPECT_FALSE(head_->IsCurrentCredential(t.result->secret)) << "expired";
  auto u = Async<NewToken>([&](auto cb) {
             head_->Run(kAdmin, CreateToken{{"bob", Role::kUser, {}, 0}}, cb);
           }).get();
  ASSERT_TRUE(u.result.ok());
  ASSERT_TRUE(Async<Credential>(
                  [&](auto cb) { head_->Run(kAdmin, RevokeToken{u.result->credential.id}, cb); })
                  .get()
                  .result.ok());
  EXPECT_FALSE(head_->IsCurrentCredential(u.result->secret)) << "revoked";
  head_.reset();
  Open();  // and after a restart
  EXPECT_TRUE(head_->IsCurrentCredential(kAdmin));
  EXPECT_FALSE(head_->IsCurrentCredential(u.result->secret));
}

TEST_F(HeadShell, ABadOrMissingTokenIsRefused) {
  auto r = Submit("wrong");
  EXPECT_EQ(r.result.status().code(), ErrorCode::kUnauthenticated);
  EXPECT_EQ(Submit("").result.status().code(), ErrorCode::kUnauthenticated);
  EXPECT_TRUE(List().result->empty());
}

TEST_F(HeadShell, ANewTokenIsShownOnceAndWorks) {
  auto t = Async<NewToken>([&](auto cb) {
             head_->Run(kAdmin, CreateToken{{"ana", Role::kUser, {}, 0}}, cb);
           }).get();
  ASSERT_TRUE(t.result.ok()) << t.result.status().ToString();
  EXPECT_NE(t.result->secret, t.result->credential.hash);
  auto job = Submit(t.result->secret);
  ASSERT_TRUE(job.result.ok());
  EXPECT_EQ(job.result->owner, "ana");
}

TEST_F(HeadShell, AFailedCommitAcknowledgesNothingAndStopsTheHead) {
  ASSERT_TRUE(Submit().result.ok());
  fault_->SetMode(FaultStore::Mode::kFail);
  auto r = Submit();
  ASSERT_FALSE(r.result.ok());
  EXPECT_EQ(r.result.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(r.result.status().message().find("store failed"), std::string::npos)
      << r.result.status().message();
  EXPECT_TRUE(head_->failed());
  EXPECT_EQ(store_failures_.load(), 1);
  fault_->SetMode(FaultStore::Mode::kNormal);
  EXPECT_EQ(List().result.status().code(), ErrorCode::kUnavailable) << "no answer from memory";
  head_.reset();
  Open();  // what is durable: the first job only
  auto jobs = List();
  ASSERT_TRUE(jobs.result.ok());
  EXPECT_EQ(jobs.result->size(), 1u);
}

TEST_F(HeadShell, AStalledCommitHoldsTheAnswerUntilItIsDurable) {
  ASSERT_TRUE(List().result.ok());  // the start-up batch is durable
  fault_->SetMode(FaultStore::Mode::kStall);
  JobSpec spec;
  spec.command = {"true"};
  auto pending = Async<Job>([&](auto cb) { head_->Run(kAdmin, SubmitJob{spec, "", ""}, cb); });
  for (int i = 0; i < 500 && !fault_->stalled(); ++i) usleep(1000);
  ASSERT_TRUE(fault_->stalled());
  EXPECT_EQ(pending.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout)
      << "answered before the commit was durable";
  fault_->Release();
  auto r = pending.get();
  ASSERT_TRUE(r.result.ok());
  EXPECT_EQ(disk_->state.changes.back().revision, r.revision);
}

TEST_F(HeadShell, ALostAcknowledgementIsNotAnAcknowledgement) {
  ASSERT_TRUE(List().result.ok());  // the start-up batch is durable
  fault_->SetMode(FaultStore::Mode::kLostAck);
  auto r = Submit();
  EXPECT_FALSE(r.result.ok()) << "the head cannot know the commit landed";
  head_.reset();
  Open();  // it did land: recovery finds it, and that is allowed for an unanswered request
  auto jobs = List();
  ASSERT_TRUE(jobs.result.ok());
  EXPECT_EQ(jobs.result->size(), 1u);
}

// An array of 600 is one change in the log, which names all 600 elements, and a head that
// recovers from the log alone has the 600 jobs.
TEST_F(HeadShell, AnArrayIsOneChangeInTheLogAndRecoversWhole) {
  auto r = SubmitTrue(*head_, kAdmin, "0-1199:2");
  ASSERT_TRUE(r.result.ok()) << r.result.status().ToString();
  std::vector<store::ChangeRecord> changes;
  {
    std::lock_guard lock(disk_->mu);
    changes = disk_->state.changes;
  }
  ASSERT_FALSE(changes.empty());
  auto c = ChangeFromJson(Json::parse(changes.back().doc));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->revision, changes.back().revision);
  const auto* array = std::get_if<ArraySubmitted>(&c->what);
  ASSERT_NE(array, nullptr) << changes.back().doc;
  ASSERT_EQ(array->size(), 600u);
  EXPECT_EQ(array->job->id, r.result->id);
  EXPECT_EQ(array->Element(599).id, r.result->id + 599);
  EXPECT_EQ(array->Element(599).array_index, 1198);
  head_.reset();
  Open();
  auto jobs = List();
  ASSERT_TRUE(jobs.result.ok());
  ASSERT_EQ(jobs.result->size(), 600u);
  EXPECT_EQ(jobs.result->back().id, r.result->id + 599);
  EXPECT_EQ(jobs.result->back().array_index, 1198);
  EXPECT_EQ(jobs.result->back().array_id, r.result->id);
}

// Jobs' users must reach the checkpoint root: the default is a directory beside the head's
// private state directory, and a root inside it is refused, naming the flag.
TEST(HeadCheckpointRoot, TheDefaultIsOutsideTheStateDirectoryAndOneInsideIsRefused) {
  EXPECT_EQ(*CheckpointRootFor("", "/var/lib/corral/head/"), "/var/lib/corral/head-checkpoints");
  EXPECT_EQ(*CheckpointRootFor("/mnt/ckpt", "/var/lib/corral/head"), "/mnt/ckpt");
  EXPECT_EQ(*CheckpointRootFor("/var/lib/corral/headx", "/var/lib/corral/head"),
            "/var/lib/corral/headx");
  for (const char* inside : {"/var/lib/corral/head/checkpoints", "/var/lib/corral/head",
                             "/var/lib/corral/x/../head/ckpt"}) {
    auto refused = CheckpointRootFor(inside, "/var/lib/corral/head");
    ASSERT_FALSE(refused.ok()) << inside;
    EXPECT_EQ(refused.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(refused.status().message().find("--checkpoint-root"), std::string::npos)
        << refused.status().message();
  }
  HeadConfig config;
  config.state_dir = "/tmp/corral-ckpt-refused-" + std::to_string(getpid());
  config.core.checkpoint_root = config.state_dir + "/checkpoints";
  FakeClock clock;
  EXPECT_FALSE(Head::Open(config, &clock).ok()) << "the head refuses to start with it";
  std::filesystem::remove_all(config.state_dir);
}

// The audit log holds what an admin changed once it is durable, and nothing of a change the
// store refused (the lines are written by the commit thread after the commit).
TEST(HeadAudit, AnAdminsDurableChangesAreAuditedAndARefusedOneIsNot) {
  char tmpl[] = "/tmp/corral-audit-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  auto store =
      std::make_unique<FaultStore>(std::make_unique<MemoryStore>(std::make_shared<MemoryDisk>()));
  FaultStore* fault = store.get();
  FakeClock clock;
  HeadConfig config;
  config.state_dir = dir;
  config.on_store_failure = [](const Status&) {};
  auto h = Head::Open(config, &clock, std::move(store));
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  std::unique_ptr<Head> head = std::move(*h);
  head->Start();
  std::ifstream token_file(dir + "/admin.token");
  std::string admin;
  std::getline(token_file, admin);
  auto submit = [&](int n) {
    return SubmitTrue(*head, admin, n == 1 ? "" : "0-" + std::to_string(n - 1)).result;
  };
  auto audited = [&] {
    std::ifstream audit(dir + "/audit.log");
    std::vector<Json> lines;
    for (std::string line; std::getline(audit, line);) lines.push_back(Json::parse(line));
    return lines;
  };
  auto ok = submit(3);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  auto lines = audited();
  ASSERT_EQ(lines.size(), 1u) << "the array of three is one change";
  EXPECT_EQ(lines[0]["what"], "array_submitted");
  EXPECT_EQ(lines[0]["who"], "admin");
  EXPECT_GT(lines[0]["rev"].get<uint64_t>(), 0u);
  ASSERT_TRUE(submit(1).ok());
  ASSERT_EQ(audited().size(), 2u);
  EXPECT_EQ(audited()[1]["what"], "job_submitted");
  fault->SetMode(FaultStore::Mode::kFail);
  EXPECT_FALSE(submit(2).ok());
  EXPECT_EQ(audited().size(), 2u) << "a change the store refused did not happen";
  head.reset();
  std::filesystem::remove_all(dir);
}

// Counts what each commit holds: change records and job rows.
class CountingStore final : public store::Store {
 public:
  struct Batch {
    int changes = 0, job_rows = 0;
  };
  explicit CountingStore(std::unique_ptr<store::Store> inner) : inner_(std::move(inner)) {}
  Result<store::StoredState> Load() override { return inner_->Load(); }
  Status Commit(const std::vector<store::StateEdit>& edits) override {
    Batch b;
    for (const auto& e : edits) {
      b.changes += std::holds_alternative<store::AppendChange>(e);
      b.job_rows += std::holds_alternative<store::PutJob>(e);
    }
    {
      std::lock_guard lock(mu_);
      batches_.push_back(b);
    }
    return inner_->Commit(edits);
  }
  Result<std::vector<store::ChangeRecord>> ReadChanges(uint64_t after, int32_t limit) override {
    return inner_->ReadChanges(after, limit);
  }
  Result<std::vector<Job>> ReadRetiredJobs(const store::RetiredJobsQuery& q) const override {
    return inner_->ReadRetiredJobs(q);
  }
  std::vector<Batch> batches() const {
    std::lock_guard lock(mu_);
    return batches_;
  }

 private:
  std::unique_ptr<store::Store> inner_;
  mutable std::mutex mu_;
  std::vector<Batch> batches_;
};

// Snapshot rows (every job changed since the last snapshot) are not written with changes
// someone waits for, but alone when the head is idle; or with the next batch once overdue.
class HeadSnapshot : public ::testing::Test {
 protected:
  void Open(DurationMs tick_ms) {
    auto owned = std::make_unique<CountingStore>(
        std::make_unique<MemoryStore>(std::make_shared<MemoryDisk>()));
    store_ = owned.get();
    HeadConfig config;
    config.durability.snapshot_every = 100;
    config.tick_ms = tick_ms;
    auto h = Head::Create(config, std::move(owned), &clock_, &random_, {kAdmin, "join-secret"});
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    head_ = std::move(*h);
    head_->Start();
  }
  // `n` one-job submissions, all sent before any is answered: they share a few commits.
  void SubmitMany(int n) {
    std::vector<std::promise<Status>> done(n);
    for (auto& p : done) {
      JobSpec spec;
      spec.command = {"true"};
      head_->Run(kAdmin, SubmitJob{spec, "", ""}, [&p](Result<Job> r) { p.set_value(r.status()); });
    }
    for (auto& p : done) ASSERT_TRUE(p.get_future().get().ok());
  }
  FakeClock clock_;
  CountingRandom random_;
  CountingStore* store_ = nullptr;
  std::unique_ptr<Head> head_;
};

TEST_F(HeadSnapshot, ADueSnapshotIsWrittenAloneWhenTheHeadIsIdle) {
  Open(/*tick_ms=*/20);
  SubmitMany(150);  // a snapshot falls due among these
  for (const auto& b : store_->batches()) {
    EXPECT_FALSE(b.changes > 0 && b.job_rows > 0) << "the snapshot rode with changes";
  }
  bool alone = false;
  for (int i = 0; i < 300 && !alone; ++i) {
    for (const auto& b : store_->batches()) alone = alone || (b.changes == 0 && b.job_rows >= 100);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(alone) << "no batch of the snapshot's rows alone";
}

TEST_F(HeadSnapshot, AnOverdueSnapshotRidesWithTheNextBatch) {
  Open(/*tick_ms=*/3'600'000);  // never idle-ticked after the start
  SubmitMany(900);
  size_t before = store_->batches().size();
  for (const auto& b : store_->batches()) EXPECT_EQ(b.job_rows, 0);
  SubmitMany(150);  // past 1,000 changes without a snapshot: ten intervals
  auto batches = store_->batches();
  int rode = 0;
  for (size_t i = before; i < batches.size(); ++i) {
    if (batches[i].job_rows == 0) continue;
    ++rode;
    EXPECT_GT(batches[i].changes, 0) << "it rode with a batch of changes";
    EXPECT_GE(batches[i].job_rows, 900) << "the rows of every job submitted so far";
  }
  EXPECT_EQ(rode, 1);
}

}  // namespace
}  // namespace corral::head
