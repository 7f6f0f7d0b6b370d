// The head's state machine driven directly (no HTTP): an agent's register/sync protocol,
// the job lifecycle, and recovery from the store after a restart.
#include "head/head.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <future>

namespace corral::head {
namespace {

class FakeClock final : public Clock {
 public:
  TimeMs Now() const override { return now; }
  TimeMs now = 1'000'000;
};

template <typename T>
Result<T> Call(std::function<void(Head::Callback<T>)> fn) {
  std::promise<Result<T>> p;
  fn([&p](Result<T> r) { p.set_value(std::move(r)); });
  return p.get_future().get();
}

class HeadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("corral-head-" + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    Open();
  }
  void TearDown() override {
    head_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Open() {
    HeadConfig config;
    config.state_dir = dir_.string();
    auto h = Head::Open(config, &clock_);
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    head_ = std::move(*h);
    head_->Start();
  }
  RegisterResponse RegisterNode(const std::string& name, int gpus) {
    RegisterRequest req;
    req.name = name;
    req.address = "127.0.0.1:1";
    req.cpu_milli = 8000;
    req.memory_mb = 16000;
    for (int i = 0; i < gpus; ++i)
      req.gpus.push_back({i, "GPU-" + std::to_string(i), "Sim", 1000, 0, true});
    auto r = Call<RegisterResponse>([&](auto cb) { head_->Register(req, cb); });
    EXPECT_TRUE(r.ok());
    return *r;
  }
  Result<SyncResponse> SyncNode(const std::string& name, const RegisterResponse& reg,
                                std::vector<RunReport> runs) {
    SyncRequest req;
    req.node = name;
    req.agent_epoch = reg.agent_epoch;
    req.runs = std::move(runs);
    return Call<SyncResponse>([&](auto cb) { head_->Sync(req, reg.node_token, cb); });
  }
  Job Submit(int gpus) {
    JobSpec spec;
    spec.command = {"true"};
    spec.per_replica.gpu_milli = gpus * kGpuMilli;
    auto r = Call<Job>([&](auto cb) { head_->Submit(spec, "ana", cb); });
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return *r;
  }
  Job Get(JobId id) {
    auto r = Call<Job>([&](auto cb) { head_->GetJob(id, cb); });
    EXPECT_TRUE(r.ok());
    return *r;
  }

  std::filesystem::path dir_;
  FakeClock clock_;
  std::unique_ptr<Head> head_;
};

TEST_F(HeadTest, JobRunsThroughSyncAndSurvivesRestart) {
  auto reg = RegisterNode("n1", 4);
  Job job = Submit(2);
  EXPECT_EQ(job.state, JobState::kPending);
  // The agent learns its run through sync (the schedule pass runs between calls).
  SyncResponse desired;
  for (int i = 0; i < 100 && desired.runs.empty(); ++i) {
    auto r = SyncNode("n1", reg, {});
    ASSERT_TRUE(r.ok());
    desired = *r;
    if (desired.runs.empty()) usleep(10000);
  }
  ASSERT_EQ(desired.runs.size(), 1u);
  const RunOrder& o = desired.runs[0];
  EXPECT_EQ(o.run_id, std::to_string(job.id) + ".1");
  EXPECT_EQ(o.gpus.size(), 2u);
  EXPECT_EQ(o.env.at("CORRAL_JOB_ID"), std::to_string(job.id));
  EXPECT_EQ(o.env.at("WORLD_SIZE"), "1");
  ASSERT_TRUE(SyncNode("n1", reg, {{o.run_id, 0, true, 0, clock_.now, 0}}).ok());
  EXPECT_EQ(Get(job.id).state, JobState::kRunning);

  // Restart: the job is still running, on the same GPUs; the epoch moved on.
  uint64_t epoch = head_->epoch();
  head_.reset();
  Open();
  EXPECT_EQ(head_->epoch(), epoch + 1);
  Job after = Get(job.id);
  EXPECT_EQ(after.state, JobState::kRunning);
  EXPECT_EQ(after.runs[0].placement[0].gpus, o.gpus);
  // The node token survived too; the exit is reported and the job succeeds.
  auto r = SyncNode("n1", reg, {{o.run_id, 0, false, 0, clock_.now, clock_.now + 5}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->runs.empty());
  EXPECT_EQ(Get(job.id).state, JobState::kSucceeded);
}

TEST_F(HeadTest, RejectsWhatCanNeverFitAndStoresNothing) {
  RegisterNode("n1", 4);
  JobSpec spec;
  spec.command = {"true"};
  spec.per_replica.gpu_milli = 8 * kGpuMilli;
  auto r = Call<Job>([&](auto cb) { head_->Submit(spec, "ana", cb); });
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("never fit"), std::string::npos);
  auto jobs = Call<std::vector<Job>>([&](auto cb) { head_->ListJobs({}, cb); });
  ASSERT_TRUE(jobs.ok());
  EXPECT_TRUE(jobs->empty());
}

TEST_F(HeadTest, SyncWithABadTokenIsRefused) {
  auto reg = RegisterNode("n1", 1);
  reg.node_token = "not-the-token";
  auto r = SyncNode("n1", reg, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnauthenticated);
}

TEST_F(HeadTest, SilentNodeGoesDownAndItsRunIsRequeuedWhileRestartsRemain) {
  auto reg = RegisterNode("n1", 2);
  JobSpec spec;
  spec.command = {"sleep", "100"};
  spec.per_replica.gpu_milli = kGpuMilli;
  spec.max_restarts = 1;
  auto job = Call<Job>([&](auto cb) { head_->Submit(spec, "ana", cb); });
  ASSERT_TRUE(job.ok());
  for (int i = 0; i < 100 && Get(job->id).state == JobState::kPending; ++i) usleep(10000);
  ASSERT_EQ(Get(job->id).state, JobState::kScheduled);
  clock_.now += 61 * kSecond;  // past down_after: the next tick loses the node
  Job after;
  for (int i = 0; i < 300; ++i) {
    after = Get(job->id);
    if (after.runs[0].state == RunState::kLost) break;
    usleep(10000);
  }
  EXPECT_EQ(after.runs[0].state, RunState::kLost);
  EXPECT_EQ(after.state, JobState::kPending) << "one restart remains: back to pending";
}

}  // namespace
}  // namespace corral::head
