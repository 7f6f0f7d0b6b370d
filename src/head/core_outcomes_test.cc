// A run's stop cause: what each cause makes of the job, that it survives a crash, and that a
// change log written before causes were stored decodes to the same causes and decisions.
#include "head/core_scenario.h"

namespace corral::head::core_test {
namespace {

class Outcomes : public Scenario {
 protected:
  // A one-GPU job running on n1.
  Job Running(JobSpec spec) {
    Job j = Submit(std::move(spec));
    Schedule();
    EXPECT_TRUE(*Report("n1", {Scenario::Running(Get(j.id))}));
    return Get(j.id);
  }
  void Exit(const Job& j, int code) { EXPECT_TRUE(*Report("n1", {Exited(Get(j.id), 0, code)})); }
};

TEST_P(Outcomes, EachCauseDecidesTheJobsNextState) {
  Register("n1", 8);
  struct Case {
    const char* name;
    std::function<void(const Job&)> stop;
    StopCause cause;
    RunState run_state;
    JobState job_state;
  };
  const std::vector<Case> cases = {
      {"completed", [this](const Job& j) { Exit(j, 0); }, StopCause::kCompleted,
       RunState::kSucceeded, JobState::kSucceeded},
      {"failed", [this](const Job& j) { Exit(j, 3); }, StopCause::kFailed, RunState::kFailed,
       JobState::kFailed},
      {"cancelled",
       [this](const Job& j) {
         ASSERT_TRUE(core().Cancel(kAna, j.id, now()).ok());
         Step();
         Exit(j, -15);
       },
       StopCause::kCancelled, RunState::kCancelled, JobState::kCancelled},
      {"requeued",
       [this](const Job& j) {
         ASSERT_TRUE(core().Requeue(kAna, j.id, now()).ok());
         Step();
         Exit(j, -15);
       },
       StopCause::kRequeued, RunState::kPreempted, JobState::kPending},
      {"time limit",
       [this](const Job& j) {
         now() += 11 * kSecond;  // past its limit, within the node's liveness timeout
         core().Tick(now());
         Step();
         Exit(j, -15);
       },
       StopCause::kTimeLimit, RunState::kFailed, JobState::kFailed},
      {"out of memory",
       [this](const Job& j) {
         RunReport r = Exited(Get(j.id), 0, -9);
         r.oom_killed = true;
         EXPECT_TRUE(*Report("n1", {r}));
       },
       StopCause::kOutOfMemory, RunState::kFailed, JobState::kFailed},
      {"cannot start",
       [this](const Job& j) {
         RunReport r = Exited(Get(j.id), 0, 127);
         r.error = "user 'ana' has no account on this node";
         EXPECT_TRUE(*Report("n1", {r}));
       },
       StopCause::kCannotStart, RunState::kFailed, JobState::kFailed},
      {"lost",
       [this](const Job& j) {
         RunReport r = Exited(Get(j.id), 0, -9);
         r.fenced = true;
         EXPECT_TRUE(*Report("n1", {r}));
       },
       StopCause::kLost, RunState::kLost, JobState::kPending},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    JobSpec spec = Spec(1);
    spec.time_limit_ms = 10 * kSecond;
    Job j = Running(spec);
    ASSERT_EQ(j.state, JobState::kRunning);
    c.stop(j);
    Job after = Get(j.id);
    EXPECT_EQ(after.runs.at(0).state, c.run_state);
    EXPECT_EQ(after.runs.at(0).cause, c.cause) << StopCauseName(after.runs.at(0).cause);
    EXPECT_EQ(after.state, c.job_state);
    if (after.state == JobState::kPending) {
      ASSERT_TRUE(core().Cancel(kAna, j.id, now()).ok());  // out of the next case's way
      Step();
    }
  }
}

// The words a stop's reason begins with say the same as its cause.
TEST_P(Outcomes, StopsCarryTheirCause) {
  Register("n1", 8);
  Job j = Running(Spec(1));
  ASSERT_TRUE(core().Cancel(kAna, j.id, now()).ok());
  Step();
  const Job stopping = Get(j.id);
  const corral::Run& run = *stopping.CurrentRun();
  EXPECT_TRUE(run.stop_requested);
  EXPECT_EQ(run.cause, StopCause::kCancelled);
  EXPECT_EQ(run.reason.rfind(kReasonCancelled, 0), 0u) << run.reason;
}

INSTANTIATE_TEST_SUITE_P(Core, Outcomes, ::testing::Bool(), [](const auto& info) {
  return info.param ? std::string("CrashEveryStep") : std::string("Straight");
});

// A change as it was logged before changes carried causes.
Change OldForm(const Change& c) {
  Json j = ToJson(c);
  j.erase("cause");
  j.erase("preempt");
  auto decoded = ChangeFromJson(j);
  EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
  return *decoded;
}

TEST(OldChangeLog, DecodesCausesFromTheReasonsWords) {
  auto stop = [](const std::string& reason) {
    Change c{7, 1000, Caller::System(), StopRequested{1, 1, reason, StopCause::kNone}};
    return std::get<StopRequested>(OldForm(c).what);
  };
  EXPECT_EQ(stop("cancelled by ana").cause, StopCause::kCancelled);
  EXPECT_EQ(stop("requeued by ana").cause, StopCause::kRequeued);
  EXPECT_EQ(stop("time limit 1:00:00 exceeded").cause, StopCause::kTimeLimit);
  EXPECT_EQ(stop("GPU error: Xid 13 on GPU 0 of node n1").cause, StopCause::kGpuError);
  EXPECT_EQ(stop("out of memory: replica 0 on node n1").cause, StopCause::kOutOfMemory);
  EXPECT_EQ(stop("cannot start replica 0 on node n1: no account").cause, StopCause::kCannotStart);
  EXPECT_EQ(stop("replica 1 exited with code 3; stopping the gang").cause, StopCause::kFailed);
  EXPECT_EQ(stop("the batch script (replica 0) ended with code 0").cause, StopCause::kCompleted);
  EXPECT_EQ(stop("the batch script (replica 0) ended with code 2").cause, StopCause::kFailed);
  StopRequested preempted =
      stop("preempted: queue a reclaims its quota of 4 GPUs for job 9; queue b was over its quota");
  EXPECT_EQ(preempted.cause, StopCause::kPreempted);
  EXPECT_EQ(preempted.preempt, PreemptKind::kQuota);
  EXPECT_EQ(stop("preempted for job 9 of priority 5 (this run has priority 0)").preempt,
            PreemptKind::kPriority);
  EXPECT_EQ(stop("preempted for job 9 of queue a, which has attained less service (LAS level 0; "
                 "this run has 3 GPU-hours, level 1)")
                .preempt,
            PreemptKind::kLas);
  EXPECT_EQ(stop("preempted by sjf for job 9").preempt, PreemptKind::kPolicy);
  EXPECT_EQ(stop("cancelled by ana").preempt, PreemptKind::kNone);

  auto ended = [](RunState state, const std::string& reason) {
    Change c{8, 1000, Caller::System(),
             RunEnded{1, 1, state, reason, JobState::kFailed, 0, StopCause::kNone}};
    return std::get<RunEnded>(OldForm(c).what).cause;
  };
  EXPECT_EQ(ended(RunState::kSucceeded, ""), StopCause::kCompleted);
  EXPECT_EQ(ended(RunState::kFailed, ""), StopCause::kFailed);
  EXPECT_EQ(ended(RunState::kFailed, "GPU error: Xid 13"), StopCause::kGpuError);
  EXPECT_EQ(ended(RunState::kFailed, "out of memory: replica 0"), StopCause::kOutOfMemory);
  EXPECT_EQ(ended(RunState::kCancelled, ""), StopCause::kCancelled);
  EXPECT_EQ(ended(RunState::kPreempted, ""), StopCause::kPreempted);
  EXPECT_EQ(ended(RunState::kLost, "node n1 lost"), StopCause::kLost);
}

TEST(OldChangeLog, CausesRoundTrip) {
  Change c{7, 1000, Caller::System(),
           StopRequested{1, 1, "preempted: x", StopCause::kPreempted, PreemptKind::kLas}};
  auto back = ChangeFromJson(ToJson(c));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(std::get<StopRequested>(back->what).cause, StopCause::kPreempted);
  EXPECT_EQ(std::get<StopRequested>(back->what).preempt, PreemptKind::kLas);
  Json bad = ToJson(c);
  bad["cause"] = "vanished";
  EXPECT_FALSE(ChangeFromJson(bad).ok()) << "an unknown cause is an error, not a guess";
}

// A head that recovers from a log written before causes were stored decides as the head that
// wrote it would have: a stop logged as a cancel ends the job cancelled, a requeue requeues i
TEST(OldChangeLog, RecoveredStopsDecideByTheirOldWords) {
  for (bool cancel : {true, false}) {
    SCOPED_TRACE(cancel ? "cancel" : "requeue");
    CoreHarness live(Config());
    HeadCore& core = live.core();
    RegisterRequest reg;
    reg.name = "n1";
    reg.address = "n1.example:7071";
    reg.cpu_milli = 16000;
    reg.memory_mb = 64000;
    reg.gpus.push_back({0, "n1-gpu0", "Sim", 1000, 0, true});
    auto node = core.Register(kJoin, reg, "secret-n1", live.now);
    ASSERT_TRUE(node.ok());
    JobSpec spec;
    spec.command = {"train"};
    spec.per_replica.gpu_milli = kGpuMilli;
    auto job = core.Submit(kAna, spec, "", live.now);
    ASSERT_TRUE(job.ok());
    core.Schedule(live.now);
    ASSERT_EQ(core.state().jobs.at(job->id).state, JobState::kScheduled);
    Status st = cancel ? core.Cancel(kAna, job->id, live.now).status()
                       : core.Requeue(kAna, job->id, live.now).status();
    ASSERT_TRUE(st.ok()) << st.ToString();
    live.Commit();

    std::vector<Change> old_log;
    for (const Change& c : live.changes()) old_log.push_back(OldForm(c));
    HeadCore recovered(Config());
    ASSERT_TRUE(recovered.Recover(ClusterState{}, old_log, live.now).ok());
    recovered.Start(live.now);
    const corral::Run& run = *recovered.state().jobs.at(job->id).CurrentRun();
    EXPECT_EQ(run.cause, cancel ? StopCause::kCancelled : StopCause::kRequeued);

    SyncRequest sync;
    sync.node = "n1";
    sync.agent_epoch = node->agent_epoch;
    sync.runs = {RunReport{ToString(RunId{job->id, 1}), 0, false, -15, 0, 0}};
    ASSERT_TRUE(recovered.Report(Caller::Node("n1"), sync, live.now).ok());
    const Job& after = recovered.state().jobs.at(job->id);
    EXPECT_EQ(after.state, cancel ? JobState::kCancelled : JobState::kPending);
    EXPECT_EQ(after.runs.at(0).cause, cancel ? StopCause::kCancelled : StopCause::kRequeued);
  }
}

}  // namespace
}  // namespace corral::head::core_test
