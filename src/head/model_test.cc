// A randomized model test of the head's core: random commands, group commits at random
// points, and crashes (the store keeps only what was committed) at random points. After each
// crash the recovered state must equal the acknowledged one; at the end, replaying the whole
// change log from nothing must reproduce the live state exactly, and no GPU is ever held by
// two live runs. Each node's emulated agent keeps its desired runs from the head's answers,
// deltas where the head can give them, and must always hold exactly the full desired state.
// Jobs are retired a few minutes after they end, so retirement interleaves
// with everything else.
#include <gtest/gtest.h>

#include <random>

#include "core/codec.h"
#include "core/desired_runs.h"
#include "head/core_test_harness.h"

namespace corral::head {
namespace {

using testing::CoreHarness;

class Model {
 public:
  Model(uint32_t seed, DurabilityConfig durability) : rng_(seed), h_(Config(), durability) {}

  static CoreConfig Config() {
    CoreConfig c;
    c.scheduler.min_runtime_before_preempt_ms = 0;
    c.retain_finished_ms = 3 * kMinute;  // retirement in the mix, crashes around it
    return c;
  }

  int Pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  bool Chance(int percent) { return Pick(100) < percent; }

  void Run(int steps) {
    for (int i = 0; i < 1 + Pick(3); ++i) RegisterNode("n" + std::to_string(i));
    for (int i = 0; i < steps && !::testing::Test::HasFatalFailure(); ++i) {
      switch (Pick(10)) {
        case 0:
        case 1:
          Submit();
          break;
        case 2:
          Cancel();
          break;
        case 3:
        case 4:
          Report();
          break;
        case 5:
          h_.now += Pick(70) * kSecond;
          h_.core().Tick(h_.now);
          break;
        case 6:
        case 7:
          h_.core().Schedule(h_.now);
          break;
        case 8:
          Admin();
          break;
        case 9:
          RegisterNode("n" + std::to_string(Pick(4)));
          break;
      }
      CheckNoSharedGpu();
      // After every step (every 4th under sanitizers, see CMakeLists.txt): the derived state
      // kept live by the changes is what a recovery rebuilds from the state alone.
      if (i % CORRAL_MODEL_CHECK_EVERY == 0) h_.ExpectDerivedStateRebuilds();
      if (Chance(40)) AgentSyncs();
      if (Chance(30)) h_.Commit();
      if (Chance(4)) h_.Crash();
    }
    h_.ExpectReplayEqualsLive();
    h_.Commit();
  }
  CoreHarness& harness() { return h_; }
  int deltas() const { return deltas_; }
  int fulls() const { return fulls_; }

 private:
  const Caller kAdmin = Caller::User("root", Role::kAdmin);

  void RegisterNode(const std::string& name) {
    RegisterRequest req;
    req.name = name;
    req.address = name + ":1";
    req.cpu_milli = 64000;
    req.memory_mb = 1 << 20;
    // An agent re-registers with the GPUs it had (a node losing GPUs is a health matter).
    int gpus = gpus_.count(name) ? gpus_[name] : (gpus_[name] = 2 + Pick(3));
    for (int g = 0; g < gpus; ++g)
      req.gpus.push_back({g, name + "-" + std::to_string(g), "Sim", 1000, 0, true});
    auto r = h_.core().Register(Caller{Caller::Kind::kJoin, "join", Role::kUser, {}}, req,
                                "s-" + name + "-" + std::to_string(++secrets_), h_.now);
    ASSERT_TRUE(r.ok());
  }
  void Submit() {
    JobSpec s;
    s.command = {"x"};
    s.replicas = 1 + (Chance(25) ? 1 : 0);
    s.per_replica.gpu_milli = Pick(4) * kGpuMilli;
    s.preemptible = Chance(50);
    s.max_restarts = Pick(3);
    s.queue = Chance(50) ? "default" : (Chance(50) ? "a" : "b");
    if (Chance(30)) s.time_limit_ms = (10 + Pick(100)) * kSecond;
    if (Chance(15)) s.array = Chance(50) ? "0-3%2" : "0-5:2";
    if (JobId dep = AnyJob(); dep != 0 && Chance(15)) {
      const char* kTypes[] = {"afterok", "afterany", "afternotok"};
      s.dependencies = *ParseDependencies(std::string(kTypes[Pick(3)]) + ":" + std::to_string(dep));
    }
    (void)h_.core().Submit(Caller::User(Chance(50) ? "ana" : "bob"), s, "", h_.now);
  }
  JobId AnyJob() {
    const auto& jobs = h_.core().state().jobs;
    if (jobs.empty()) return 0;
    auto it = jobs.begin();
    std::advance(it, Pick(static_cast<int>(jobs.size())));
    return it->first;
  }
  void Cancel() {
    if (JobId id = AnyJob()) {
      (void)h_.core().Cancel(Chance(50) ? Caller::User("ana") : kAdmin, id, h_.now);
    }
  }
  void Report() {
    const auto& nodes = h_.core().state().nodes;
    if (nodes.empty()) return;
    auto it = nodes.begin();
    std::advance(it, Pick(static_cast<int>(nodes.size())));
    const Node& node = it->second;
    SyncRequest req;
    req.node = node.name;
    req.agent_epoch = node.agent_epoch - (Chance(5) ? 1 : 0);  // now and then a stale agent
    for (const RunOrder& o : h_.core().DesiredFor(node.name).runs) {
      int what = Pick(4);
      if (what == 0) continue;
      RunReport r{o.run_id, o.replica, what == 1, 0, h_.now, 0};
      if (what == 3) r.exit_code = Chance(50) ? 1 : -15;
      if (o.stop && Chance(70)) r = {o.run_id, o.replica, false, -15, h_.now, h_.now};
      req.runs.push_back(r);
    }
    (void)h_.core().Report(Caller::Node(node.name), req, h_.now);
  }
  // One node's agent asks from the version it holds; the answer goes through the wire format.
  void AgentSyncs() {
    const auto& nodes = h_.core().state().nodes;
    if (nodes.empty()) return;
    auto it = nodes.begin();
    std::advance(it, Pick(static_cast<int>(nodes.size())));
    DesiredRuns& agent = agents_[it->first];
    auto answer = SyncResponseFromJson(ToJson(h_.core().AnswerFor(it->first, agent.version())));
    ASSERT_TRUE(answer.ok()) << answer.status().ToString();
    ++(answer->delta ? deltas_ : fulls_);
    ASSERT_TRUE(agent.Apply(std::move(*answer)));
    auto full = SyncResponseFromJson(ToJson(h_.core().DesiredFor(it->first)));
    ASSERT_TRUE(full.ok());
    ASSERT_EQ(agent.version(), full->desired_version);
    ASSERT_EQ(agent.Full().runs, full->runs) << "node " << it->first;
  }
  void Admin() {
    switch (Pick(3)) {
      case 0:
        (void)h_.core().SetQueue(kAdmin, {Chance(50) ? "a" : "b", Pick(4), -1, 1.0 + Pick(3)},
                                 h_.now);
        break;
      case 1:
      case 2: {
        const auto& nodes = h_.core().state().nodes;
        if (nodes.empty()) return;
        (void)h_.core().SetDrain(kAdmin, nodes.begin()->first, Chance(50), h_.now);
        break;
      }
    }
  }
  void CheckNoSharedGpu() {
    std::map<JobId, int32_t> live;  // active elements per array
    for (const auto& [id, job] : h_.core().state().jobs) {
      if (job.IsArrayElement() &&
          (job.state == JobState::kScheduled || job.state == JobState::kRunning)) {
        ASSERT_TRUE(job.array_max_running == 0 || ++live[job.array_id] <= job.array_max_running)
            << "array " << job.array_id << " runs more than its limit";
      }
    }
    std::set<std::pair<std::string, int32_t>> held;
    for (const auto& [id, job] : h_.core().state().jobs) {
      if (job.state != JobState::kScheduled && job.state != JobState::kRunning) continue;
      const corral::Run& run = *job.CurrentRun();
      for (size_t r = 0; r < run.placement.size(); ++r) {
        if (run.exit_codes[r] != kNotExited) continue;
        for (int32_t g : run.placement[r].gpus) {
          ASSERT_TRUE(held.insert({run.placement[r].node, g}).second)
              << "GPU " << g << " of " << run.placement[r].node << " held twice";
        }
      }
    }
  }

  std::mt19937 rng_;
  CoreHarness h_;
  int secrets_ = 0;
  std::map<std::string, int> gpus_;
  std::map<std::string, DesiredRuns> agents_;
  int deltas_ = 0, fulls_ = 0;
};

TEST(HeadModel, RecoveredStateIsTheAcknowledgedOneAndReplayIsExact) {
  size_t retired = 0;
  int deltas = 0, fulls = 0;
  for (uint32_t seed = 1; seed <= 60 && !::testing::Test::HasFatalFailure(); ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    // Snapshots every few changes, and a log kept whole so it can be replayed from zero.
    Model m(seed, {1 + seed % 17, 1u << 30});
    m.Run(200);
    m.harness().ExpectStoredLogReplaysToAcked();
    retired += m.harness().core().state().retired.size();
    deltas += m.deltas();
    fulls += m.fulls();
  }
  EXPECT_GT(retired, 100u) << "the model should exercise retirement";
  // Both kinds of answer: deltas, and full ones after crashes (new epochs) and re-registrations.
  EXPECT_GT(deltas, 1000);
  EXPECT_GT(fulls, 300);
}

TEST(HeadModel, RecoveryWorksWithATruncatedLog) {
  for (uint32_t seed = 1000; seed < 1030 && !::testing::Test::HasFatalFailure(); ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Model m(seed, {1 + seed % 7, 3});  // the store keeps only 3 changes below a snapshot
    m.Run(200);
    m.harness().Crash();
  }
}

}  // namespace
}  // namespace corral::head
