// The fixture of the head core's scenario tests (core_*_test.cc): the core driven step by step
// with a fake clock, an in-memory store and no threads. Every scenario runs twice: straight
// through, and with the head killed and recovered from the store after every step.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/desired_runs.h"
#include "head/core_test_harness.h"

namespace corral::head::core_test {

using testing::CoreHarness;

inline const Caller kAdmin = Caller::User("root", Role::kAdmin);
inline const Caller kAna = Caller::User("ana");
inline const Caller kBob = Caller::User("bob");
inline const Caller kJoin{Caller::Kind::kJoin, "join", Role::kUser, {}};

inline CoreConfig Config() {
  CoreConfig c;
  c.scheduler.min_runtime_before_preempt_ms = 0;
  c.idle_stop_queues = {"lab"};  // and lab/...: only the idle-stop tests submit there
  c.idle_stop_warning_ms = 10 * kMinute;
  return c;
}

class Scenario : public ::testing::TestWithParam<bool> {
 protected:
  Scenario() : h_(Config()) {}
  HeadCore& core() { return h_.core(); }
  TimeMs& now() { return h_.now; }

  // One step: commit what the command changed; with the parameter set, crash and recover.
  void Step() {
    h_.Commit();
    if (GetParam()) h_.Crash();
  }
  uint64_t Register(const std::string& name, int gpus) {
    RegisterRequest req;
    req.name = name;
    req.address = name + ".example:7071";
    req.cpu_milli = 16000;
    req.memory_mb = 64000;
    for (int i = 0; i < gpus; ++i)
      req.gpus.push_back({i, name + "-gpu" + std::to_string(i), "Sim", 1000, 0, true});
    auto r = core().Register(kJoin, req, "secret-" + name, now());
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    epochs_[name] = r->agent_epoch;
    Step();
    return r->agent_epoch;
  }
  Result<bool> Report(const std::string& node, std::vector<RunReport> runs, uint64_t epoch = 0,
                      std::vector<int32_t> busy_ports = {}) {
    SyncRequest req;
    req.node = node;
    req.busy_ports = std::move(busy_ports);
    req.agent_epoch = epoch ? epoch : epochs_[node];
    req.runs = std::move(runs);
    auto r = core().Report(Caller::Node(node), req, now());
    Step();
    return r;
  }
  static RunReport Running(const Job& j, int replica = 0) {
    return {ToString(RunId{j.id, j.CurrentRun()->attempt}), replica, true, 0, 0, 0};
  }
  static RunReport Exited(const Job& j, int replica, int code) {
    return {ToString(RunId{j.id, j.CurrentRun()->attempt}), replica, false, code, 0, 0};
  }
  JobSpec Spec(int gpus, int replicas = 1) {
    JobSpec s;
    s.command = {"train"};
    s.replicas = replicas;
    s.per_replica.gpu_milli = gpus * kGpuMilli;
    return s;
  }
  Job Submit(JobSpec spec, const Caller& by = kAna) {
    auto r = core().Submit(by, std::move(spec), "", now());
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    Step();
    return r.ok() ? *r : Job{};
  }
  void Schedule() {
    core().Schedule(now());
    Step();
  }
  Job Get(JobId id) { return *core().GetJob(kAna, id); }
  // A one-GPU job named `name` runs alone on node n1 for `for_ms` and succeeds: the history the
  // run-time estimator learns from.
  void RunNamed(const std::string& name, DurationMs for_ms) {
    JobSpec s = Spec(1);
    s.name = name;
    Job j = Submit(s);
    Schedule();
    ASSERT_EQ(Get(j.id).state, JobState::kScheduled) << name;
    ASSERT_TRUE(*Report("n1", {Running(Get(j.id))}));
    now() += for_ms;
    ASSERT_TRUE(*Report("n1", {Exited(Get(j.id), 0, 0)}));
  }
  // Retirement passes as the shell runs them, ticks 11 minutes apart, each followed by the
  // commit (and the snapshot the core may ask for): a new leadership's first tick only starts
  // the clock, the next may wait for a snapshot of the ended jobs, the third retires.
  void Retire() {
    for (int i = 0; i < 3; ++i) {
      now() += 11 * kMinute;
      core().Tick(now());
      h_.Commit();
    }
    Step();
  }
  // As the agent sees them: each task's environment derived from the order's layout.
  std::vector<RunOrder> Desired(const std::string& node) {
    std::vector<RunOrder> runs = core().DesiredFor(node).runs;
    for (RunOrder& o : runs) EXPECT_TRUE(ExpandOrderEnv(&o).ok());
    return runs;
  }

  CoreHarness h_;
  std::map<std::string, uint64_t> epochs_;
};

}  // namespace corral::head::core_test
