// Services through the head's core: a service keeps its desired replicas alive as ordinary
// jobs (a replica that exits is replaced, after a backoff when they crash in a loop), its
// minimum replicas are not preemptible, removing it stops them, bad input changes nothing, and
// all of it survives a crash after every step (the fixture, core_scenario.h).
#include "core/service.h"
#include "head/core_scenario.h"

namespace corral::head::core_test {
namespace {

ServiceSpec TwoReplicas(const std::string& name = "echo") {
  ServiceSpec s;
  s.name = name;
  s.min_replicas = 2;
  s.max_replicas = 3;
  s.port = 0;
  s.health_path = "/health";
  s.job.command = {"python3", "server.py"};
  s.job.per_replica.gpu_milli = kGpuMilli;
  return s;
}

class ServiceScenario : public Scenario {
 protected:
  Service Create(ServiceSpec spec, const Caller& by = kAna) {
    auto r = core().CreateService(by, std::move(spec), now());
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    Step();
    return r.ok() ? *r : Service{};
  }
  ServiceView Show(const std::string& name) {
    auto v = core().GetService(kAna, name);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return v.ok() ? *v : ServiceView{};
  }
  void Tick() {
    core().Tick(now());
    Step();
  }
  // Every live replica scheduled on n1 reports running.
  void RunAll(const std::string& name) {
    Schedule();
    std::vector<RunReport> runs;
    for (const ServiceReplica& r : Show(name).replicas) runs.push_back(Running(Get(r.job)));
    ASSERT_TRUE(*Report("n1", runs));
  }
};

TEST_P(ServiceScenario, KeepsItsReplicasRunningAndReplacesOneThatExits) {
  Register("n1", 4);
  Create(TwoReplicas());
  ServiceView v = Show("echo");
  ASSERT_EQ(v.replicas.size(), 2u);
  for (const ServiceReplica& r : v.replicas) {
    const Job job = Get(r.job);
    EXPECT_EQ(job.spec.service, "echo");
    EXPECT_EQ(job.owner, "ana");
    EXPECT_FALSE(job.spec.preemptible) << "the minimum replicas are guaranteed";
  }
  RunAll("echo");
  v = Show("echo");
  std::set<int32_t> ports;
  for (const ServiceReplica& r : v.replicas) {
    EXPECT_TRUE(r.running);
    EXPECT_EQ(r.node, "n1");
    EXPECT_EQ(r.host, "n1.example");
    ports.insert(r.port);
  }
  EXPECT_EQ(ports.size(), 2u) << "two replicas on one node listen on two ports";
  // Each replica's environment names its own port.
  for (const RunOrder& o : Desired("n1")) {
    const int32_t port = std::stoi(o.env.at("PORT"));
    EXPECT_TRUE(ports.count(port)) << port;
    EXPECT_EQ(o.env.at("CORRAL_PORT"), o.env.at("PORT"));
  }
  const JobId crashed = v.replicas[0].job;
  ASSERT_TRUE(*Report("n1", {Exited(Get(crashed), 0, -9)}));
  EXPECT_EQ(Get(crashed).state, JobState::kFailed);
  Tick();  // within the first backoff (1 s): none yet, and the service says why
  EXPECT_EQ(Show("echo").replicas.size(), 1u);
  if (!GetParam()) {  // the note is not durable: a recovered core finds it at its next tick
    EXPECT_NE(Show("echo").note.find("crash loop: 1 replicas failed"), std::string::npos)
        << Show("echo").note;
  }
  now() += 2 * kSecond;
  Tick();
  v = Show("echo");
  ASSERT_EQ(v.replicas.size(), 2u);
  EXPECT_GT(v.replicas[1].job, crashed) << "a new job replaces the one that failed";
  EXPECT_TRUE(v.note.empty()) << v.note;
  h_.ExpectDerivedStateRebuilds();
  h_.ExpectReplayEqualsLive();
}

TEST_P(ServiceScenario, ACrashLoopBacksOffLongerEachTime) {
  Register("n1", 4);
  ServiceSpec one = TwoReplicas();
  one.min_replicas = one.max_replicas = 1;
  Create(one);
  TimeMs last_start = now();
  DurationMs previous_gap = 0;
  for (int i = 0; i < 4; ++i) {
    RunAll("echo");
    const JobId id = Show("echo").replicas.at(0).job;
    ASSERT_TRUE(*Report("n1", {Exited(Get(id), 0, 1)}));
    // Tick each half second until the replacement appears: the gap grows 1, 2, 4, 8 s.
    TimeMs failed = now();
    while (Show("echo").replicas.empty()) {
      now() += kSecond / 2;
      Tick();
      ASSERT_LT(now() - failed, kMinute);
    }
    const DurationMs gap = now() - failed;
    EXPECT_GE(gap, DurationMs{kSecond} << i) << "failure " << i + 1;
    EXPECT_GT(gap, previous_gap);
    previous_gap = gap;
    last_start = now();
  }
  (void)last_start;
  h_.ExpectDerivedStateRebuilds();
}

TEST_P(ServiceScenario, RemovingAServiceStopsItsReplicasAndNoneReplacesThem) {
  Register("n1", 4);
  Create(TwoReplicas());
  RunAll("echo");
  const ServiceView v = Show("echo");
  EXPECT_EQ(core().RemoveService(kBob, "echo", now()).status().code(),
            ErrorCode::kPermissionDenied);
  ASSERT_TRUE(core().RemoveService(kAna, "echo", now()).ok());
  Step();
  EXPECT_EQ(core().GetService(kAna, "echo").status().code(), ErrorCode::kNotFound);
  std::vector<RunReport> exits;
  for (const ServiceReplica& r : v.replicas) {
    const Job job = Get(r.job);
    ASSERT_TRUE(job.CurrentRun()->stop_requested) << r.job;
    exits.push_back(Exited(job, 0, -15));
  }
  ASSERT_TRUE(*Report("n1", exits));
  now() += kMinute;
  Tick();
  for (const ServiceReplica& r : v.replicas) EXPECT_EQ(Get(r.job).state, JobState::kCancelled);
  EXPECT_EQ(core().ListJobs(kAna, {}).size(), 2u) << "no replica was started after the removal";
  h_.ExpectDerivedStateRebuilds();
  h_.ExpectReplayEqualsLive();
}

TEST_P(ServiceScenario, BadServicesAreRefusedAndChangeNothing) {
  Register("n1", 4);
  const uint64_t before = core().revision();
  ServiceSpec urgent = TwoReplicas();
  urgent.job.priority = 100;  // above what a plain user may ask: a submission would be refused
  EXPECT_EQ(core().CreateService(kAna, urgent, now()).status().code(),
            ErrorCode::kPermissionDenied);
  ServiceSpec too_big = TwoReplicas();
  too_big.job.per_replica.gpu_milli = 8 * kGpuMilli;
  auto big = core().CreateService(kAna, too_big, now());
  ASSERT_EQ(big.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(big.status().message().find("can never fit"), std::string::npos);
  EXPECT_EQ(core().CreateService(Caller::Node("n1"), TwoReplicas(), now()).status().code(),
            ErrorCode::kPermissionDenied);
  EXPECT_EQ(core().revision(), before);
  Create(TwoReplicas());
  auto again = core().CreateService(kBob, TwoReplicas(), now());
  EXPECT_EQ(again.status().code(), ErrorCode::kAlreadyExists);
  EXPECT_NE(again.status().message().find("field 'name'"), std::string::npos);
  // Another user's private service is not shown; one open to any user is.
  EXPECT_EQ(core().GetService(kBob, "echo").status().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(core().ListServices(kBob).empty());
  ServiceSpec open = TwoReplicas("open");
  open.any_user = true;
  open.job.env["API_KEY"] = "secret";
  Create(open);
  ASSERT_TRUE(core().GetService(kBob, "open").ok());
  EXPECT_TRUE(core().GetService(kBob, "open")->service.spec.job.env.empty())
      << "another user may call it, not read its environment";
  EXPECT_EQ(core().GetService(kAna, "open")->service.spec.job.env.at("API_KEY"), "secret");
  EXPECT_EQ(core().ListServices(kBob).size(), 1u);
  EXPECT_EQ(core().ListServices(kAdmin).size(), 2u);
}

// The guaranteed replicas are never preempted, so they must fit their queue's quota (and each
// ancestor's with one), together with the other services' guaranteed replicas there, and its
// limit: creating, raising min_replicas, or moving the template to more GPUs or another queue
// beyond them is refused naming the field, and changes nothing.
TEST_P(ServiceScenario, GuaranteedReplicasMustFitTheirQueuesQuotaAndLimit) {
  Register("n1", 8);
  auto set_queue = [&](QueueConfig q) {
    ASSERT_TRUE(core().SetQueue(kAdmin, std::move(q), now()).ok());
    Step();
  };
  set_queue({.name = "team", .quota_gpus = 4});
  set_queue({.name = "capped", .limit_gpus = 3});
  set_queue({.name = "org", .quota_gpus = 6});
  set_queue({.name = "org/a"});
  auto in = [](const std::string& name, const std::string& queue, int32_t min, int32_t gpus) {
    ServiceSpec s = TwoReplicas(name);
    s.job.queue = queue;
    s.min_replicas = min;
    s.max_replicas = 6;
    s.job.per_replica.gpu_milli = gpus * kGpuMilli;
    return s;
  };
  auto refused = [&](Result<Service> r, const std::string& says) {
    ASSERT_FALSE(r.ok()) << says;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(says), std::string::npos) << r.status().ToString();
  };
  const uint64_t before = core().revision();
  refused(core().CreateService(kAna, in("big", "team", 3, 2), now()),
          "field 'min_replicas': 3 guaranteed replica(s) of 2 GPU(s) (6 GPUs never preempted) do "
          "not fit the quota of queue 'team' (4 GPUs); lower min_replicas");
  refused(core().CreateService(kAna, in("big", "capped", 2, 2), now()),
          "do not fit what queue 'capped' may ever use (limit 3 GPUs)");
  refused(core().CreateService(kAna, in("big", "org/a", 4, 2), now()),
          "do not fit the quota of queue 'org' (6 GPUs)");
  EXPECT_EQ(core().revision(), before) << "refused: nothing changed";
  EXPECT_TRUE(core().ListServices(kAdmin).empty());
  // At the quota exactly, it fits; a second service's guarantee counts with the first's.
  Create(in("echo", "team", 2, 2));
  refused(core().CreateService(kAna, in("more", "team", 1, 1), now()),
          "of which service(s) 'echo' guarantee 4 already");
  // Replicas above the minimum are preemptible and may borrow: a service that guarantees
  // nothing (min 0, or no GPUs) fits any quota; so do GPU shares within it.
  Create(in("elastic", "team", 0, 2));
  Create(in("cpu", "team", 3, 0));
  set_queue({.name = "shared", .quota_gpus = 1});
  ServiceSpec shares = in("shares", "shared", 2, 0);
  shares.job.per_replica.gpu_milli = 500;
  Create(shares);
  refused(core().CreateService(
              kAna,
              [&] {
                ServiceSpec third = in("third", "shared", 1, 0);
                third.job.per_replica.gpu_milli = 250;
                return third;
              }(),
              now()),
          "1 guaranteed replica(s) of 0.25 GPU(s) (0.25 GPUs never preempted) do not fit the "
          "quota of queue 'shared' (1 GPUs), of which service(s) 'shares' guarantee 1 already");
  // A queue without a quota on its path guarantees nothing: only its limit bounds.
  Create(in("free", "default", 4, 2));
  // Updates: raising the minimum, more GPUs, another queue.
  const uint64_t updated = core().revision();
  auto settings = [](const std::string& text) { return *ParseServiceUpdate(Json::parse(text)); };
  refused(core().UpdateService(kAna, "echo", settings(R"({"min_replicas":3})"), now()),
          "field 'min_replicas': 3 guaranteed replica(s) of 2 GPU(s)");
  refused(core().UpdateService(kAna, "elastic", settings(R"({"min_replicas":1})"), now()),
          "of which service(s) 'echo' guarantee 4 already");
  refused(core().UpdateService(kAna, "free", settings(R"({"spec":{"queue":"capped"}})"), now()),
          "field 'queue': 4 guaranteed replica(s) of 2 GPU(s)");
  refused(core().UpdateService(kAna, "echo", settings(R"({"spec":{"gpus":3}})"), now()),
          "field 'gpus': 2 guaranteed replica(s) of 3 GPU(s) (6 GPUs never preempted)");
  EXPECT_EQ(core().revision(), updated) << "refused: nothing changed";
  EXPECT_EQ(Show("echo").service.spec.min_replicas, 2);
  EXPECT_EQ(Show("echo").service.version, 1);
  // Within the quota, the same updates pass: fewer GPUs each, and a lower minimum.
  auto fewer = core().UpdateService(kAna, "echo", settings(R"({"spec":{"gpus":1}})"), now());
  ASSERT_TRUE(fewer.ok()) << fewer.status().ToString();
  Step();
  auto lower = core().UpdateService(kAna, "free", settings(R"({"min_replicas":1})"), now());
  ASSERT_TRUE(lower.ok()) << lower.status().ToString();
  Step();
  h_.ExpectDerivedStateRebuilds();
  h_.ExpectReplayEqualsLive();
}

// A queue's quota or limit lowered below the guarantees of the services that count in it
// (its own, its descendants') is refused naming the field and the services, and changes
// nothing: their replicas run and nothing preempts them. At the guarantees, or once the
// services' minimum is lowered, it passes.
TEST_P(ServiceScenario, AQuotaLoweredBelowItsServicesGuaranteesIsRefusedNamingThem) {
  Register("n1", 8);
  ASSERT_TRUE(core().SetQueue(kAdmin, {.name = "org", .quota_gpus = 6}, now()).ok());
  Step();
  ASSERT_TRUE(core().SetQueue(kAdmin, {.name = "org/a", .limit_gpus = 4}, now()).ok());
  Step();
  ServiceSpec a = TwoReplicas("a");
  a.job.queue = "org/a";
  a.job.per_replica.gpu_milli = 2 * kGpuMilli;  // 2 guaranteed replicas: 4 GPUs
  Create(a);
  ServiceSpec b = TwoReplicas("b");
  b.job.queue = "org";
  b.min_replicas = b.max_replicas = 1;
  b.job.per_replica.gpu_milli = kGpuMilli;  // 1 GPU
  Create(b);
  const uint64_t before = core().revision();
  auto quota = core().SetQueue(kAdmin, {.name = "org", .quota_gpus = 4}, now());
  ASSERT_FALSE(quota.ok());
  EXPECT_EQ(quota.status().message(),
            "field 'quota_gpus': queue 'org' would have a quota of 4 GPUs, below the 5 GPUs that "
            "the guaranteed replicas of service(s) 'a', 'b' hold and nothing preempts; lower "
            "their min_replicas first (corral serve update NAME --min-replicas N), or keep at "
            "least 5 GPUs");
  auto limit = core().SetQueue(kAdmin, {.name = "org/a", .limit_gpus = 3}, now());
  ASSERT_FALSE(limit.ok());
  EXPECT_NE(limit.status().message().find("field 'limit_gpus': queue 'org/a' would have a limit "
                                          "of 3 GPUs, below the 4 GPUs"),
            std::string::npos)
      << limit.status().ToString();
  EXPECT_EQ(core().revision(), before) << "refused: nothing changed";
  EXPECT_EQ(core().state().queues.at("org").quota_gpus, 6);
  ASSERT_TRUE(core().SetQueue(kAdmin, {.name = "org", .quota_gpus = 5}, now()).ok())
      << "at the guarantees";
  Step();
  auto lower = core().UpdateService(
      kAna, "a", *ParseServiceUpdate(Json::parse(R"({"min_replicas":1})")), now());
  ASSERT_TRUE(lower.ok()) << lower.status().ToString();
  Step();
  ASSERT_TRUE(core().SetQueue(kAdmin, {.name = "org", .quota_gpus = 3}, now()).ok())
      << "once a's minimum is lowered: 2 + 1 GPUs";
  Step();
  h_.ExpectReplayEqualsLive();
}

TEST_P(ServiceScenario, ReplicasAboveTheMinimumArePreemptibleAndALivenessFailureReplacesOne) {
  Register("n1", 4);
  ServiceSpec s = TwoReplicas();
  s.min_replicas = 1;
  s.max_replicas = 3;
  Create(s);
  ServiceView v = Show("echo");
  ASSERT_EQ(v.replicas.size(), 1u);
  EXPECT_FALSE(Get(v.replicas[0].job).spec.preemptible);
  RunAll("echo");
  const JobId first = v.replicas[0].job;
  EXPECT_EQ(core().ReplaceReplica(kAna, first, "liveness", now()).status().code(),
            ErrorCode::kPermissionDenied);
  ASSERT_TRUE(
      core().ReplaceReplica(kAdmin, first, "liveness: GET /health failed 3 times", now()).ok());
  Step();
  ASSERT_TRUE(*Report("n1", {Exited(Get(first), 0, -15)}));
  EXPECT_EQ(Get(first).state, JobState::kCancelled);
  Tick();  // a cancelled replica is no crash: replaced at once
  v = Show("echo");
  ASSERT_EQ(v.replicas.size(), 1u);
  EXPECT_NE(v.replicas[0].job, first);
  h_.ExpectDerivedStateRebuilds();
}

TEST_P(ServiceScenario, ScalingStartsOrStopsReplicasWithinItsRange) {
  Register("n1", 4);
  ServiceSpec s = TwoReplicas();
  s.min_replicas = 1;
  s.max_replicas = 3;
  Create(s);
  RunAll("echo");
  EXPECT_EQ(core().ScaleService(kAna, "echo", 4, now()).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(core().ScaleService(kAna, "echo", 0, now()).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(core().ScaleService(kBob, "echo", 2, now()).status().code(), ErrorCode::kNotFound);
  ASSERT_TRUE(core().ScaleService(kAna, "echo", 3, now()).ok());
  Step();
  ServiceView v = Show("echo");
  ASSERT_EQ(v.replicas.size(), 3u);
  EXPECT_EQ(v.service.desired, 3);
  EXPECT_FALSE(Get(v.replicas[0].job).spec.preemptible);
  EXPECT_TRUE(Get(v.replicas[1].job).spec.preemptible) << "above the minimum: preemptible";
  EXPECT_TRUE(Get(v.replicas[2].job).spec.preemptible);
  ASSERT_TRUE(core().ScaleService(kAna, "echo", 1, now()).ok());
  Step();
  v = Show("echo");
  // The two newest are stopped (pending ones end at once), the first stays.
  EXPECT_EQ(v.service.desired, 1);
  EXPECT_EQ(Get(v.replicas[0].job).state, JobState::kRunning);
  for (size_t i = 1; i < v.replicas.size(); ++i) {
    EXPECT_FALSE(v.replicas[i].running) << v.replicas[i].job;
  }
  h_.ExpectDerivedStateRebuilds();
  h_.ExpectReplayEqualsLive();
}

// An update of the settings alone: the spec changes at once, no replica is replaced, and a
// range that no longer holds `desired` scales it into the range.
TEST_P(ServiceScenario, AnUpdateOfItsSettingsReplacesNoReplica) {
  Register("n1", 4);
  ServiceSpec s = TwoReplicas();
  s.min_replicas = 1;
  s.max_replicas = 3;
  Create(s);
  ASSERT_TRUE(core().ScaleService(kAna, "echo", 3, now()).ok());
  Step();
  RunAll("echo");
  const std::vector<ServiceReplica> before = Show("echo").replicas;
  const Json job_before = ToJson(Show("echo").service.spec.job);
  ASSERT_EQ(before.size(), 3u);
  auto settings = [](const std::string& text) {
    auto p = ParseServiceUpdate(Json::parse(text));
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return p.ok() ? *p : ServiceTemplatePatch{};
  };
  // The autoscaler's settings and the wake timeout: the same replicas, the same version.
  auto r = core().UpdateService(
      kAna, "echo", settings(R"({"target_in_flight":4,"scale_up_delay":"5s","wake_timeout":"2m"})"),
      now());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Step();
  ServiceView v = Show("echo");
  EXPECT_EQ(v.service.spec.autoscaling.target_in_flight, 4);
  EXPECT_EQ(v.service.spec.autoscaling.scale_up_delay_ms, 5 * kSecond);
  EXPECT_EQ(v.service.spec.wake_timeout_ms, 2 * kMinute);
  EXPECT_EQ(ToJson(v.service.spec.job), job_before);
  EXPECT_EQ(v.service.version, 1);
  EXPECT_FALSE(v.service.rollout);
  ASSERT_EQ(v.replicas.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(v.replicas[i].job, before[i].job);
    EXPECT_TRUE(v.replicas[i].running);
  }
  // Settings that do not hold against the service's own (its max below the new min), or scale to
  // zero with a minimum, change nothing.
  auto both = ParseServiceUpdate(Json::parse(R"({"spec":{"image":"x"},"max_replicas":2})"));
  EXPECT_NE(both.status().message().find("field 'spec'"), std::string::npos)
      << both.status().ToString();
  auto over = core().UpdateService(kAna, "echo", settings(R"({"min_replicas":4})"), now());
  EXPECT_NE(over.status().message().find("field 'min_replicas'"), std::string::npos)
      << over.status().ToString();
  auto to_zero =
      core().UpdateService(kAna, "echo", settings(R"({"scale_to_zero_after":"1m"})"), now());
  EXPECT_NE(to_zero.status().message().find("field 'scale_to_zero_after'"), std::string::npos)
      << to_zero.status().ToString();
  EXPECT_EQ(
      core().UpdateService(kBob, "echo", settings(R"({"max_replicas":2})"), now()).status().code(),
      ErrorCode::kNotFound);
  EXPECT_EQ(core()
                .UpdateService(kAna, "echo", settings(R"({"target_in_flight":4})"), now())
                .status()
                .code(),
            ErrorCode::kInvalidArgument)
      << "an update that changes nothing";
  EXPECT_EQ(Show("echo").service.spec.max_replicas, 3);
  // A lower maximum: desired follows it into the range, the newest replica leaves.
  ASSERT_TRUE(core().UpdateService(kAna, "echo", settings(R"({"max_replicas":2})"), now()).ok());
  Step();
  v = Show("echo");
  EXPECT_EQ(v.service.spec.max_replicas, 2);
  EXPECT_EQ(v.service.desired, 2);
  EXPECT_TRUE(v.replicas[0].running);
  EXPECT_TRUE(v.replicas[1].running);
  EXPECT_FALSE(v.replicas[2].running) << "the newest leaves";
  EXPECT_EQ(v.replicas[2].job, before[2].job);
  h_.ExpectDerivedStateRebuilds();
  h_.ExpectReplayEqualsLive();
}

TEST(ServiceSpecParse, NamesTheBadField) {
  auto parse = [](const std::string& text) { return ParseServiceSpec(Json::parse(text)); };
  auto ok = parse(R"({"name":"echo","replicas":2,"port":8000,"spec":{"command":["srv"]}})");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->min_replicas, 2);
  EXPECT_EQ(ok->max_replicas, 2);
  EXPECT_EQ(ReplicaSpec(*ok, false).env.at("PORT"), "8000");
  EXPECT_EQ(ReplicaSpec(*ok, false).env.at("CORRAL_PORT"), "8000");
  EXPECT_TRUE(ReplicaSpec(*ok, true).preemptible);
  EXPECT_EQ(ok->wake_timeout_ms, kDefaultWakeTimeout);
  auto wake = parse(R"({"name":"e","port":1,"wake_timeout":"2m","spec":{"command":["s"]}})");
  ASSERT_TRUE(wake.ok()) << wake.status().ToString();
  EXPECT_EQ(wake->wake_timeout_ms, 2 * kMinute);
  auto stored = ServiceSpecFromJson(ToJson(*wake));
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->wake_timeout_ms, 2 * kMinute);
  auto field_of = [&](const std::string& text) {
    auto r = parse(text);
    EXPECT_FALSE(r.ok()) << text;
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(field_of(R"({"name":"Echo","port":1,"spec":{"command":["s"]}})").find("field 'name'"),
            std::string::npos);
  EXPECT_NE(field_of(R"({"name":"e","spec":{"command":["s"]}})").find("field 'port'"),
            std::string::npos);
  EXPECT_NE(field_of(R"({"name":"e","port":70000,"spec":{"command":["s"]}})").find("field 'port'"),
            std::string::npos);
  EXPECT_NE(field_of(R"({"name":"e","port":1,"min_replicas":3,"max_replicas":2,)"
                     R"("spec":{"command":["s"]}})")
                .find("field 'max_replicas'"),
            std::string::npos);
  EXPECT_NE(
      field_of(R"({"name":"e","port":1,"replicas":2,"min_replicas":1,"spec":{"command":["s"]}})")
          .find("field 'replicas'"),
      std::string::npos);
  EXPECT_NE(field_of(R"({"name":"e","port":1,"health":"up","spec":{"command":["s"]}})")
                .find("field 'health'"),
            std::string::npos);
  EXPECT_NE(field_of(R"({"name":"e","port":1,"spec":{"command":["s"],"replicas":2}})")
                .find("field 'spec.replicas'"),
            std::string::npos);
  EXPECT_NE(field_of(R"({"name":"e","port":1,"spec":{"command":["s"],"time_limit":"1h"}})")
                .find("field 'spec.time_limit'"),
            std::string::npos);
  for (const char* wake : {"\"500ms\"", "\"11m\"", "\"soon\"", "30"}) {
    EXPECT_NE(field_of(std::string(R"({"name":"e","port":1,"spec":{"command":["s"]},)") +
                       R"("wake_timeout":)" + wake + "}")
                  .find("field 'wake_timeout'"),
              std::string::npos)
        << wake;
  }
  EXPECT_NE(field_of(R"({"name":"e","port":1,"spec":{}})").find("field 'spec"), std::string::npos);
  EXPECT_NE(field_of(R"({"name":"e","port":1,"colour":"red","spec":{"command":["s"]}})")
                .find("unknown field 'colour'"),
            std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Head, ServiceScenario, ::testing::Bool(), [](const auto& info) {
  return info.param ? "CrashEveryStep" : "Straight";
});

}  // namespace
}  // namespace corral::head::core_test
