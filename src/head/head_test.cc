// The head's shell with real threads around the core: write-ahead answers, the revision of
// each answer, restart from the store, and what it answers when the store fails, stalls or
// loses an acknowledgement.
#include "head/head.h"

#include <gtest/gtest.h>

#include <future>

#include "testing/fakes.h"

namespace corral::head {
namespace {

using corral::testing::CountingRandom;
using corral::testing::FakeClock;
using corral::testing::FaultStore;
using corral::testing::MemoryDisk;
using corral::testing::MemoryStore;

constexpr char kAdmin[] = "admin-secret";

template <typename T>
struct Answer {
  Result<T> result = Internal("no answer");
  uint64_t revision = 0;
};

class HeadShell : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }
  void Open() {
    auto store = std::make_unique<FaultStore>(std::make_unique<MemoryStore>(disk_));
    fault_ = store.get();
    HeadConfig config;
    config.on_store_failure = [this](const Status&) { store_failures_++; };
    auto h = Head::Create(config, std::move(store), &clock_, &random_, {kAdmin, "join-secret"});
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    head_ = std::move(*h);
    head_->Start();
  }
  template <typename T>
  std::future<Answer<T>> Async(std::function<void(Head::Callback<T>)> fn) {
    auto p = std::make_shared<std::promise<Answer<T>>>();
    fn([this, p](Result<T> r) { p->set_value({std::move(r), head_->ReplyRevision()}); });
    return p->get_future();
  }
  Answer<Job> Submit(const std::string& bearer = kAdmin) {
    JobSpec spec;
    spec.command = {"true"};
    return Async<Job>([&](auto cb) { head_->Submit(bearer, spec, "", cb); }).get();
  }
  Answer<std::vector<Job>> List() {
    return Async<std::vector<Job>>([&](auto cb) { head_->ListJobs(kAdmin, {}, cb); }).get();
  }

  std::shared_ptr<MemoryDisk> disk_ = std::make_shared<MemoryDisk>();
  FakeClock clock_;
  CountingRandom random_;
  FaultStore* fault_ = nullptr;
  std::atomic<int> store_failures_{0};
  std::unique_ptr<Head> head_;
};

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

TEST_F(HeadShell, ABadOrMissingTokenIsRefused) {
  auto r = Submit("wrong");
  EXPECT_EQ(r.result.status().code(), ErrorCode::kUnauthenticated);
  EXPECT_EQ(Submit("").result.status().code(), ErrorCode::kUnauthenticated);
  EXPECT_TRUE(List().result->empty());
}

TEST_F(HeadShell, ANewTokenIsShownOnceAndWorks) {
  auto t = Async<Head::NewToken>([&](auto cb) {
             head_->CreateToken(kAdmin, {"ana", Role::kUser, {}, 0}, cb);
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
  auto pending = Async<Job>([&](auto cb) { head_->Submit(kAdmin, spec, "", cb); });
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

}  // namespace
}  // namespace corral::head
