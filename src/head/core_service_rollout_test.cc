// Rolling updates and draining through the head's core (docs/services.md): an update replaces
// replicas one at a time without the serving ones ever dropping below the desired count, a
// version that is not ready in time or crash-loops is rolled back, replicas leaving drain
// first (scale-down, removal), bad updates change nothing, and all of it survives a crash
// after every step (the fixture, core_scenario.h).
#include "core/service.h"
#include "head/core_scenario.h"

namespace corral::head::core_test {
namespace {

ServiceSpec RollingService() {
  ServiceSpec s;
  s.name = "echo";
  s.min_replicas = 2;
  s.max_replicas = 3;
  s.health_path = "/health";
  s.drain_timeout_ms = 30 * kSecond;
  s.job.command = {"python3", "v1.py"};
  s.job.per_replica.gpu_milli = kGpuMilli;
  return s;
}

ServiceTemplatePatch NewCommand(const std::string& script, DurationMs ready_timeout = kMinute) {
  ServiceTemplatePatch p;
  p.job.command = {"python3", script};
  p.fields = {"command"};
  p.ready_timeout_ms = ready_timeout;
  return p;
}

class RolloutScenario : public Scenario {
 protected:
  void Create(ServiceSpec spec) {
    auto r = core().CreateService(kAna, std::move(spec), now());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    Step();
  }
  ServiceView Show() {
    auto v = core().GetService(kAdmin, "echo");
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return v.ok() ? *v : ServiceView{};
  }
  void Tick() {
    core().Tick(now());
    Step();
  }
  // The agent's side: the pending replicas are placed and run; those asked to stop exit.
  void Sync() {
    Schedule();
    std::vector<RunReport> runs;
    for (const ServiceReplica& r : Show().replicas) {
      const Job job = Get(r.job);
      const corral::Run* run = job.CurrentRun();
      if (!run) continue;
      runs.push_back(run->stop_requested ? Exited(job, 0, -15) : Running(job));
    }
    ASSERT_TRUE(*Report("n1", runs));
  }
  // The proxy's side: running replicas answer their readiness check; draining ones have no
  // request in flight.
  void ProxyReports(bool ready, bool drained) {
    for (const ServiceReplica& r : Show().replicas) {
      if (ready && r.running && !r.ready) {
        ASSERT_TRUE(core().ReportReplicaReady(kAdmin, r.job, now()).ok());
        Step();
      }
      if (drained && r.draining && r.running) {
        ASSERT_TRUE(core().ReportReplicaDrained(kAdmin, r.job, now()).ok());
        Step();
      }
    }
  }
  // Replicas that take requests: ready, running, not leaving.
  int Serving() {
    int n = 0;
    for (const ServiceReplica& r : Show().replicas) n += r.ready && r.running && !r.draining;
    return n;
  }
  std::set<JobId> Ids() {
    std::set<JobId> ids;
    for (const ServiceReplica& r : Show().replicas) ids.insert(r.job);
    return ids;
  }
};

TEST_P(RolloutScenario, AnUpdateReplacesReplicasOneAtATimeNeverBelowTheServingCount) {
  Register("n1", 4);
  Create(RollingService());
  Sync();
  ProxyReports(true, false);
  ASSERT_EQ(Serving(), 2);
  const std::set<JobId> first = Ids();
  ASSERT_TRUE(core().UpdateService(kAna, "echo", NewCommand("v2.py"), now()).ok());
  Step();
  EXPECT_EQ(Show().service.version, 2);
  ASSERT_TRUE(Show().service.rollout.has_value());
  EXPECT_EQ(Show().service.rollout->from.job.command[1], "v1.py");
  size_t most_live = 0;
  for (int round = 0; round < 20 && Show().service.rollout; ++round) {
    Sync();
    EXPECT_GE(Serving(), 2) << "round " << round;
    most_live = std::max(most_live, Show().replicas.size());
    ProxyReports(true, false);
    EXPECT_GE(Serving(), 2) << "round " << round;
    ProxyReports(false, true);
    EXPECT_GE(Serving(), 2) << "round " << round;
    now() += kSecond;
    Tick();
  }
  ProxyReports(false, true);  // the last old replica drains
  Sync();
  Tick();
  const ServiceView v = Show();
  EXPECT_FALSE(v.service.rollout.has_value()) << v.note;
  EXPECT_NE(v.service.last_rollout.find("version 2 ready on 2"), std::string::npos)
      << v.service.last_rollout;
  ASSERT_EQ(v.replicas.size(), 2u);
  for (const ServiceReplica& r : v.replicas) {
    EXPECT_EQ(r.version, 2);
    EXPECT_FALSE(first.count(r.job)) << "every replica was replaced";
    EXPECT_EQ(Get(r.job).spec.command[1], "v2.py");
  }
  EXPECT_LE(most_live, 4u) << "one surge at a time (plus one draining)";
  for (JobId id : first) EXPECT_EQ(Get(id).state, JobState::kCancelled);
  h_.ExpectDerivedStateRebuilds();
  h_.ExpectReplayEqualsLive();
}

TEST_P(RolloutScenario, AVersionNeverReadyIsRolledBackAndTheOldReplicasKeepServing) {
  Register("n1", 4);
  Create(RollingService());
  Sync();
  ProxyReports(true, false);
  const std::set<JobId> first = Ids();
  ASSERT_TRUE(core().UpdateService(kAna, "echo", NewCommand("bad.py", 30 * kSecond), now()).ok());
  Step();
  for (int i = 0; i < 31; ++i) {  // the surge runs, never ready
    Sync();
    EXPECT_EQ(Serving(), 2);
    now() += kSecond;
    Tick();
  }
  ServiceView v = Show();
  EXPECT_FALSE(v.service.rollout.has_value());
  EXPECT_EQ(v.service.version, 1);
  EXPECT_EQ(v.service.spec.job.command[1], "v1.py") << "the old template is restored";
  EXPECT_NE(v.service.last_rollout.find("version 2 rolled back to version 1"), std::string::npos)
      << v.service.last_rollout;
  EXPECT_NE(v.service.last_rollout.find("within 30s"), std::string::npos) << v.service.last_rollout;
  Sync();  // the surge, asked to stop, exits
  Tick();
  EXPECT_EQ(Ids(), first) << "the old replicas were never touched";
  EXPECT_EQ(Serving(), 2);
  // A later update takes the next version number, not the one rolled back.
  ASSERT_TRUE(core().UpdateService(kAna, "echo", NewCommand("v3.py"), now()).ok());
  Step();
  EXPECT_EQ(Show().service.version, 3);
  h_.ExpectDerivedStateRebuilds();
  h_.ExpectReplayEqualsLive();
}

TEST_P(RolloutScenario, ACrashLoopingVersionIsRolledBack) {
  Register("n1", 4);
  Create(RollingService());
  Sync();
  ProxyReports(true, false);
  const std::set<JobId> first = Ids();
  ASSERT_TRUE(core().UpdateService(kAna, "echo", NewCommand("crash.py", kHour), now()).ok());
  Step();
  for (int i = 0; i < 30 && Show().service.rollout; ++i) {
    Schedule();
    for (const ServiceReplica& r : Show().replicas) {
      if (first.count(r.job) || !Get(r.job).CurrentRun()) continue;
      ASSERT_TRUE(*Report("n1", {Exited(Get(r.job), 0, 1)}));  // the new version exits at once
    }
    EXPECT_EQ(Serving(), 2);
    now() += kSecond;
    Tick();
  }
  const ServiceView v = Show();
  EXPECT_FALSE(v.service.rollout.has_value());
  EXPECT_EQ(v.service.version, 1);
  EXPECT_NE(v.service.last_rollout.find("2 of its replicas failed"), std::string::npos)
      << v.service.last_rollout;
  EXPECT_EQ(Ids(), first);
  h_.ExpectDerivedStateRebuilds();
  h_.ExpectReplayEqualsLive();
}

TEST_P(RolloutScenario, AReplicaLeavingDrainsFirstThenStops) {
  Register("n1", 4);
  Create(RollingService());
  Sync();
  ASSERT_TRUE(core().ScaleService(kAna, "echo", 3, now()).ok());
  Step();
  Sync();
  ProxyReports(true, false);
  ASSERT_EQ(Serving(), 3);
  // Scaling down: the newest drains (no new requests) and still runs; stopped once drained.
  ASSERT_TRUE(core().ScaleService(kAna, "echo", 2, now()).ok());
  Step();
  const JobId newest = *Ids().rbegin();
  ServiceView v = Show();
  ASSERT_TRUE(v.replicas.back().draining);
  EXPECT_FALSE(Get(newest).CurrentRun()->stop_requested) << "it finishes what is in flight";
  ASSERT_TRUE(core().ReportReplicaDrained(kAdmin, newest, now()).ok());
  Step();
  EXPECT_TRUE(Get(newest).CurrentRun()->stop_requested);
  Sync();
  EXPECT_EQ(Get(newest).state, JobState::kCancelled);
  // Removed: not callable any more, its replicas drain; past the drain timeout they stop, and
  // then the service is gone.
  ASSERT_TRUE(core().RemoveService(kAna, "echo", now()).ok());
  Step();
  EXPECT_EQ(core().GetService(kAna, "echo").status().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(core().ListServices(kAna).empty());
  const std::vector<ServiceView> removing = core().ListServices(kAdmin);
  ASSERT_EQ(removing.size(), 1u);
  for (const ServiceReplica& r : removing[0].replicas) {
    EXPECT_TRUE(r.draining);
    EXPECT_FALSE(Get(r.job).CurrentRun()->stop_requested);
  }
  EXPECT_EQ(core().CreateService(kAna, RollingService(), now()).status().code(),
            ErrorCode::kAlreadyExists);
  now() += 29 * kSecond;
  Tick();
  EXPECT_EQ(core().ListServices(kAdmin).size(), 1u) << "within its drain timeout";
  now() += 2 * kSecond;
  Tick();
  EXPECT_TRUE(core().ListServices(kAdmin).empty());
  for (const Job& j : core().ListJobs(kAna, {})) {
    if (!IsTerminal(j.state)) {
      EXPECT_TRUE(j.CurrentRun()->stop_requested) << j.id;
      EXPECT_NE(j.CurrentRun()->reason.find("drain timeout 30s over"), std::string::npos)
          << j.CurrentRun()->reason;
    }
  }
  h_.ExpectDerivedStateRebuilds();
  h_.ExpectReplayEqualsLive();
}

TEST_P(RolloutScenario, BadUpdatesAreRefusedAndChangeNothing) {
  Register("n1", 4);
  Create(RollingService());
  const uint64_t before = core().revision();
  EXPECT_EQ(core().UpdateService(kBob, "echo", NewCommand("v2.py"), now()).status().code(),
            ErrorCode::kNotFound);
  EXPECT_EQ(core().UpdateService(kAna, "nope", NewCommand("v2.py"), now()).status().code(),
            ErrorCode::kNotFound);
  auto same = core().UpdateService(kAna, "echo", NewCommand("v1.py"), now());
  ASSERT_EQ(same.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(same.status().message().find("changes nothing"), std::string::npos);
  ServiceTemplatePatch huge = NewCommand("v2.py");
  huge.job.per_replica.gpu_milli = 8 * kGpuMilli;
  huge.fields.insert("gpus");
  auto big = core().UpdateService(kAna, "echo", huge, now());
  EXPECT_NE(big.status().message().find("can never fit"), std::string::npos)
      << big.status().ToString();
  EXPECT_EQ(core().revision(), before);
  ASSERT_TRUE(core().UpdateService(kAna, "echo", NewCommand("v2.py"), now()).ok());
  Step();
  EXPECT_EQ(core().UpdateService(kAna, "echo", NewCommand("v3.py"), now()).status().code(),
            ErrorCode::kFailedPrecondition);
}

TEST(ServiceUpdateParse, NamesTheBadField) {
  auto parse = [](const std::string& text) { return ParseServiceUpdate(Json::parse(text)); };
  auto ok = parse(R"({"spec":{"command":["v2"],"gpus":0.5},"ready_timeout":"90s"})");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->ready_timeout_ms, 90 * kSecond);
  EXPECT_EQ(ok->fields, (std::set<std::string>{"command", "gpus"}));
  JobSpec base;
  base.command = {"v1"};
  base.env["A"] = "1";
  auto patched = PatchedTemplate(base, *ok);
  ASSERT_TRUE(patched.ok());
  EXPECT_EQ(patched->command, std::vector<std::string>{"v2"});
  EXPECT_EQ(patched->per_replica.gpu_milli, kGpuMilli / 2);
  EXPECT_EQ(patched->env.at("A"), "1") << "what the update does not name stays";
  auto message = [&](const std::string& text) {
    auto r = parse(text);
    EXPECT_FALSE(r.ok()) << text;
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(message(R"({"spec":{"replicas":2}})").find("field 'spec.replicas'"), std::string::npos);
  EXPECT_NE(message(R"({"spec":{}})").find("field 'spec'"), std::string::npos);
  EXPECT_NE(message(R"({"spec":{"image":"x"},"ready_timeout":"soon"})").find("ready_timeout"),
            std::string::npos);
  EXPECT_NE(message(R"({"spec":{"image":"x"},"ready_timeout":"0s"})").find("ready_timeout"),
            std::string::npos);
  EXPECT_NE(message(R"({"spec":{"command":"x"},"colour":1})").find("unknown field 'colour'"),
            std::string::npos);
  EXPECT_NE(message(R"({"spec":{"gpus":"lots"}})").find("gpus"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Head, RolloutScenario, ::testing::Bool(), [](const auto& info) {
  return info.param ? "CrashEveryStep" : "Straight";
});

}  // namespace
}  // namespace corral::head::core_test
