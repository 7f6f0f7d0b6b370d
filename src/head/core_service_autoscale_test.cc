// The services' autoscaler through the head's core: the proxy's load reports raise a service's
// replicas only after a whole up-delay above its target and lower them only after a whole
// down-delay below it, within its bounds, never flapping on a load around the target; a
// service with min_replicas 0 goes to zero after its idle time, counted from its first ready
// replica (never while its replica loads), and a request wakes it; a scale
// by hand restarts the windows; every change of desired replicas is one ServiceScaled with its
// reason; and it all holds with a crash after every step (a recovered head watches a whole
// window afresh before it decides).
#include "core/service.h"
#include "head/core_scenario.h"

namespace corral::head::core_test {
namespace {

ServiceSpec Scaled(int32_t min, int32_t max) {
  ServiceSpec s;
  s.name = "echo";
  s.min_replicas = min;
  s.max_replicas = max;
  s.port = 0;
  s.health_path = "/health";
  s.job.command = {"python3", "server.py"};
  s.job.per_replica.gpu_milli = kGpuMilli;
  s.autoscaling.scale_to_zero_after_ms = s.autoscaling.scale_down_delay_ms;
  return s;
}

class AutoscaleScenario : public Scenario {
 protected:
  void Create(ServiceSpec spec) {
    auto r = core().CreateService(kAna, std::move(spec), now());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    Step();
  }
  int32_t Desired() { return core().GetService(kAna, "echo")->service.desired; }
  size_t LiveReplicas() {
    size_t n = 0;
    const Result<ServiceView> v = core().GetService(kAna, "echo");
    for (const ServiceReplica& r : v->replicas) {
      n += r.running || r.state == JobState::kPending ? 1 : 0;
    }
    return n;
  }
  size_t ReadyReplicas() {
    size_t n = 0;
    const Result<ServiceView> v = core().GetService(kAna, "echo");
    for (const ServiceReplica& r : v->replicas) {
      n += r.running && r.ready && !r.draining ? 1 : 0;
    }
    return n;
  }
  // The agent's and the proxy's sides: pending replicas are placed and run, those asked to
  // stop exit, draining ones report no request in flight, and (with `ready`) running ones
  // answer their readiness check.
  void Serve(bool ready) {
    for (int round = 0; round < 3; ++round) {
      Schedule();
      std::vector<RunReport> runs;
      const Result<ServiceView> placed = core().GetService(kAna, "echo");
      for (const ServiceReplica& r : placed->replicas) {
        const Job job = Get(r.job);
        const corral::Run* run = job.CurrentRun();
        if (run) runs.push_back(run->stop_requested ? Exited(job, 0, -15) : Running(job));
      }
      ASSERT_TRUE(*Report("n1", runs));
      const Result<ServiceView> reported = core().GetService(kAna, "echo");
      for (const ServiceReplica& r : reported->replicas) {
        if (ready && r.running && !r.ready) {
          ASSERT_TRUE(core().ReportReplicaReady(kAdmin, r.job, now()).ok());
          Step();
        }
        if (r.draining && r.running) {
          ASSERT_TRUE(core().ReportReplicaDrained(kAdmin, r.job, now()).ok());
          Step();
        }
      }
    }
  }
  // The proxy's reports, one a second for `for_ms`, of `in_flight` requests on average (and
  // the requests' median latency, where given). A report that scales is a step (a crash
  // follows it in the crashing variant); the others change nothing durable.
  void Load(double in_flight, DurationMs for_ms, std::optional<double> latency_ms = {}) {
    for (TimeMs end = now() + for_ms; now() < end;) {
      now() += kSecond;
      auto r =
          core().ReportServiceLoad(kAdmin, {{"echo", ServiceLoad{in_flight, latency_ms}}}, now());
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      if (*r > 0) Step();
    }
  }
  // The scalings so far, in order.
  std::vector<ServiceScaled> Scalings() {
    std::vector<ServiceScaled> out;
    for (const Change& c : h_.changes()) {
      if (const auto* e = std::get_if<ServiceScaled>(&c.what)) out.push_back(*e);
    }
    return out;
  }
};

TEST_P(AutoscaleScenario, ScalesUpAfterAWholeUpDelayAboveTargetAndNeverPastItsMaximum) {
  Register("n1", 8);
  Create(Scaled(1, 4));
  // 3.8 in flight: 190% of what one replica takes at target 2, under the panic ratio.
  Load(3.8, 29 * kSecond);
  EXPECT_EQ(Desired(), 1) << "29 s of load is not the 30 s up-delay";
  Load(3.8, 2 * kSecond);
  EXPECT_EQ(Desired(), 2) << "ceil(3.8 / 2)";
  EXPECT_EQ(LiveReplicas(), 2u);
  std::vector<ServiceScaled> s = Scalings();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].cause, ScaleCause::kAutoscaler);
  EXPECT_EQ(s[0].from, 1);
  EXPECT_EQ(s[0].to, 2);
  EXPECT_EQ(s[0].reason,
            "scaled 1 \u2192 2: 3.8 requests in flight per replica over 30s, target 2");
  // More load (3.5 per replica): the new count holds a whole up-delay, then goes to the
  // maximum, not past it.
  Load(7, 29 * kSecond);
  EXPECT_EQ(Desired(), 2);
  Load(7, 2 * kSecond);
  EXPECT_EQ(Desired(), 4);
  EXPECT_EQ(LiveReplicas(), 4u);
  Load(7, 2 * kMinute);
  EXPECT_EQ(Scalings().size(), 2u);
  h_.ExpectDerivedStateRebuilds();
  h_.ExpectReplayEqualsLive();
}

TEST_P(AutoscaleScenario, AShortBurstScalesNothing) {
  Register("n1", 8);
  Create(Scaled(1, 4));
  // A burst every 20 s, each under the up-delay (and the panic ratio): the window always holds
  // a quiet sample.
  for (int i = 0; i < 10; ++i) {
    Load(3.9, 15 * kSecond);
    Load(0.5, 5 * kSecond);
  }
  EXPECT_EQ(Desired(), 1);
  EXPECT_TRUE(Scalings().empty());
}

TEST_P(AutoscaleScenario, ALoadAroundTheTargetNeverFlaps) {
  Register("n1", 8);
  Create(Scaled(1, 4));
  ASSERT_TRUE(core().ScaleService(kAna, "echo", 2, now()).ok());
  Step();
  // Wanting 1 and 3 replicas in turn for 20 minutes: neither window is ever one-sided.
  for (int i = 0; i < 60; ++i) {
    Load(1.5, 10 * kSecond);
    Load(5, 10 * kSecond);
  }
  EXPECT_EQ(Desired(), 2);
  ASSERT_EQ(Scalings().size(), 1u) << "only the scale by hand";
  EXPECT_EQ(Scalings()[0].cause, ScaleCause::kHand);
  EXPECT_EQ(Scalings()[0].reason, "scaled 1 \u2192 2 by ana");
}

TEST_P(AutoscaleScenario, ScalesDownAfterAWholeDownDelayButNotBelowItsMinimum) {
  Register("n1", 8);
  Create(Scaled(2, 4));
  Load(8, 31 * kSecond);
  ASSERT_EQ(Desired(), 4);
  // 3 in flight wants 2 replicas: after the 10 minute down-delay, not before.
  Load(3, 9 * kMinute);
  EXPECT_EQ(Desired(), 4);
  Load(3, 62 * kSecond);
  EXPECT_EQ(Desired(), 2);
  EXPECT_NE(Scalings().back().reason.find("scaled 4 \u2192 2: 0.75 requests in flight per "
                                          "replica over 10m, target 2"),
            std::string::npos)
      << Scalings().back().reason;
  // No load at all: never below min_replicas 2.
  Load(0, 25 * kMinute);
  EXPECT_EQ(Desired(), 2);
  EXPECT_EQ(LiveReplicas(), 2u);
  h_.ExpectDerivedStateRebuilds();
  h_.ExpectReplayEqualsLive();
}

TEST_P(AutoscaleScenario, ATargetAndDelaysOfItsOwn) {
  Register("n1", 8);
  ServiceSpec s = Scaled(1, 8);
  s.autoscaling.target_in_flight = 0.5;
  s.autoscaling.scale_up_delay_ms = 3 * kSecond;
  s.autoscaling.scale_down_delay_ms = 5 * kSecond;
  Create(s);
  Load(2, 4 * kSecond);
  EXPECT_EQ(Desired(), 4) << "2 in flight at 0.5 each";
  Load(0, 6 * kSecond);
  EXPECT_EQ(Desired(), 1);
}

TEST_P(AutoscaleScenario, ScalesToZeroWhenIdleAndARequestWakesIt) {
  Register("n1", 8);
  ServiceSpec s = Scaled(0, 2);
  s.autoscaling.scale_to_zero_after_ms = kMinute;
  Create(s);
  EXPECT_EQ(Desired(), 1) << "it starts with one replica";
  Serve(true);
  ASSERT_EQ(ReadyReplicas(), 1u);
  Load(0.2, 2 * kMinute);
  EXPECT_EQ(Desired(), 1) << "a request now and then keeps it";
  Load(0, 59 * kSecond);
  EXPECT_EQ(Desired(), 1);
  Load(0, 3 * kSecond);
  EXPECT_EQ(Desired(), 0);
  EXPECT_EQ(Scalings().back().reason, "scaled 1 \u2192 0: no request in flight for 1m");
  Serve(true);  // its replica drains and exits
  EXPECT_EQ(LiveReplicas(), 0u);
  // A request arrives: the proxy asks for a replica, which starts at once.
  EXPECT_EQ(core().WakeService(kAna, "echo", now()).status().code(), ErrorCode::kPermissionDenied);
  ASSERT_TRUE(core().WakeService(kAdmin, "echo", now()).ok());
  Step();
  EXPECT_EQ(Desired(), 1);
  EXPECT_EQ(LiveReplicas(), 1u);
  EXPECT_EQ(Scalings().back().cause, ScaleCause::kRequest);
  ASSERT_TRUE(core().WakeService(kAdmin, "echo", now()).ok());  // a repeat changes nothing
  EXPECT_EQ(Scalings().size(), 2u);
  // Served, then asleep again, a report of requests held wakes it too, to what they want.
  Serve(true);
  Load(0, 62 * kSecond);
  ASSERT_EQ(Desired(), 0);
  Serve(true);
  Load(3, kSecond);
  EXPECT_EQ(Desired(), 2);
  EXPECT_EQ(LiveReplicas(), 2u);
  // By hand: to zero is within its range [0, 2].
  ASSERT_TRUE(core().ScaleService(kAna, "echo", 0, now()).ok());
  Step();
  EXPECT_EQ(Desired(), 0);
  h_.ExpectDerivedStateRebuilds();
  h_.ExpectReplayEqualsLive();
}

// A model server loading its weights for longer than the idle time gets no request because it
// cannot take one yet: the idle time counts from its first ready replica, at creation and after
// a wake alike (the old rule, idle since the window began, stopped it while it loaded).
TEST_P(AutoscaleScenario, AReplicaSlowerToBeReadyThanTheIdleTimeIsKept) {
  Register("n1", 8);
  ServiceSpec s = Scaled(0, 2);
  s.autoscaling.scale_to_zero_after_ms = kMinute;
  Create(s);
  Serve(false);  // running, loading: not ready
  ASSERT_EQ(LiveReplicas(), 1u);
  Load(0, 5 * kMinute);
  EXPECT_EQ(Desired(), 1) << "five idle minutes while it loads are not idle time";
  EXPECT_TRUE(Scalings().empty());
  Serve(true);
  ASSERT_EQ(ReadyReplicas(), 1u);
  Load(0, 59 * kSecond);
  EXPECT_EQ(Desired(), 1) << "the idle minute counts from its readiness";
  Load(0, 3 * kSecond);
  ASSERT_EQ(Desired(), 0);
  EXPECT_EQ(Scalings().back().reason, "scaled 1 \u2192 0: no request in flight for 1m");
  Serve(true);
  ASSERT_EQ(LiveReplicas(), 0u);
  // Woken by a request that gives up (the proxy's wake timeout) while the new replica loads:
  // the replica is kept until it is ready and then idle for the whole minute.
  ASSERT_TRUE(core().WakeService(kAdmin, "echo", now()).ok());
  Step();
  Serve(false);
  Load(1, 30 * kSecond);
  Load(0, 3 * kMinute);
  EXPECT_EQ(Desired(), 1);
  EXPECT_EQ(LiveReplicas(), 1u);
  Serve(true);
  Load(0, 59 * kSecond);
  EXPECT_EQ(Desired(), 1);
  Load(0, 3 * kSecond);
  EXPECT_EQ(Desired(), 0);
  h_.ExpectDerivedStateRebuilds();
  h_.ExpectReplayEqualsLive();
}

// A scale-down keeps the idle time of the replicas that serve on: it counts from the change,
// and the service goes to zero a whole idle time later (as it would with none ever leaving).
TEST_P(AutoscaleScenario, AfterAScaleDownTheReplicasServingOnGoToZeroWhenIdle) {
  Register("n1", 8);
  ServiceSpec s = Scaled(0, 2);
  s.autoscaling.scale_down_delay_ms = 30 * kSecond;
  s.autoscaling.scale_to_zero_after_ms = kMinute;
  Create(s);
  Serve(true);
  Load(3, 31 * kSecond);  // 150% of target on one replica: up after the up-delay
  ASSERT_EQ(Desired(), 2);
  Serve(true);
  ASSERT_EQ(ReadyReplicas(), 2u);
  Load(0, 31 * kSecond);
  ASSERT_EQ(Desired(), 1) << "the down-delay is shorter than the idle time";
  Serve(true);  // one drains and exits; the other serves on, ready all along
  ASSERT_EQ(LiveReplicas(), 1u);
  Load(0, 58 * kSecond);
  EXPECT_EQ(Desired(), 1) << "the idle time counts from the scale-down";
  Load(0, 3 * kSecond);
  EXPECT_EQ(Desired(), 0);
  EXPECT_EQ(Scalings().back().reason, "scaled 1 \u2192 0: no request in flight for 1m");
}

TEST_P(AutoscaleScenario, AScaleByHandRestartsTheWindows) {
  Register("n1", 8);
  Create(Scaled(1, 4));
  Load(3.8, 25 * kSecond);
  ASSERT_TRUE(core().ScaleService(kAna, "echo", 2, now()).ok());
  Step();
  Load(5.8, 25 * kSecond);
  EXPECT_EQ(Desired(), 2) << "the up-delay counts from the scale by hand";
  Load(5.8, 6 * kSecond);
  EXPECT_EQ(Desired(), 3);
  EXPECT_EQ(core().ScaleService(kAna, "echo", 0, now()).status().code(),
            ErrorCode::kInvalidArgument)
      << "zero is outside [1, 4]";
}

TEST_P(AutoscaleScenario, ARecoveredHeadWatchesAWholeWindowBeforeItDecides) {
  Register("n1", 8);
  Create(Scaled(1, 4));
  Load(3.8, 20 * kSecond);
  h_.Crash();  // the samples were observations: gone with the head
  Load(3.8, 20 * kSecond);
  EXPECT_EQ(Desired(), 1);
  Load(3.8, 12 * kSecond);
  EXPECT_EQ(Desired(), 2);
}

// Knative's panic window: a mean load of at least 200% of what the replicas take over the
// last 6 s scales up at once, to what that load wants; a spike under 200% waits for the
// up-delay.
TEST_P(AutoscaleScenario, APanicScalesUpAtOnceOnTwiceTheTarget) {
  Register("n1", 8);
  Create(Scaled(1, 8));
  Load(9, 5 * kSecond);
  EXPECT_EQ(Desired(), 1) << "the panic window is 6 s";
  Load(9, 2 * kSecond);
  EXPECT_EQ(Desired(), 5) << "ceil(9 / 2), at once";
  ASSERT_FALSE(Scalings().empty());
  EXPECT_EQ(Scalings().back().reason,
            "scaled 1 \u2192 5: panic: 9 requests in flight per replica over 6s, at least 200% "
            "of target 2");
  // 15 in flight on 5 replicas is 150% of target: no panic, it waits for the up-delay.
  Load(15, 20 * kSecond);
  EXPECT_EQ(Desired(), 5);
  // 40 is 400%: panic again, to the maximum.
  Load(40, 7 * kSecond);
  EXPECT_EQ(Desired(), 8);
  EXPECT_EQ(LiveReplicas(), 8u);
  h_.ExpectDerivedStateRebuilds();
  h_.ExpectReplayEqualsLive();
}

// A panic window and threshold of the service's own: 250% of target over 6 s panics at the
// default 200% but not at 300%; 350% over the service's 3 s does.
TEST_P(AutoscaleScenario, APanicWindowAndThresholdOfItsOwn) {
  Register("n1", 8);
  ServiceSpec spec = Scaled(1, 8);
  spec.autoscaling.panic_window_ms = 3 * kSecond;
  spec.autoscaling.panic_threshold_pct = 300;
  Create(spec);
  Load(5, 10 * kSecond);
  EXPECT_EQ(Desired(), 1) << "250% of target is under the service's 300%";
  Load(11, kSecond);
  EXPECT_EQ(Desired(), 4) << "the last 3 s (5, 5, 11) average 7: ceil(7 / 2), at once";
  ASSERT_FALSE(Scalings().empty());
  EXPECT_EQ(Scalings().back().reason,
            "scaled 1 \u2192 4: panic: 7 requests in flight per replica over 3s, at least 300% "
            "of target 2");
}

// Latency as an input: a median latency above the target for a whole up-delay wants replicas
// in proportion (500 ms against 200 ms on one replica: 3), even where the requests in flight
// alone want none more; a median under the target for a whole down-delay lowers them in
// proportion. Reports with no answered request are no evidence either way.
TEST_P(AutoscaleScenario, AMedianLatencyAboveItsTargetScalesUpInProportion) {
  Register("n1", 8);
  ServiceSpec spec = Scaled(1, 4);
  spec.autoscaling.target_latency_ms = 200;
  Create(spec);
  Load(1, 20 * kSecond, 500);
  Load(1, 15 * kSecond);  // nothing answered: no evidence of slowness
  EXPECT_EQ(Desired(), 1) << "the up-delay's samples do not all want more";
  Load(1, 29 * kSecond, 500);
  EXPECT_EQ(Desired(), 1) << "29 s is not the 30 s up-delay";
  Load(1, 2 * kSecond, 500);
  EXPECT_EQ(Desired(), 3) << "ceil(1 x 500 / 200)";
  ASSERT_EQ(Scalings().size(), 1u);
  EXPECT_EQ(Scalings().back().reason,
            "scaled 1 \u2192 3: 1 requests in flight per replica over 30s, target 2, median "
            "latency 500 ms (target 200 ms)");
  Load(1, 9 * kMinute, 120);
  EXPECT_EQ(Desired(), 3) << "the down-delay is 10 minutes";
  Load(1, 2 * kMinute, 120);
  EXPECT_EQ(Desired(), 2) << "ceil(3 x 120 / 200)";
  h_.ExpectDerivedStateRebuilds();
  h_.ExpectReplayEqualsLive();
}

// Without a target latency the same slow answers scale nothing: latency is an input only
// where asked for.
TEST_P(AutoscaleScenario, LatencyWithoutATargetScalesNothing) {
  Register("n1", 8);
  Create(Scaled(1, 4));
  Load(1, 2 * kMinute, 5000);
  EXPECT_EQ(Desired(), 1);
  EXPECT_TRUE(Scalings().empty());
}

TEST_P(AutoscaleScenario, AFixedCountIsNotAutoscaled) {
  Register("n1", 8);
  Create(Scaled(2, 2));
  Load(50, 2 * kMinute);
  EXPECT_EQ(Desired(), 2);
  EXPECT_TRUE(Scalings().empty());
  EXPECT_EQ(core().ReportServiceLoad(kAna, {{"echo", ServiceLoad{1, {}}}}, now()).status().code(),
            ErrorCode::kPermissionDenied);
}

TEST_P(AutoscaleScenario, PausesWhileARollingUpdateRuns) {
  Register("n1", 8);
  Create(Scaled(1, 4));
  ServiceTemplatePatch patch;
  patch.job.command = {"python3", "v2.py"};
  patch.fields = {"command"};
  patch.ready_timeout_ms = 10 * kMinute;
  ASSERT_TRUE(core().UpdateService(kAna, "echo", patch, now()).ok());
  Step();
  Load(8, 2 * kMinute);  // its new replica never answers: the update goes on throughout
  EXPECT_EQ(Desired(), 1) << "the update keeps desired as it was";
  EXPECT_TRUE(Scalings().empty());
}

TEST(AutoscaleSpecParse, NamesTheBadField) {
  auto parse = [](const std::string& fields) {
    return ParseServiceSpec(
        Json::parse(R"({"name":"e","port":1,"spec":{"command":["s"]})" + fields + "}"));
  };
  auto ok = parse(R"(,"min_replicas":0,"max_replicas":3,"target_in_flight":1.5,)"
                  R"("scale_up_delay":"5s","scale_down_delay":"1m","scale_to_zero_after":"20s")");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->autoscaling.target_in_flight, 1.5);
  EXPECT_EQ(ok->autoscaling.scale_up_delay_ms, 5 * kSecond);
  EXPECT_EQ(ok->autoscaling.scale_down_delay_ms, kMinute);
  EXPECT_EQ(ok->autoscaling.scale_to_zero_after_ms, 20 * kSecond);
  EXPECT_TRUE(Autoscaled(*ok));
  auto defaults = parse(R"(,"min_replicas":1,"max_replicas":3)");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->autoscaling, ServiceAutoscaling{}) << "Ray Serve's: 2, 30 s, 600 s";
  auto fixed = parse(R"(,"replicas":2)");
  ASSERT_TRUE(fixed.ok());
  EXPECT_FALSE(Autoscaled(*fixed));
  auto error = [&](const std::string& fields) {
    auto r = parse(fields);
    EXPECT_FALSE(r.ok()) << fields;
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(error(R"(,"target_in_flight":0)").find("field 'target_in_flight'"), std::string::npos);
  EXPECT_NE(error(R"(,"target_in_flight":"2")").find("field 'target_in_flight'"),
            std::string::npos);
  EXPECT_NE(error(R"(,"scale_up_delay":"soon")").find("scale_up_delay"), std::string::npos);
  EXPECT_NE(error(R"(,"scale_down_delay":"2h")").find("field 'scale_down_delay'"),
            std::string::npos);
  EXPECT_NE(error(R"(,"scale_to_zero_after":"1m")").find("field 'scale_to_zero_after'"),
            std::string::npos)
      << "only with min_replicas 0";
  EXPECT_NE(
      error(R"(,"min_replicas":0,"scale_to_zero_after":"0s")").find("field 'scale_to_zero_after'"),
      std::string::npos);
}

TEST(AutoscaleSpecParse, LatencyAndPanicSettingsAreCheckedAndKept) {
  auto parse = [](const std::string& fields) {
    return ParseServiceSpec(Json::parse(
        R"({"name":"e","port":1,"min_replicas":1,"max_replicas":3,"spec":{"command":["s"]})" +
        fields + "}"));
  };
  auto ok = parse(R"(,"target_latency":"250ms","panic_window":"10s","panic_threshold_pct":150,)"
                  R"("live":"/live")");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->autoscaling.target_latency_ms, 250);
  EXPECT_EQ(ok->autoscaling.panic_window_ms, 10 * kSecond);
  EXPECT_EQ(ok->autoscaling.panic_threshold_pct, 150);
  EXPECT_EQ(ok->live_path, "/live");
  EXPECT_EQ(LivenessPath(*ok), "/live");
  auto stored = ServiceSpecFromJson(ToJson(*ok));
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->autoscaling, ok->autoscaling) << "the stored form keeps them";
  EXPECT_EQ(stored->live_path, "/live");
  auto defaults = parse("");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->autoscaling.target_latency_ms, 0) << "latency is no input unless asked";
  EXPECT_EQ(defaults->autoscaling.panic_window_ms, 6 * kSecond) << "Knative's";
  EXPECT_EQ(defaults->autoscaling.panic_threshold_pct, 200) << "Knative's";
  EXPECT_EQ(LivenessPath(*defaults), "/") << "the health path";
  EXPECT_FALSE(ToJson(*defaults).contains("live")) << "an old head reads the stored form";
  auto error = [&](const std::string& fields) {
    auto r = parse(fields);
    EXPECT_FALSE(r.ok()) << fields;
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(error(R"(,"target_latency":"1h")").find("field 'target_latency'"), std::string::npos);
  EXPECT_NE(error(R"(,"target_latency":200)").find("field 'target_latency'"), std::string::npos);
  EXPECT_NE(error(R"(,"panic_window":"500ms")").find("field 'panic_window'"), std::string::npos);
  EXPECT_NE(error(R"(,"panic_threshold_pct":100)").find("field 'panic_threshold_pct'"),
            std::string::npos)
      << "Knative's bounds: 110 to 1000";
  EXPECT_NE(error(R"(,"live":"live")").find("field 'live'"), std::string::npos);
  auto patched = PatchedSettings(*defaults, Json::parse(R"({"target_latency":"300ms"})"));
  ASSERT_TRUE(patched.ok()) << patched.status().ToString();
  EXPECT_EQ(patched->autoscaling.target_latency_ms, 300) << "an update of the settings";
}

INSTANTIATE_TEST_SUITE_P(Head, AutoscaleScenario, ::testing::Bool(), [](const auto& info) {
  return info.param ? "CrashEveryStep" : "Straight";
});

}  // namespace
}  // namespace corral::head::core_test
