#include "agent/agent.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <thread>

#include "agent/node/fake_node_env.h"
#include "agent/test_util.h"

namespace corral::agent {
namespace {

using testing::FakeNodeEnv;
using testing::ReadFileOr;
using testing::ShellOrder;
using testing::TempDir;
using testing::Touch;
using testing::WaitFor;

// An in-memory head: answers syncs with `desired`, holding them until it changes.
struct FakeHead : HeadChannel {
  std::mutex mu;
  std::condition_variable cv;
  bool reachable = true, reregister = false, cancelled = false;
  int64_t unreachable_calls = 0;  // calls answered "head down"
  uint64_t head_epoch = 5, version = 1, agent_epochs = 0;
  std::vector<RunOrder> desired;
  std::vector<RegisterRequest> registers;
  std::vector<SyncRequest> syncs;
  std::chrono::steady_clock::time_point last_answer;  // of the last successful call

  Result<RegisterResponse> Register(const RegisterRequest& r) override {
    std::lock_guard lock(mu);
    if (!reachable && ++unreachable_calls) return Unavailable("head down");
    registers.push_back(r);
    last_answer = std::chrono::steady_clock::now();
    return RegisterResponse{"token", head_epoch, ++agent_epochs};
  }
  Result<SyncResponse> Sync(const SyncRequest& r) override {
    std::unique_lock lock(mu);
    if (!reachable && ++unreachable_calls) return Unavailable("head down");
    syncs.push_back(r);
    if (std::exchange(reregister, false)) return SyncResponse{head_epoch, version, {}, true};
    cv.wait_for(lock, std::chrono::milliseconds(r.wait_ms),
                [&] { return version != r.desired_version || cancelled || !reachable; });
    if (!reachable || cancelled) return Unavailable("head down");
    last_answer = std::chrono::steady_clock::now();
    return SyncResponse{head_epoch, version, desired, false};
  }
  void Cancel() override {
    Set([&] { cancelled = true; });
  }
  template <typename F>
  void Set(F f) {
    std::lock_guard lock(mu);
    f();
    ++version;
    cv.notify_all();
  }
  template <typename F>
  bool Saw(F pred) {
    std::lock_guard lock(mu);
    return std::any_of(syncs.begin(), syncs.end(), pred);
  }
};

struct AgentUnderTest {
  FakeHead* head;
  std::unique_ptr<Agent> agent;
  std::thread thread;
  int rc = -1;
  // `desired`: what the head wants from the first sync on (a restarted agent that found the
  // head wanting nothing would rightly stop what it re-adopted). `reachable`: whether the head
  // answers from the start.
  AgentUnderTest(const std::string& state, AgentConfig config = {},
                 std::vector<RunOrder> desired = {}, NodeEnv env = RealNodeEnv(),
                 bool reachable = true) {
    auto h = std::make_unique<FakeHead>();
    h->desired = std::move(desired);
    h->reachable = reachable;
    head = h.get();
    config.name = "n1";
    config.state_dir = state;
    config.sync_wait_ms = 10000;  // an exit must be reported long before the hold ends
    config.retry_min_ms = 20;
    config.retry_max_ms = 100;
    agent = std::make_unique<Agent>(config, std::make_unique<SimulatedGpuProbe>(2, "H100", "n1"),
                                    std::move(h), env);
    thread = std::thread([this] { rc = agent->Run(); });
  }
  ~AgentUnderTest() { StopAndJoin(); }
  void StopAndJoin() {
    if (!thread.joinable()) return;
    agent->Stop();
    thread.join();
    EXPECT_EQ(rc, 0);
  }
};

bool Reports(const SyncRequest& s, const std::string& run_id, bool running, int32_t code = 0) {
  return std::any_of(s.runs.begin(), s.runs.end(), [&](const RunReport& r) {
    return r.run_id == run_id && r.running == running && (running || r.exit_code == code);
  });
}

TEST(AgentTest, RegistersRunsOrdersAndReportsAnExitAtOnce) {
  TempDir state, dir;
  AgentUnderTest t(state.path());
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard l(t.head->mu);
    return !t.head->registers.empty();
  }));
  {
    std::lock_guard l(t.head->mu);
    const RegisterRequest& r = t.head->registers[0];
    EXPECT_EQ(r.name, "n1");
    EXPECT_EQ(r.gpus.size(), 2u);
    EXPECT_EQ(r.labels.at("gpu_model"), "H100");
    EXPECT_GE(r.cpu_milli, 1000);
    EXPECT_GT(r.memory_mb, 0);
  }
  std::string go = dir.path() + "/go";
  t.head->Set([&] {
    t.head->desired = {ShellOrder("1.0", "while [ ! -f " + go + " ]; do sleep 0.01; done; exit 4")};
  });
  ASSERT_TRUE(
      WaitFor([&] { return t.head->Saw([](auto& s) { return Reports(s, "1.0", true); }); }));
  Touch(go);  // the agent is now inside a 10 s long poll
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(
      WaitFor([&] { return t.head->Saw([](auto& s) { return Reports(s, "1.0", false, 4); }); }));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(500));
  EXPECT_EQ(ReadFileOr(state.path() + "/head_epoch"), "5\n");
}

// Exits are events, not something a timer finds: with a poll interval of a minute, an exit
// is still reported at once (the monitor wakes the agent through its FIFO), and Stop() wakes
// the waiting poller too.
TEST(AgentTest, AnExitWakesTheAgentWithoutAPollingInterval) {
  TempDir state, dir;
  AgentConfig config;
  config.poll_interval_ms = 60000;
  AgentUnderTest t(state.path(), config);
  std::string go = dir.path() + "/go";
  t.head->Set([&] {
    t.head->desired = {ShellOrder("2.0", "while [ ! -f " + go + " ]; do sleep 0.01; done; exit 3")};
  });
  ASSERT_TRUE(
      WaitFor([&] { return t.head->Saw([](auto& s) { return Reports(s, "2.0", true); }); }));
  Touch(go);
  ASSERT_TRUE(
      WaitFor([&] { return t.head->Saw([](auto& s) { return Reports(s, "2.0", false, 3); }); }));
  auto t0 = std::chrono::steady_clock::now();
  t.StopAndJoin();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
}

// Threads of the agent that wait on its clock when at rest: the lease keeper always, and the
// sync loop while it backs off after a failed call.
constexpr int kLeaseKeeper = 1;
constexpr int kLeaseKeeperAndBackoff = 2;

// A deposed leader's orders are refused: the sync that brought them failed, and the agent
// backs off on its clock having started nothing; a newer leader's are run once it is asked to
// register again.
TEST(AgentTest, RefusesOrdersFromAnOlderHeadEpochAndReregistersWhenAsked) {
  TempDir state, dir;
  FakeNodeEnv fake;
  AgentUnderTest t(state.path(), {}, {}, {fake.clock, RealNodeEnv().programs, fake.files});
  ASSERT_TRUE(WaitFor([&] { return t.head->Saw([](auto&) { return true; }); }));
  t.head->Set([&] {
    t.head->head_epoch = 4;  // a deposed leader
    t.head->desired = {ShellOrder("1.0", "touch " + dir.path() + "/started")};
  });
  ASSERT_TRUE(fake.clock.BlockUntilWaiting(kLeaseKeeperAndBackoff)) << "the sync was refused";
  EXPECT_EQ(ReadFileOr(dir.path() + "/started", "absent"), "absent");
  EXPECT_EQ(*fake.files.Read(state.path() + "/head_epoch"), "5\n") << "not lowered";
  t.head->Set([&] {
    t.head->head_epoch = 6;
    t.head->reregister = true;
  });
  fake.clock.Advance(kSecond);  // past the backoff
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard l(t.head->mu);
    return t.head->registers.size() == 2;
  }));
  ASSERT_TRUE(WaitFor([&] { return ReadFileOr(dir.path() + "/started", "absent") != "absent"; }));
  EXPECT_EQ(*fake.files.Read(state.path() + "/head_epoch"), "6\n");
}

// Failed registrations are retried after a backoff that doubles from retry_min_ms up to
// retry_max_ms, counted on the agent's clock: each retry exactly when its backoff has passed.
TEST(AgentTest, RetriesRegistrationWithABackoffThatDoublesUpToItsMaximum) {
  TempDir state;
  FakeNodeEnv fake;
  AgentConfig config;  // AgentUnderTest: retry_min_ms 20, retry_max_ms 100
  AgentUnderTest t(state.path(), config, {}, fake.env(), /*reachable=*/false);
  auto failed_calls = [&] {
    std::lock_guard l(t.head->mu);
    return t.head->unreachable_calls;
  };
  ASSERT_TRUE(fake.clock.BlockUntilWaiting(kLeaseKeeperAndBackoff));
  EXPECT_EQ(failed_calls(), 1);
  for (DurationMs backoff : {20, 40, 80, 100, 100}) {
    fake.clock.Advance(backoff - 1);
    ASSERT_TRUE(fake.clock.BlockUntilWaiting(kLeaseKeeperAndBackoff));
    const int64_t before = failed_calls();
    fake.clock.Advance(1);
    ASSERT_TRUE(WaitFor([&] { return failed_calls() == before + 1; }))
        << "retried when its " << backoff << " ms had passed";
    ASSERT_TRUE(fake.clock.BlockUntilWaiting(kLeaseKeeperAndBackoff));
  }
  EXPECT_EQ(failed_calls(), 6);
  t.head->Set([&] { t.head->reachable = true; });
  fake.clock.Advance(100);
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard l(t.head->mu);
    return t.head->registers.size() == 1;
  }));
}

// The lease runs on the agent's clock, not the machine's, and ends exactly at its deadline:
// with a lease of an hour and the head gone, the run still runs when the clock has moved an
// hour since the last answer, and is fenced a millisecond later.
TEST(AgentTest, TheLeaseEndsExactlyAtItsDeadlineOnTheAgentsClock) {
  TempDir state;
  FakeNodeEnv fake;
  AgentConfig config;
  config.lease_ms = kHour;
  config.poll_interval_ms = 10;
  std::atomic<int64_t> polls{0};
  config.on_poll = [&] { ++polls; };
  AgentUnderTest t(state.path(), config, {}, {fake.clock, RealNodeEnv().programs, fake.files});
  t.head->Set([&] { t.head->desired = {ShellOrder("1.0", "sleep 60")}; });
  ASSERT_TRUE(
      WaitFor([&] { return t.head->Saw([](auto& s) { return Reports(s, "1.0", true); }); }));
  t.head->Set([&] { t.head->reachable = false; });
  ASSERT_TRUE(fake.clock.BlockUntilWaiting(kLeaseKeeperAndBackoff)) << "its sync failed";
  // Every answer came at the clock's start: the lease ends an hour after it.
  auto fenced = [&] {
    return ReadFileOr(state.path() + "/runs/1.0.0/record").find("\nexit ") != std::string::npos;
  };
  auto two_more_polls = [&] {
    const int64_t seen = polls.load();
    return WaitFor([&] { return polls.load() >= seen + 2; });  // one whole turn after this
  };
  fake.clock.Advance(kHour);
  ASSERT_TRUE(two_more_polls());
  EXPECT_FALSE(fenced()) << "fenced at its deadline, not after it";
  fake.clock.Advance(1);
  ASSERT_TRUE(WaitFor(fenced)) << "not fenced once the lease ran out";
  t.head->Set([&] { t.head->reachable = true; });
  fake.clock.Advance(kSecond);  // past the sync loop's backoff
  ASSERT_TRUE(WaitFor(
      [&] { return t.head->Saw([](auto& s) { return Reports(s, "1.0", false, -SIGTERM); }); }));
}

TEST(AgentTest, ARestartedAgentReportsTheRunsOfThePreviousOne) {
  TempDir state, dir;
  std::string go = dir.path() + "/go";
  RunOrder o = ShellOrder("1.0", "echo started >> " + dir.path() + "/starts; while [ ! -f " + go +
                                     " ]; do sleep 0.01; done; exit 7");
  {
    AgentUnderTest t(state.path());
    t.head->Set([&] { t.head->desired = {o}; });
    ASSERT_TRUE(
        WaitFor([&] { return t.head->Saw([](auto& s) { return Reports(s, "1.0", true); }); }));
  }
  AgentUnderTest t(state.path(), {}, {o});
  ASSERT_TRUE(
      WaitFor([&] { return t.head->Saw([](auto& s) { return Reports(s, "1.0", true); }); }));
  Touch(go);
  ASSERT_TRUE(
      WaitFor([&] { return t.head->Saw([](auto& s) { return Reports(s, "1.0", false, 7); }); }));
  EXPECT_EQ(ReadFileOr(dir.path() + "/starts"), "started\n");
  EXPECT_EQ(*t.agent->ReadRunLog("1.0", 0, 0, "stdout", 0, 100), "");
}

TEST(AgentTest, AFailedGpuProbeStopsTheAgentWithAnError) {
  TempDir state;
  AgentConfig config;
  config.name = "n1";
  config.state_dir = state.path();
  Agent agent(config, std::make_unique<NvmlGpuProbe>("/nonexistent/libnvidia-ml.so.1"),
              std::make_unique<FakeHead>(), RealNodeEnv());
  EXPECT_EQ(agent.Run(), 1);
}

}  // namespace
}  // namespace corral::agent
