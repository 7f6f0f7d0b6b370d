// The head's core driven step by step: a fake clock, an in-memory store, no threads. Every
// scenario runs twice: straight through, and with the head killed and recovered from the
// store after every step (a restart in the middle of each).
#include <gtest/gtest.h>

#include "core/desired_runs.h"
#include "head/core_test_harness.h"

namespace corral::head {
namespace {

using testing::CoreHarness;

const Caller kAdmin = Caller::User("root", Role::kAdmin);
const Caller kAna = Caller::User("ana");
const Caller kBob = Caller::User("bob");
const Caller kJoin{Caller::Kind::kJoin, "join", Role::kUser, {}};

CoreConfig Config() {
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

TEST_P(Scenario, JobRunsAndSucceeds) {
  Register("n1", 4);
  Job job = Submit(Spec(2));
  EXPECT_EQ(job.owner, "ana");
  Schedule();
  ASSERT_EQ(Get(job.id).state, JobState::kScheduled);
  auto orders = Desired("n1");
  ASSERT_EQ(orders.size(), 1u);
  EXPECT_EQ(orders[0].gpus.size(), 2u);
  EXPECT_EQ(orders[0].env.at("MASTER_PORT"), "29500");
  ASSERT_TRUE(*Report("n1", {Running(Get(job.id))}));
  EXPECT_EQ(Get(job.id).state, JobState::kRunning);
  ASSERT_TRUE(*Report("n1", {Exited(Get(job.id), 0, 0)}));
  EXPECT_EQ(Get(job.id).state, JobState::kSucceeded);
  EXPECT_TRUE(Desired("n1").empty());
}

// The head learns run times from ended jobs (sched::RuntimeEstimator) and, among equals,
// starts the job predicted to be shortest first; a restarted head learns them again.
TEST_P(Scenario, AJobWhoseNameRanShortStartsBeforeOneThatRanLong) {
  Register("n1", 1);
  auto run = [&](const std::string& name, DurationMs for_ms) {
    JobSpec s = Spec(1);
    s.name = name;
    Job j = Submit(s);
    Schedule();
    ASSERT_EQ(Get(j.id).state, JobState::kScheduled) << name;
    ASSERT_TRUE(*Report("n1", {Running(Get(j.id))}));
    now() += for_ms;
    ASSERT_TRUE(*Report("n1", {Exited(Get(j.id), 0, 0)}));
  };
  run("long", 2 * kHour);
  run("short", kMinute);
  JobSpec busy = Spec(1);
  Job blocker = Submit(busy);
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(blocker.id))}));
  JobSpec l = Spec(1), s = Spec(1);
  l.name = "long";
  s.name = "short";
  Job first = Submit(l);   // submitted first, predicted 2 h
  Job second = Submit(s);  // predicted 1 min
  now() += kSecond;
  ASSERT_TRUE(*Report("n1", {Exited(Get(blocker.id), 0, 0)}));
  Schedule();
  EXPECT_EQ(Get(second.id).state, JobState::kScheduled);
  EXPECT_EQ(Get(first.id).state, JobState::kPending);
}

// Fair share counts what a queue ran before (decayed usage): a queue that kept the cluster
// busy waits behind one that did not, and a restarted head remembers it from the runs.
TEST_P(Scenario, AQueueThatRanWaitsBehindOneThatDidNotAcrossRestarts) {
  ASSERT_TRUE(core().SetQueue(kAdmin, {"a", 0, -1, 1.0}, now()).ok());
  ASSERT_TRUE(core().SetQueue(kAdmin, {"b", 0, -1, 1.0}, now()).ok());
  Step();
  Register("n1", 1);
  JobSpec in_a = Spec(1);
  in_a.queue = "a";
  Job ran = Submit(in_a);
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(ran.id))}));
  now() += 10 * kHour;
  Schedule();  // a pass while it runs: the live scheduler integrates usage between passes
  ASSERT_TRUE(*Report("n1", {Exited(Get(ran.id), 0, 0)}));
  Job again = Submit(in_a);  // submitted first, and by id first too
  JobSpec in_b = Spec(1);
  in_b.queue = "b";
  Job fresh = Submit(in_b);  // the same owner and name: the same predicted run time
  Schedule();
  EXPECT_EQ(Get(fresh.id).state, JobState::kScheduled);
  EXPECT_EQ(Get(again.id).state, JobState::kPending);
}

TEST_P(Scenario, PreemptionStopsTheBorrowerAndRequeuesIt) {
  ASSERT_TRUE(core().SetQueue(kAdmin, {"a", 0, -1, 1.0}, now()).ok());
  ASSERT_TRUE(core().SetQueue(kAdmin, {"b", 2, -1, 1.0}, now()).ok());
  Step();
  Register("n1", 2);
  JobSpec borrow = Spec(2);
  borrow.queue = "a";
  borrow.preemptible = true;
  Job a = Submit(borrow);
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(a.id))}));
  now() += kMinute;
  JobSpec owner = Spec(2);
  owner.queue = "b";
  Job b = Submit(owner, kBob);
  Schedule();
  Job va = Get(a.id);
  const corral::Run& victim = *va.CurrentRun();
  ASSERT_TRUE(victim.stop_requested);
  EXPECT_EQ(victim.reason.rfind("preempted", 0), 0u) << victim.reason;
  EXPECT_EQ(Get(b.id).state, JobState::kPending) << "the victim holds its GPUs until it exits";
  auto orders = Desired("n1");
  ASSERT_EQ(orders.size(), 1u);
  EXPECT_TRUE(orders[0].stop);
  ASSERT_TRUE(*Report("n1", {Exited(Get(a.id), 0, -15)}));
  Job after = Get(a.id);
  EXPECT_EQ(after.state, JobState::kPending);
  EXPECT_EQ(after.runs[0].state, RunState::kPreempted);
  Schedule();
  EXPECT_EQ(Get(b.id).state, JobState::kScheduled);
  EXPECT_EQ(Get(a.id).state, JobState::kPending);
}

TEST_P(Scenario, CancelAtEveryStage) {
  Register("n1", 4);
  Job pending = Submit(Spec(4));
  auto cancelled = core().Cancel(kAna, pending.id, now());
  ASSERT_TRUE(cancelled.ok());
  Step();
  EXPECT_EQ(Get(pending.id).state, JobState::kCancelled);
  EXPECT_EQ(core().Cancel(kAna, pending.id, now()).status().code(), ErrorCode::kFailedPrecondition);

  Job scheduled = Submit(Spec(1));
  Job running = Submit(Spec(1));
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(running.id))}));
  // Another user may not cancel; a queue admin of the job's queue may.
  EXPECT_EQ(core().Cancel(kBob, running.id, now()).status().code(), ErrorCode::kPermissionDenied);
  Caller lead = Caller::User("lead", Role::kQueueAdmin);
  lead.queues = {"default"};
  ASSERT_TRUE(core().Cancel(lead, running.id, now()).ok());
  ASSERT_TRUE(core().Cancel(kAna, scheduled.id, now()).ok());
  Step();
  for (const RunOrder& o : Desired("n1")) EXPECT_TRUE(o.stop) << o.run_id;
  EXPECT_EQ(Desired("n1").size(), 2u);
  ASSERT_TRUE(*Report("n1", {Exited(Get(scheduled.id), 0, -15), Exited(Get(running.id), 0, -15)}));
  EXPECT_EQ(Get(scheduled.id).state, JobState::kCancelled);
  EXPECT_EQ(Get(running.id).state, JobState::kCancelled);
  EXPECT_TRUE(Desired("n1").empty());
}

// The race behind GPUs held forever: a run placed, then cancelled before its agent started it.
// The agent, which never started it, answers nothing; the node keeps syncing, so it is never
// lost with its node. Once the stop is overdue (grace + stop_confirm_after), the run is lost,
// the job stays cancelled, and its GPUs take the next job.
TEST_P(Scenario, AStopNeverConfirmedIsDeclaredLostAndItsGpusFreed) {
  Register("n1", 2);
  Job first = Submit(Spec(2));
  Job next = Submit(Spec(2), kBob);
  Schedule();
  ASSERT_EQ(Get(first.id).state, JobState::kScheduled);
  ASSERT_TRUE(core().Cancel(kAna, first.id, now()).ok());
  Step();
  const DurationMs bound = first.spec.grace_ms + core().config().stop_confirm_after_ms;
  const TimeMs asked = now();
  // The node syncs every 10 s and never mentions the run.
  auto sync_until = [&](TimeMs until) {
    while (now() + 10 * kSecond <= until) {
      now() += 10 * kSecond;
      ASSERT_TRUE(*Report("n1", {}));
      core().Tick(now());
      Step();
    }
  };
  sync_until(asked + bound);
  EXPECT_TRUE(Get(first.id).CurrentRun()->stop_requested);
  EXPECT_EQ(Get(first.id).state, JobState::kScheduled) << "not before the bound";
  Schedule();
  EXPECT_EQ(Get(next.id).state, JobState::kPending) << "its GPUs are still held";
  sync_until(asked + bound + 10 * kSecond);
  Job lost = Get(first.id);
  EXPECT_EQ(lost.state, JobState::kCancelled);
  EXPECT_EQ(lost.CurrentRun()->state, RunState::kLost);
  EXPECT_NE(lost.CurrentRun()->reason.find("not confirmed by its node"), std::string::npos)
      << lost.CurrentRun()->reason;
  EXPECT_EQ(core().ListNodes()[0].gpus_used, 0);
  Schedule();
  EXPECT_EQ(Get(next.id).state, JobState::kScheduled);
  h_.ExpectReplayEqualsLive();
}

// Priority decides who preempts whom in a queue: a plain user may not raise their own job above
// the allowance (max_user_priority, 0 by default) to take another user's GPUs.
TEST_P(Scenario, APlainUserCannotPreemptAnotherByRaisingTheirOwnPriority) {
  Register("n1", 2);
  JobSpec bobs = Spec(2);
  bobs.preemptible = true;
  Job victim = Submit(bobs, kBob);
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(victim.id))}));
  JobSpec urgent = Spec(2);
  urgent.priority = 100;
  auto refused = core().Submit(kAna, urgent, "", now());
  ASSERT_EQ(refused.status().code(), ErrorCode::kPermissionDenied);
  EXPECT_NE(refused.status().message().find("field 'priority': got 100, want at most 0"),
            std::string::npos)
      << refused.status().message();
  Job within = Submit(Spec(2));  // at the allowance: waits its turn
  Schedule();
  EXPECT_FALSE(Get(victim.id).CurrentRun()->stop_requested);
  EXPECT_EQ(Get(within.id).state, JobState::kPending);
  // The same priority from an admin does preempt: the refusal is what protects bob.
  Job admins = Submit(urgent, kAdmin);
  Schedule();
  EXPECT_TRUE(Get(victim.id).CurrentRun()->stop_requested);
  EXPECT_EQ(Get(admins.id).spec.priority, 100);
}

TEST_P(Scenario, GangFailureStopsEveryReplicaAndRestartsThenFails) {
  Register("n1", 2);
  Register("n2", 2);
  JobSpec spec = Spec(2, 2);
  spec.max_restarts = 1;
  Job job = Submit(spec);
  Schedule();
  ASSERT_EQ(Get(job.id).state, JobState::kScheduled);
  for (int attempt = 1; attempt <= 2; ++attempt) {
    Job j = Get(job.id);
    ASSERT_EQ(j.CurrentRun()->attempt, attempt);
    const std::string n0 = j.CurrentRun()->placement[0].node,
                      n1 = j.CurrentRun()->placement[1].node;
    ASSERT_NE(n0, n1);
    ASSERT_TRUE(*Report(n0, {Running(j, 0)}));
    ASSERT_TRUE(*Report(n1, {Running(j, 1)}));
    ASSERT_TRUE(*Report(n1, {Exited(j, 1, 3)}));  // one replica fails...
    Job now_job = Get(job.id);
    const corral::Run& run = *now_job.CurrentRun();
    EXPECT_TRUE(run.stop_requested) << "...and the whole gang is stopped";
    EXPECT_NE(run.reason.find("replica 1 exited with code 3"), std::string::npos) << run.reason;
    ASSERT_EQ(Desired(n0).size(), 1u);
    EXPECT_TRUE(Desired(n0)[0].stop);
    ASSERT_TRUE(*Report(n0, {Exited(j, 0, -15)}));
    if (attempt == 1) {
      EXPECT_EQ(Get(job.id).state, JobState::kPending) << "one restart left";
      Schedule();
    }
  }
  Job done = Get(job.id);
  EXPECT_EQ(done.state, JobState::kFailed);
  EXPECT_EQ(done.exit_code, 3);
  EXPECT_EQ(done.runs.size(), 2u);
}

// A Slurm batch job: replica 0 runs the script, the others only hold their nodes. Replica 0's
// end stops them, and its code alone is the job's (the holders' -15 says nothing).
TEST_P(Scenario, BatchJobEndsWithReplicaZeroAndTakesItsCode) {
  Register("n1", 2);
  Register("n2", 2);
  for (int code : {0, 7}) {
    JobSpec spec = Spec(1, 2);
    spec.batch = true;
    Job job = Submit(spec);
    Schedule();
    Job j = Get(job.id);
    ASSERT_EQ(j.state, JobState::kScheduled);
    const std::string n0 = j.CurrentRun()->placement[0].node,
                      n1 = j.CurrentRun()->placement[1].node;
    ASSERT_TRUE(*Report(n0, {Running(j, 0)}));
    ASSERT_TRUE(*Report(n1, {Running(j, 1)}));
    ASSERT_TRUE(*Report(n0, {Exited(j, 0, code)}));
    const corral::Run run = *Get(job.id).CurrentRun();
    EXPECT_TRUE(run.stop_requested) << "the holder is stopped when the script ends";
    EXPECT_NE(run.reason.find("batch script (replica 0) ended with code " + std::to_string(code)),
              std::string::npos)
        << run.reason;
    ASSERT_EQ(Desired(n1).size(), 1u);
    EXPECT_TRUE(Desired(n1)[0].stop);
    ASSERT_TRUE(*Report(n1, {Exited(j, 1, -15)}));
    Job done = Get(job.id);
    EXPECT_EQ(done.state, code == 0 ? JobState::kSucceeded : JobState::kFailed);
    EXPECT_EQ(done.exit_code, code);
  }
}

// Job steps (srun in a batch script): only the run's own step credential starts one; each
// node of the step gets its share as a run of its own with the step's ranks; the step ends
// when every node has reported, and a stale run's credential is refused.
TEST_P(Scenario, BatchJobStartsAStepAcrossItsNodesWithItsOwnCredential) {
  Register("n1", 2);
  Register("n2", 2);
  JobSpec spec = Spec(2, 2);
  spec.batch = true;
  Job job = Submit(spec);
  Schedule();
  Job j = Get(job.id);
  const std::string n0 = j.CurrentRun()->placement[0].node, n1 = j.CurrentRun()->placement[1].node;
  ASSERT_TRUE(*Report(n0, {Running(j, 0)}));
  ASSERT_TRUE(*Report(n1, {Running(j, 1)}));
  // The batch step (replica 0) carries the credential; the holder does not.
  std::vector<RunOrder> d0 = Desired(n0), d1 = Desired(n1);
  ASSERT_EQ(d0.size(), 1u);
  ASSERT_EQ(d1.size(), 1u);
  ASSERT_TRUE(d0[0].env.count("CORRAL_STEP_TOKEN"));
  EXPECT_FALSE(d1[0].env.count("CORRAL_STEP_TOKEN"));
  const std::string token = d0[0].env.at("CORRAL_STEP_TOKEN");
  auto caller = core().Authenticate(token, now());
  ASSERT_TRUE(caller.ok()) << caller.status().ToString();
  EXPECT_EQ(caller->kind, Caller::Kind::kJob);
  std::string forged = token;
  forged.back() = forged.back() == '0' ? '1' : '0';
  EXPECT_FALSE(core().Authenticate(forged, now()).ok());

  StepRequest req;
  req.command = {"python3", "train.py"};
  req.env = {{"FOO", "bar"}, {"CORRAL_STEP_TOKEN", token}};
  req.ntasks = 3;  // block distribution over 2 nodes: 2 + 1
  EXPECT_EQ(core().StartStep(kAna, job.id, req, now()).status().code(),
            ErrorCode::kPermissionDenied)
      << "the owner's own token does not start steps; only the job does";
  StepRequest bad = req;
  bad.replicas = {0, 2};
  auto refused = core().StartStep(*caller, job.id, bad, now());
  EXPECT_EQ(refused.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("replicas"), std::string::npos);
  auto started = core().StartStep(*caller, job.id, req, now());
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  Step();
  EXPECT_EQ(started->id, 0);
  EXPECT_EQ(started->tasks, (std::vector<int32_t>{2, 1}));
  EXPECT_FALSE(Get(job.id).CurrentRun()->steps[0].env.count("CORRAL_STEP_TOKEN"))
      << "steps are readable by others; the credential is not kept";

  d0 = Desired(n0);
  d1 = Desired(n1);
  ASSERT_EQ(d0.size(), 2u);
  ASSERT_EQ(d1.size(), 2u);
  const std::string step_run = ToString(RunId{job.id, 1}) + "-s0";
  const RunOrder& s0 = d0[1].run_id == step_run ? d0[1] : d0[0];
  const RunOrder& s1 = d1[1].run_id == step_run ? d1[1] : d1[0];
  ASSERT_EQ(s0.run_id, step_run);
  ASSERT_EQ(s1.run_id, step_run);
  EXPECT_EQ(s0.command, req.command);
  ASSERT_EQ(s0.task_envs.size(), 2u);
  EXPECT_TRUE(s1.task_envs.empty());
  EXPECT_EQ(s0.task_envs[1].at("SLURM_PROCID"), "1");
  EXPECT_EQ(s0.task_envs[1].at("SLURM_LOCALID"), "1");
  EXPECT_EQ(s1.env.at("SLURM_PROCID"), "2");
  EXPECT_EQ(s1.env.at("SLURM_NODEID"), "1");
  EXPECT_EQ(s1.env.at("SLURM_STEP_ID"), "0");
  EXPECT_EQ(s1.env.at("SLURM_STEP_NUM_TASKS"), "3");
  EXPECT_EQ(s1.env.at("SLURM_NTASKS"), "3");
  EXPECT_EQ(s1.env.at("FOO"), "bar");
  EXPECT_EQ(s1.gpus, j.CurrentRun()->placement[1].gpus) << "the step uses the allocation's GPUs";

  RunReport e0{step_run, 0, false, 0, 0, 0};
  RunReport e1{step_run, 1, false, 4, 0, 0};
  ASSERT_TRUE(*Report(n0, {Running(j, 0), e0}));
  auto mid = core().GetStep(*core().Authenticate(token, now()), job.id, 0);
  ASSERT_TRUE(mid.ok());
  EXPECT_EQ(mid->exit_codes, (std::vector<int32_t>{0, kNotExited}));
  EXPECT_EQ(mid->ended_at, 0);
  ASSERT_TRUE(*Report(n1, {Running(j, 1), e1}));
  auto done = core().GetStep(kAna, job.id, 0);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->exit_codes, (std::vector<int32_t>{0, 4}));
  EXPECT_GT(done->ended_at, 0);
  EXPECT_EQ(Desired(n1).size(), 1u) << "an ended step is no longer ordered";
  EXPECT_EQ(Get(job.id).state, JobState::kRunning) << "a failed step does not end the job";

  // The script ends: the run is over and its credential with it.
  ASSERT_TRUE(*Report(n0, {Exited(j, 0, 0)}));
  ASSERT_TRUE(*Report(n1, {Exited(j, 1, -15)}));
  EXPECT_EQ(Get(job.id).state, JobState::kSucceeded);
  EXPECT_FALSE(core().Authenticate(token, now()).ok());
  h_.ExpectReplayEqualsLive();
}

// A batch script's first srun can reach the head before the agent's report that the script
// started: the run is still "scheduled" there, and the step starts all the same (only a task
// the agent launched holds the credential). Once the run is stopping, it does not.
TEST_P(Scenario, AStepOfARunWhoseStartIsNotReportedYetStarts) {
  Register("n1", 2);
  JobSpec spec = Spec(1);
  spec.batch = true;
  Job job = Submit(spec);
  Schedule();
  Job j = Get(job.id);
  ASSERT_EQ(j.CurrentRun()->state, RunState::kScheduled);
  std::vector<RunOrder> d = Desired("n1");
  ASSERT_EQ(d.size(), 1u);
  auto caller = core().Authenticate(d[0].env.at("CORRAL_STEP_TOKEN"), now());
  ASSERT_TRUE(caller.ok()) << caller.status().ToString();
  StepRequest req;
  req.command = {"hostname"};
  auto started = core().StartStep(*caller, job.id, req, now());
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  Step();
  EXPECT_EQ(Desired("n1").size(), 2u) << "the batch step and the new step";
  ASSERT_TRUE(core().Cancel(kAna, job.id, now()).ok());
  Step();
  auto refused = core().StartStep(*caller, job.id, req, now());
  EXPECT_EQ(refused.status().code(), ErrorCode::kFailedPrecondition);
  h_.ExpectReplayEqualsLive();
}

// scontrol hold/release: a held job waits whatever is free; its release lets it run.
// scontrol requeue: a live job's run stops and the job waits again under the same id,
// without spending a restart; the job itself may ask (submitit), an ended job may not.
TEST_P(Scenario, HeldJobsWaitUntilReleasedAndRequeuedJobsKeepTheirId) {
  Register("n1", 2);
  Job held = Submit(Spec(1));
  ASSERT_TRUE(core().SetHold(kAna, held.id, true, now()).ok());
  Step();
  EXPECT_EQ(core().SetHold(kBob, held.id, false, now()).status().code(),
            ErrorCode::kPermissionDenied);
  Schedule();
  EXPECT_EQ(Get(held.id).state, JobState::kPending) << "a held job is not scheduled";
  EXPECT_TRUE(Get(held.id).held);
  EXPECT_NE(Get(held.id).pending_reason.find("held"), std::string::npos);
  EXPECT_EQ(Get(held.id).pending_code, PendingCode::kHeld);
  ASSERT_TRUE(core().SetHold(kAna, held.id, false, now()).ok());
  Step();
  Schedule();
  Job j = Get(held.id);
  ASSERT_EQ(j.state, JobState::kScheduled) << "released, it runs";
  EXPECT_EQ(core().SetHold(kAna, held.id, true, now()).status().code(),
            ErrorCode::kFailedPrecondition)
      << "only a pending job can be held";

  ASSERT_TRUE(*Report("n1", {Running(j)}));
  ASSERT_TRUE(core().Requeue(kAna, held.id, now()).ok());
  Step();
  ASSERT_TRUE(Get(held.id).CurrentRun()->stop_requested);
  ASSERT_TRUE(*Report("n1", {Exited(j, 0, -15)}));
  Job requeued = Get(held.id);
  EXPECT_EQ(requeued.state, JobState::kPending);
  EXPECT_EQ(requeued.runs[0].state, RunState::kPreempted);
  EXPECT_NE(requeued.runs[0].reason.find("requeued by ana"), std::string::npos)
      << requeued.runs[0].reason;
  Schedule();
  j = Get(held.id);
  ASSERT_EQ(j.runs.size(), 2u) << "the same job, a second run";
  ASSERT_TRUE(*Report("n1", {Running(j)}));
  ASSERT_TRUE(*Report("n1", {Exited(j, 0, 0)}));
  EXPECT_EQ(Get(held.id).state, JobState::kSucceeded);
  EXPECT_EQ(core().Requeue(kAna, held.id, now()).status().code(), ErrorCode::kFailedPrecondition);

  // The batch step requeues its own job with its step credential, and no other job.
  JobSpec batch = Spec(1);
  batch.batch = true;
  Job b = Submit(batch);
  Job other = Submit(Spec(1));
  Schedule();
  Job bj = Get(b.id);
  ASSERT_TRUE(*Report("n1", {Running(bj)}));
  auto self = core().Authenticate(Desired("n1")[0].env.at("CORRAL_STEP_TOKEN"), now());
  ASSERT_TRUE(self.ok());
  EXPECT_EQ(core().Requeue(*self, other.id, now()).status().code(), ErrorCode::kPermissionDenied);
  ASSERT_TRUE(core().Requeue(*self, b.id, now()).ok());
  Step();
  ASSERT_TRUE(*Report("n1", {Exited(bj, 0, -15)}));
  EXPECT_EQ(Get(b.id).state, JobState::kPending);
  h_.ExpectReplayEqualsLive();
}

// scancel --signal: the running job's processes are ordered the signal once more each time
// (a count the agent compares), and keep running; a batch job's goes to its steps unless the
// batch step is named, as on Slurm; a pending job cannot be signalled.
TEST_P(Scenario, SignalsReachTheRunWithoutStoppingIt) {
  Register("n1", 2);
  Job plain = Submit(Spec(1));
  Schedule();
  Job pj = Get(plain.id);
  ASSERT_TRUE(*Report("n1", {Running(pj)}));
  using T = HeadCore::SignalTarget;
  EXPECT_EQ(core().Signal(kBob, plain.id, 10, T::kDefault, now()).status().code(),
            ErrorCode::kPermissionDenied);
  EXPECT_EQ(core().Signal(kAna, plain.id, 99, T::kDefault, now()).status().code(),
            ErrorCode::kInvalidArgument);
  ASSERT_TRUE(core().Signal(kAna, plain.id, 10, T::kDefault, now()).ok());
  Step();
  ASSERT_TRUE(core().Signal(kAna, plain.id, 12, T::kDefault, now()).ok());
  Step();
  std::vector<RunOrder> d = Desired("n1");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].signals, 2);
  EXPECT_EQ(d[0].signal, 12);
  EXPECT_FALSE(d[0].stop);
  EXPECT_EQ(Get(plain.id).state, JobState::kRunning);

  JobSpec batch = Spec(1);
  batch.batch = true;
  Job b = Submit(batch);
  Job waiting = Submit(Spec(2));
  Schedule();
  EXPECT_EQ(core().Signal(kAna, waiting.id, 10, T::kDefault, now()).status().code(),
            ErrorCode::kFailedPrecondition);
  Job bj = Get(b.id);
  ASSERT_TRUE(*Report("n1", {Running(pj), Running(bj)}));
  auto self = core().Authenticate(Desired("n1")[1].env.at("CORRAL_STEP_TOKEN"), now());
  ASSERT_TRUE(self.ok());
  StepRequest req;
  req.command = {"sleep", "60"};
  ASSERT_TRUE(core().StartStep(*self, b.id, req, now()).ok());
  Step();
  ASSERT_TRUE(core().Signal(kAna, b.id, 10, T::kDefault, now()).ok());
  Step();
  d = Desired("n1");
  ASSERT_EQ(d.size(), 3u);  // the plain job, the batch step, the step's share
  EXPECT_EQ(d[1].signals, 0) << "Slurm's default spares the batch shell";
  EXPECT_EQ(d[2].signals, 1);
  ASSERT_TRUE(core().Signal(kAna, b.id, 12, T::kBatch, now()).ok());
  Step();
  d = Desired("n1");
  EXPECT_EQ(d[1].signals, 1);
  EXPECT_EQ(d[1].signal, 12);
  EXPECT_EQ(d[2].signals, 1) << "-b: the batch step only";
  h_.ExpectReplayEqualsLive();
}

// Holding an array holds its pending elements; releasing it lets them run under %P.
TEST_P(Scenario, HoldingAnArrayHoldsItsPendingElements) {
  Register("n1", 4);
  JobSpec spec = Spec(1);
  spec.array = "0-3%2";
  Job first = Submit(spec);
  ASSERT_TRUE(core().SetHold(kAna, first.id, true, now()).ok());
  Step();
  Schedule();
  for (JobId id = first.id; id < first.id + 4; ++id) {
    EXPECT_EQ(Get(id).state, JobState::kPending) << id;
    EXPECT_TRUE(Get(id).held) << id;
  }
  ASSERT_TRUE(core().SetHold(kAna, first.id, false, now()).ok());
  Step();
  Schedule();
  int scheduled = 0;
  for (JobId id = first.id; id < first.id + 4; ++id) {
    scheduled += Get(id).state == JobState::kScheduled;
  }
  EXPECT_EQ(scheduled, 2) << "released, at most %P=2 run at once";
}

// A replica its agent lost track of (killed while launching it): the run is lost and the job
// requeued without spending a restart, as with a lost node, not failed with "-9".
TEST_P(Scenario, AVanishedReplicaIsALossNotAFailure) {
  Register("n1", 1);
  Job job = Submit(Spec(1));
  Schedule();
  Job j = Get(job.id);
  RunReport vanished = Exited(j, 0, -9);
  vanished.vanished = true;
  ASSERT_TRUE(*Report("n1", {vanished}));
  Job after = Get(job.id);
  EXPECT_EQ(after.state, JobState::kPending);
  EXPECT_EQ(after.runs[0].state, RunState::kLost);
  EXPECT_NE(after.runs[0].reason.find("without an exit status"), std::string::npos)
      << after.runs[0].reason;
  Schedule();
  ASSERT_EQ(Get(job.id).runs.size(), 2u) << "it runs again";
}

// A GPU that fails its probe (DESIGN §9): the node is unhealthy with the reason and gets no new
// runs; a run that died with that GPU is a loss, requeued without spending a restart; the node
// takes runs again once every GPU passes.
TEST_P(Scenario, AGpuThatFailsItsProbeMakesTheNodeUnhealthyAndItsDeadRunIsRequeued) {
  Register("n1", 2);
  Job job = Submit(Spec(1));  // max_restarts 0: dying with its GPU is not its failure
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(job.id))}));
  const int32_t held = Desired("n1").at(0).gpus.at(0);
  auto sync = [&](std::vector<RunReport> runs, const std::string& fault) {
    SyncRequest req;
    req.node = "n1";
    req.agent_epoch = epochs_["n1"];
    req.runs = std::move(runs);
    for (int32_t i = 0; i < 2; ++i) req.gpu_samples.push_back({i, 0, 0, i == held ? fault : ""});
    ASSERT_TRUE(*core().Report(Caller::Node("n1"), req, now()));
    Step();
  };
  sync({Exited(Get(job.id), 0, -6)}, "NVML nvmlDeviceGetMemoryInfo failed: GPU is lost");
  Node n1 = *core().GetNode("n1");
  EXPECT_EQ(n1.unhealthy,
            "GPU " + std::to_string(held) + ": NVML nvmlDeviceGetMemoryInfo failed: GPU is lost");
  EXPECT_FALSE(n1.gpus.at(held).healthy);
  EXPECT_TRUE(n1.gpus.at(1 - held).healthy);
  EXPECT_EQ(n1.state(), NodeState::kReady) << "health is not an admin's drain";
  Job lost = Get(job.id);
  EXPECT_EQ(lost.state, JobState::kPending);
  EXPECT_EQ(lost.runs.at(0).state, RunState::kLost);
  EXPECT_NE(lost.runs[0].reason.find("died with GPU"), std::string::npos) << lost.runs[0].reason;
  Job other = Submit(Spec(1));
  Schedule();
  EXPECT_EQ(Get(job.id).state, JobState::kPending) << "no new runs on an unhealthy node";
  EXPECT_EQ(Get(other.id).state, JobState::kPending) << "not even on its healthy GPU";
  sync({}, "NVML nvmlDeviceGetMemoryInfo failed: GPU is lost");  // still failing: no change
  EXPECT_FALSE(core().GetNode("n1")->unhealthy.empty());
  sync({}, "");
  EXPECT_EQ(core().GetNode("n1")->unhealthy, "");
  EXPECT_TRUE(core().GetNode("n1")->gpus.at(held).healthy);
  Schedule();
  EXPECT_EQ(Get(job.id).state, JobState::kScheduled) << "requeued, runs again";
  EXPECT_EQ(Get(other.id).state, JobState::kScheduled);
}

// A job that fails by itself on a healthy GPU of an unhealthy node still fails.
TEST_P(Scenario, AFailureOnAHealthyGpuOfAnUnhealthyNodeIsTheJobsOwn) {
  Register("n1", 2);
  Job job = Submit(Spec(1));
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(job.id))}));
  const int32_t held = Desired("n1").at(0).gpus.at(0);
  SyncRequest req;
  req.node = "n1";
  req.agent_epoch = epochs_["n1"];
  req.runs = {Exited(Get(job.id), 0, 3)};
  for (int32_t i = 0; i < 2; ++i) req.gpu_samples.push_back({i, 0, 0, i == held ? "" : "gone"});
  ASSERT_TRUE(*core().Report(Caller::Node("n1"), req, now()));
  Step();
  EXPECT_FALSE(core().GetNode("n1")->unhealthy.empty());
  EXPECT_EQ(Get(job.id).state, JobState::kFailed);
}

TEST_P(Scenario, TimeLimitStopsTheRunAndFailsTheJob) {
  Register("n1", 1);
  JobSpec spec = Spec(1);
  spec.time_limit_ms = 10 * kSecond;
  Job job = Submit(spec);
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(job.id))}));
  now() += 9 * kSecond;
  core().Tick(now());
  Step();
  EXPECT_FALSE(Get(job.id).CurrentRun()->stop_requested);
  now() += 2 * kSecond;
  core().Tick(now());
  Step();
  ASSERT_TRUE(Get(job.id).CurrentRun()->stop_requested);
  ASSERT_TRUE(*Report("n1", {Exited(Get(job.id), 0, -15)}));
  Job done = Get(job.id);
  EXPECT_EQ(done.state, JobState::kFailed);
  EXPECT_NE(done.CurrentRun()->reason.find("time limit"), std::string::npos);
}

TEST_P(Scenario, DrainWaitsForTheLastRun) {
  Register("n1", 2);
  Job job = Submit(Spec(1));
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(job.id))}));
  EXPECT_EQ(core().SetDrain(kAna, "n1", true, now()).status().code(), ErrorCode::kPermissionDenied);
  ASSERT_TRUE(core().SetDrain(kAdmin, "n1", true, now()).ok());
  Step();
  EXPECT_EQ(core().GetNode("n1")->state(), NodeState::kDraining);
  Job next = Submit(Spec(1));
  Schedule();
  EXPECT_EQ(Get(next.id).state, JobState::kPending) << "nothing new lands on a draining node";
  ASSERT_TRUE(*Report("n1", {Exited(Get(job.id), 0, 0)}));
  EXPECT_EQ(core().GetNode("n1")->state(), NodeState::kDrained);
  ASSERT_TRUE(core().SetDrain(kAdmin, "n1", false, now()).ok());
  Step();
  Schedule();
  EXPECT_EQ(Get(next.id).state, JobState::kScheduled);
}

// Liveness and drain are apart: a drained node that goes silent, is declared down and comes
// back (a sync, then its agent restarting and registering again) is still drained, and nothing
// lands on it until an admin undrains it. With the parameter set the head restarts at every step.
TEST_P(Scenario, ADrainSurvivesAnOutageAndTheAgentsReturn) {
  Register("n1", 1);
  ASSERT_TRUE(core().SetDrain(kAdmin, "n1", true, now()).ok());
  Step();
  ASSERT_EQ(core().GetNode("n1")->drain, Drain::kDrained);
  now() += 16 * kSecond;
  core().Tick(now());
  Step();
  EXPECT_EQ(core().GetNode("n1")->state(), NodeState::kUnreachable);
  EXPECT_EQ(core().GetNode("n1")->drain, Drain::kDrained);
  now() += 61 * kSecond;
  core().Tick(now());
  Step();
  EXPECT_EQ(core().GetNode("n1")->liveness, Liveness::kDown);
  ASSERT_TRUE(*Report("n1", {}));
  EXPECT_EQ(core().GetNode("n1")->liveness, Liveness::kAlive);
  EXPECT_EQ(core().GetNode("n1")->state(), NodeState::kDrained) << "heard from again, drained";
  Job job = Submit(Spec(1));
  Schedule();
  EXPECT_EQ(Get(job.id).state, JobState::kPending) << "nothing lands on a drained node";
  now() += 200 * kSecond;  // down again, then the agent restarts and registers anew
  core().Tick(now());
  Step();
  Register("n1", 1);
  EXPECT_EQ(core().GetNode("n1")->state(), NodeState::kDrained) << "re-registered, drained";
  Schedule();
  EXPECT_EQ(Get(job.id).state, JobState::kPending);
  ASSERT_TRUE(core().SetDrain(kAdmin, "n1", false, now()).ok());
  Step();
  Schedule();
  EXPECT_EQ(Get(job.id).state, JobState::kScheduled);
}

// The other way round: a node may be drained while its agent is silent, and comes back drained.
TEST_P(Scenario, ASilentNodeCanBeDrainedAndComesBackDrained) {
  Register("n1", 1);
  now() += 80 * kSecond;
  core().Tick(now());
  Step();
  ASSERT_EQ(core().GetNode("n1")->state(), NodeState::kDown);
  ASSERT_TRUE(core().SetDrain(kAdmin, "n1", true, now()).ok());
  Step();
  EXPECT_EQ(core().GetNode("n1")->drain, Drain::kDrained);
  EXPECT_EQ(core().GetNode("n1")->state(), NodeState::kDown) << "shown down while silent";
  Register("n1", 1);
  EXPECT_EQ(core().GetNode("n1")->state(), NodeState::kDrained);
  Job job = Submit(Spec(1));
  Schedule();
  EXPECT_EQ(Get(job.id).state, JobState::kPending);
}

// Why a job waits is a code programs act on (metrics, Slurm's reasons) beside the sentence:
// none before a pass, reserved for the first job blocked, no_fit for what no node can hold now.
TEST_P(Scenario, APendingJobsReasonIsACode) {
  Register("n1", 2);
  Register("n2", 4);
  ASSERT_TRUE(core().SetDrain(kAdmin, "n2", true, now()).ok());
  Step();
  Job huge = Submit(Spec(4));
  Job first = Submit(Spec(2));
  Job second = Submit(Spec(1));
  EXPECT_EQ(Get(second.id).pending_code, PendingCode::kNone);
  Schedule();
  core().Schedule(now());  // reasons are not durable: a recovered core learns them in a pass
  EXPECT_EQ(Get(first.id).state, JobState::kScheduled);
  EXPECT_EQ(Get(first.id).pending_code, PendingCode::kNone);
  EXPECT_EQ(Get(second.id).pending_code, PendingCode::kReserved) << Get(second.id).pending_reason;
  EXPECT_EQ(Get(huge.id).pending_code, PendingCode::kNoFit) << Get(huge.id).pending_reason;
  EXPECT_EQ(ToJson(Get(huge.id))["pending_code"], "no_fit");
}

TEST_P(Scenario, NodeLossRequeuesWithoutSpendingARestart) {
  Register("n1", 1);
  Job job = Submit(Spec(1));  // max_restarts 0: a loss is not the job's failure
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(job.id))}));
  now() += 16 * kSecond;
  core().Tick(now());
  Step();
  EXPECT_EQ(core().GetNode("n1")->state(), NodeState::kUnreachable);
  now() += 61 * kSecond;
  core().Tick(now());
  Step();
  EXPECT_EQ(core().GetNode("n1")->state(), NodeState::kDown);
  Job lost = Get(job.id);
  EXPECT_EQ(lost.state, JobState::kPending);
  EXPECT_EQ(lost.runs[0].state, RunState::kLost);
  Register("n2", 1);
  Schedule();
  Job again = Get(job.id);
  EXPECT_EQ(again.state, JobState::kScheduled);
  EXPECT_EQ(again.CurrentRun()->placement[0].node, "n2");
  // The lost node comes back: it is ready again and its stale report changes nothing.
  ASSERT_TRUE(*Report("n1", {Exited(lost, 0, -9)}));
  EXPECT_EQ(core().GetNode("n1")->state(), NodeState::kReady);
  EXPECT_EQ(Get(job.id).state, JobState::kScheduled);
}

TEST_P(Scenario, ARunItsAgentFencedIsLostAndRequeuedNotFailed) {
  Register("n1", 1);
  Register("n2", 1);
  Job job = Submit(Spec(1));  // max_restarts 0: still requeued, a fence is not its failure
  Schedule();
  Job placed = Get(job.id);
  std::string node = placed.CurrentRun()->placement[0].node;
  ASSERT_TRUE(*Report(node, {Running(placed)}));
  RunReport fenced = Exited(placed, 0, -15);
  fenced.fenced = true;
  ASSERT_TRUE(*Report(node, {fenced}));
  Job after = Get(job.id);
  EXPECT_EQ(after.state, JobState::kPending);
  EXPECT_EQ(after.runs[0].state, RunState::kLost);
  EXPECT_NE(after.runs[0].reason.find("fenced"), std::string::npos) << after.runs[0].reason;
  Schedule();
  EXPECT_EQ(Get(job.id).state, JobState::kScheduled);
  EXPECT_EQ(Get(job.id).runs.size(), 2u);
}

TEST_P(Scenario, AgentRestartKeepsItsRunsAndRefusesTheOldIncarnation) {
  uint64_t first = Register("n1", 1);
  Job job = Submit(Spec(1));
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(job.id))}));
  uint64_t second = Register("n1", 1);
  EXPECT_EQ(second, first + 1);
  EXPECT_EQ(Get(job.id).state, JobState::kRunning);
  EXPECT_FALSE(*Report("n1", {}, first)) << "the old incarnation must re-register";
  ASSERT_TRUE(*Report("n1", {Exited(Get(job.id), 0, 0)}, second));
  EXPECT_EQ(Get(job.id).state, JobState::kSucceeded);
}

TEST_P(Scenario, JobsWaitForNodesAndAreRefusedOnlyAgainstKnownOnes) {
  Job early = Submit(Spec(4));
  EXPECT_EQ(early.state, JobState::kPending) << "no node known yet: the job waits";
  Register("n1", 4);
  auto big = core().Submit(kAna, Spec(8), "", now());
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("never fit"), std::string::npos);
  Schedule();
  EXPECT_EQ(Get(early.id).state, JobState::kScheduled);
}

// Of two borrowers that ran as long, the one that just reported a checkpoint loses least and
// is the one preempted (corral checkpoint-done reaches the scheduler, live and on recovery).
TEST_P(Scenario, PreemptionPrefersTheVictimThatJustCheckpointed) {
  ASSERT_TRUE(core().SetQueue(kAdmin, {"a", 0, -1, 1.0}, now()).ok());
  ASSERT_TRUE(core().SetQueue(kAdmin, {"b", 1, -1, 1.0}, now()).ok());
  Step();
  Register("n1", 2);
  JobSpec borrow = Spec(1);
  borrow.queue = "a";
  borrow.preemptible = true;
  Job first = Submit(borrow);
  Job second = Submit(borrow);
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(first.id)), Running(Get(second.id))}));
  now() += 30 * kMinute;
  ASSERT_TRUE(core().ReportCheckpoint(kAna, first.id, now()).ok());
  Step();
  now() += kMinute;
  JobSpec owner = Spec(1);
  owner.queue = "b";
  Submit(owner, kBob);
  Schedule();
  EXPECT_TRUE(Get(first.id).CurrentRun()->stop_requested);
  EXPECT_FALSE(Get(second.id).CurrentRun()->stop_requested);
}

TEST_P(Scenario, MasterPortsAreUniqueAmongANodesLiveRuns) {
  Register("n1", 4);
  Job a = Submit(Spec(1));
  Job b = Submit(Spec(1));
  Schedule();
  int32_t pa = Get(a.id).CurrentRun()->master_port, pb = Get(b.id).CurrentRun()->master_port;
  EXPECT_NE(pa, pb);
  ASSERT_TRUE(*Report("n1", {Exited(Get(a.id), 0, 0)}));
  Job c = Submit(Spec(1));
  Schedule();
  EXPECT_EQ(Get(c.id).CurrentRun()->master_port, pa) << "a freed port is reused";
}

// A port something else on the node listens on (as its agent reported) is never handed out.
TEST_P(Scenario, MasterPortsAvoidPortsTheNodeReportsBusy) {
  RegisterRequest req;
  req.name = "n1";
  req.port_lo = 31000;
  req.port_hi = 31003;
  req.cpu_milli = 16000;
  req.memory_mb = 64000;
  req.gpus.push_back({0, "n1-gpu0", "Sim", 1000, 0, true});
  req.gpus.push_back({1, "n1-gpu1", "Sim", 1000, 0, true});
  auto r = core().Register(kJoin, req, "secret-n1", now());
  ASSERT_TRUE(r.ok());
  Step();
  Job a = Submit(Spec(1));
  Job b = Submit(Spec(1));
  // What a node reports is an observation, not state: a restarted head learns it again from
  // the next sync, so the report and the pass come together here.
  SyncRequest sync;
  sync.node = "n1";
  sync.agent_epoch = r->agent_epoch;
  sync.busy_ports = {31000, 31002};
  ASSERT_TRUE(*core().Report(Caller::Node("n1"), sync, now()));
  Schedule();
  EXPECT_EQ(Get(a.id).CurrentRun()->master_port, 31001);
  EXPECT_EQ(Get(b.id).CurrentRun()->master_port, 31003);
}

TEST_P(Scenario, ArrayElementsAreJobsAndAtMostPRunAtOnce) {
  Register("n1", 8);
  JobSpec spec = Spec(1);
  spec.array = "0-10:2%2";  // 0,2,4,6,8,10
  Job first = Submit(spec);
  ASSERT_EQ(first.array_id, first.id);
  std::vector<JobId> ids;
  for (const Job& j : core().ListJobs(kAna, {.array_id = first.id})) {
    ids.push_back(j.id);
    EXPECT_EQ(j.array_index, 2 * static_cast<int32_t>(ids.size() - 1));
  }
  ASSERT_EQ(ids.size(), 6u);
  EXPECT_EQ(ids.back(), first.id + 5);
  auto active = [&] {
    int n = 0;
    for (JobId id : ids)
      n += Get(id).state == JobState::kScheduled || Get(id).state == JobState::kRunning;
    return n;
  };
  Schedule();
  EXPECT_EQ(active(), 2);
  EXPECT_NE(Get(ids[3]).pending_reason.find("at most 2"), std::string::npos)
      << Get(ids[3]).pending_reason;
  EXPECT_EQ(Get(ids[3]).pending_code, PendingCode::kArrayLimit);
  auto orders = Desired("n1");
  ASSERT_EQ(orders.size(), 2u);
  EXPECT_EQ(orders[0].env.at("SLURM_ARRAY_JOB_ID"), std::to_string(first.id));
  EXPECT_EQ(orders[1].env.at("CORRAL_ARRAY_INDEX"), "2");
  ASSERT_TRUE(*Report("n1", {Exited(Get(ids[0]), 0, 0)}));
  Schedule();
  EXPECT_EQ(active(), 2) << "one ended, the next took its place";
  EXPECT_EQ(Get(ids[2]).state, JobState::kScheduled);
  // Cancelling the array's id cancels every element that has not ended.
  ASSERT_TRUE(core().Cancel(kAna, first.id, now()).ok());
  Step();
  EXPECT_EQ(Get(ids[0]).state, JobState::kSucceeded);
  EXPECT_EQ(Get(ids[5]).state, JobState::kCancelled);
  EXPECT_TRUE(Get(ids[1]).CurrentRun()->stop_requested);
  Schedule();
  EXPECT_EQ(active(), 2) << "nothing new starts after the cancel";
}

TEST_P(Scenario, DependenciesHoldJobsThenReleaseOrCancelThem) {
  Register("n1", 8);
  Job a = Submit(Spec(1));
  auto dep = [&](const std::string& text) {
    JobSpec s = Spec(1);
    s.dependencies = *ParseDependencies(text);
    return Submit(s);
  };
  Job ok = dep("afterok:" + std::to_string(a.id));
  Job notok = dep("afternotok:" + std::to_string(a.id));
  Job any = dep("afterany:" + std::to_string(a.id));
  EXPECT_EQ(core()
                .Submit(
                    kAna,
                    [&] {
                      JobSpec s = Spec(1);
                      s.dependencies = *ParseDependencies("afterok:999");
                      return s;
                    }(),
                    "", now())
                .status()
                .code(),
            ErrorCode::kInvalidArgument);
  Schedule();
  EXPECT_EQ(Get(a.id).state, JobState::kScheduled);
  for (const Job& j : {ok, notok, any}) {
    EXPECT_EQ(Get(j.id).state, JobState::kPending);
    EXPECT_NE(Get(j.id).pending_reason.find("waiting for dependency"), std::string::npos);
    EXPECT_EQ(Get(j.id).pending_code, PendingCode::kDependency);
  }
  ASSERT_TRUE(*Report("n1", {Exited(Get(a.id), 0, 0)}));
  EXPECT_EQ(Get(notok.id).state, JobState::kCancelled);
  EXPECT_NE(Get(notok.id).events.back().reason.find("can never be met"), std::string::npos);
  Schedule();
  EXPECT_EQ(Get(ok.id).state, JobState::kScheduled);
  EXPECT_EQ(Get(any.id).state, JobState::kScheduled);
}

// Retention (core_retire.cc): a job that ended over a day ago leaves memory in one change,
// only once the snapshot rows hold it as it ended; its tombstone still answers dependencies,
// and its runs' usage stays in the per-day sums fair share is rebuilt from.
TEST_P(Scenario, AJobThatEndedLongAgoIsRetiredAndItsTombstoneAnswersDependencies) {
  Register("n1", 2);
  Job good = Submit(Spec(2));
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(good.id))}));
  now() += kHour;
  ASSERT_TRUE(*Report("n1", {Exited(Get(good.id), 0, 0)}));
  Job bad = Submit(Spec(1));
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(bad.id))}));
  ASSERT_TRUE(*Report("n1", {Exited(Get(bad.id), 0, 3)}));
  ASSERT_EQ(Get(bad.id).state, JobState::kFailed);
  Job live = Submit(Spec(1));  // pending: never retired

  now() += 23 * kHour;  // good ended 23 h ago: kept
  core().Tick(now());
  Step();
  EXPECT_TRUE(core().state().jobs.count(good.id));
  now() += 2 * kHour;
  Retire();
  EXPECT_FALSE(core().state().jobs.count(good.id));
  EXPECT_FALSE(core().state().jobs.count(bad.id));
  EXPECT_TRUE(core().state().jobs.count(live.id));
  EXPECT_EQ(core().RetiredState(good.id), JobState::kSucceeded);
  EXPECT_EQ(core().RetiredState(bad.id), JobState::kFailed);
  EXPECT_EQ(core().GetJob(kAna, good.id).status().code(), ErrorCode::kNotFound);
  auto cancel = core().Cancel(kAna, good.id, now());
  EXPECT_EQ(cancel.status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(cancel.status().message().find("ended (succeeded) more than 1-00:00:00 ago"),
            std::string::npos)
      << cancel.status().message();
  int64_t gpu_ms = 0;
  for (const auto& [key, u] : core().state().retired_usage) {
    EXPECT_EQ(key.user, "ana");
    gpu_ms += u.gpu_ms;
  }
  EXPECT_EQ(gpu_ms, 2 * kHour) << "good held 2 GPUs for an hour, bad none for no time";

  auto dep = [&](const std::string& text) {
    JobSpec s = Spec(1);
    s.dependencies = *ParseDependencies(text);
    return core().Submit(kAna, s, "", now());
  };
  auto after_good = dep("afterok:" + std::to_string(good.id));
  auto after_bad = dep("afterok:" + std::to_string(bad.id));
  ASSERT_TRUE(after_good.ok() && after_bad.ok()) << "retired jobs are known dependencies";
  Step();
  EXPECT_EQ(Get(after_bad->id).state, JobState::kCancelled);
  EXPECT_NE(Get(after_bad->id).events.back().reason.find("did not succeed"), std::string::npos);
  EXPECT_EQ(Get(after_good->id).state, JobState::kPending);
  EXPECT_EQ(Get(after_good->id).pending_reason.find("waiting for dependency"), std::string::npos)
      << Get(after_good->id).pending_reason;
  h_.ExpectReplayEqualsLive();
}

// An array leaves memory whole, once its last element has ended long enough ago; its id's
// tombstone answers for all of it.
TEST_P(Scenario, AnArrayIsRetiredWholeOnceItsLastElementEndedLongAgo) {
  Register("n1", 1);
  JobSpec arr = Spec(1);
  arr.array = "0-1";
  Job first = Submit(arr);
  JobId second = first.id + 1;
  Schedule();  // one GPU: the first element runs, the second waits
  ASSERT_TRUE(*Report("n1", {Running(Get(first.id))}));
  ASSERT_TRUE(*Report("n1", {Exited(Get(first.id), 0, 0)}));
  now() += 2 * kDay;
  Retire();
  EXPECT_TRUE(core().state().jobs.count(first.id)) << "its other element has not ended";
  ASSERT_TRUE(core().Cancel(kAna, second, now(), /*element_only=*/true).ok());
  Step();
  now() += 2 * kDay;
  Retire();
  EXPECT_FALSE(core().state().jobs.count(first.id));
  EXPECT_FALSE(core().state().jobs.count(second));
  EXPECT_EQ(core().RetiredState(first.id), JobState::kFailed) << "one element was cancelled";
  EXPECT_EQ(core().RetiredState(second), JobState::kCancelled);
  JobSpec after = Spec(1);
  after.dependencies = *ParseDependencies("afterok:" + std::to_string(first.id));
  Job never = Submit(after);
  EXPECT_EQ(Get(never.id).state, JobState::kCancelled);
  after.dependencies = *ParseDependencies("afternotok:" + std::to_string(first.id));
  Job next = Submit(after);
  EXPECT_EQ(Get(next.id).state, JobState::kPending);
  EXPECT_EQ(Get(next.id).pending_reason.find("dependency"), std::string::npos)
      << Get(next.id).pending_reason;
}

TEST_P(Scenario, AfterOkOnAnArrayWaitsForEveryElementAndSingletonForItsNamesakes) {
  Register("n1", 8);
  JobSpec arr = Spec(1);
  arr.array = "0-2";
  Job first = Submit(arr);
  JobSpec after = Spec(1);
  after.dependencies = *ParseDependencies("afterok:" + std::to_string(first.id));
  Job next = Submit(after);
  JobSpec single = Spec(1);
  single.name = "nightly";
  single.dependencies = *ParseDependencies("singleton");
  Job s1 = Submit(single);
  Job s2 = Submit(single);
  Schedule();
  EXPECT_EQ(Get(s1.id).state, JobState::kScheduled);
  EXPECT_EQ(Get(s2.id).state, JobState::kPending) << "a namesake has not ended";
  for (JobId id = first.id; id < first.id + 3; ++id) {
    EXPECT_EQ(Get(next.id).state, JobState::kPending);
    ASSERT_TRUE(*Report("n1", {Exited(Get(id), 0, 0)}));
    Schedule();
  }
  EXPECT_EQ(Get(next.id).state, JobState::kScheduled);
  ASSERT_TRUE(*Report("n1", {Exited(Get(s1.id), 0, 1)}));
  Schedule();
  EXPECT_EQ(Get(s2.id).state, JobState::kScheduled) << "singleton waits for the end, not success";
}

// An agent that refuses to start a replica (its owner has no account on the node, a root job)
// says why; the job's reason carries it, the gang is stopped, and orders name the owner.
TEST_P(Scenario, ARefusedStartEndsTheRunWithTheAgentsReason) {
  Register("n1", 1);
  Register("n2", 1);
  JobSpec spec = Spec(1, 2);
  Job job = Submit(spec);
  Schedule();
  Job placed = Get(job.id);
  ASSERT_EQ(placed.state, JobState::kScheduled);
  const std::string n0 = placed.CurrentRun()->placement[0].node,
                    n1 = placed.CurrentRun()->placement[1].node;
  ASSERT_EQ(Desired(n0).size(), 1u);
  EXPECT_EQ(Desired(n0)[0].user, "ana");
  ASSERT_TRUE(*Report(n0, {Running(placed, 0)}));
  RunReport refused = Exited(placed, 1, 127);
  refused.error = "user \"ana\" does not exist on node " + n1;
  ASSERT_TRUE(*Report(n1, {refused}));
  ASSERT_EQ(Desired(n0).size(), 1u);
  EXPECT_TRUE(Desired(n0)[0].stop) << "the rest of the gang is stopped";
  ASSERT_TRUE(*Report(n0, {Exited(placed, 0, -15)}));
  Job ended = Get(job.id);
  EXPECT_EQ(ended.state, JobState::kFailed);
  EXPECT_EQ(ended.CurrentRun()->reason,
            "cannot start replica 1 on node " + n1 + ": user \"ana\" does not exist on node " + n1);
}

TEST(DesiredLog, TellsTheDistinctJobsChangedSinceARecentVersionOnly) {
  DesiredLog log(5ull << 32);
  const uint64_t v0 = log.version();
  EXPECT_EQ(log.ChangedSince(v0), std::vector<JobId>{});
  log.Changed(9);
  log.Changed(4);
  log.Changed(9);
  EXPECT_EQ(log.ChangedSince(v0), (std::vector<JobId>{4, 9}));
  EXPECT_EQ(log.ChangedSince(v0 + 2), std::vector<JobId>{9});
  EXPECT_FALSE(log.ChangedSince(v0 - 1)) << "before the log began";
  EXPECT_FALSE(log.ChangedSince(log.version() + 1)) << "never given";
  // A long history keeps only its recent part: an agent far behind is answered in full.
  for (JobId j = 100; j < 400; ++j) log.Changed(j);
  EXPECT_FALSE(log.ChangedSince(v0));
  EXPECT_EQ(log.ChangedSince(log.version() - 3), (std::vector<JobId>{397, 398, 399}));
  auto recent = log.ChangedSince(log.version() - 64);
  ASSERT_TRUE(recent);
  EXPECT_EQ(recent->size(), 64u);
  log.ChangedAll();
  EXPECT_FALSE(log.ChangedSince(log.version() - 1));
  EXPECT_EQ(log.ChangedSince(log.version()), std::vector<JobId>{});
}

// An agent a version or two behind gets only the jobs whose orders changed since; a head that
// restarted (a new epoch) has no such history and answers in full.
TEST_P(Scenario, ASyncFromARecentVersionIsAnsweredWithWhatChangedOnly) {
  Register("n1", 8);
  std::vector<Job> jobs;
  for (int i = 0; i < 4; ++i) jobs.push_back(Submit(Spec(1)));
  Schedule();
  DesiredRuns agent;
  ASSERT_TRUE(agent.Apply(core().AnswerFor("n1", 0)));
  ASSERT_EQ(agent.Full().runs.size(), 4u);

  Job fifth = Submit(Spec(1));
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(jobs[0].id)), Exited(Get(jobs[1].id), 0, 0)}));
  SyncResponse answer = core().AnswerFor("n1", agent.version());
  EXPECT_EQ(answer.desired_version, core().NodeVersion("n1"));
  if (GetParam()) {
    EXPECT_FALSE(answer.delta) << "a version of an earlier leadership gets a full answer";
    EXPECT_EQ(answer.runs.size(), 4u);
  } else {
    ASSERT_TRUE(answer.delta);
    EXPECT_EQ(answer.base_version, agent.version());
    EXPECT_EQ(answer.changed_jobs, (std::vector<JobId>{jobs[1].id, fifth.id}));
    ASSERT_EQ(answer.runs.size(), 1u) << "the ended job has no order left, the new one has one";
    EXPECT_EQ(answer.runs[0].job_id, fifth.id);
  }
  ASSERT_TRUE(agent.Apply(answer));
  EXPECT_EQ(agent.Full().runs, core().DesiredFor("n1").runs);

  // Up to date: nothing changed, nothing listed.
  SyncResponse none = core().AnswerFor("n1", agent.version());
  EXPECT_EQ(none.delta, true);
  EXPECT_TRUE(none.changed_jobs.empty());
  EXPECT_TRUE(none.runs.empty());
  // A version the node's log does not hold (older than it, or never given) gets a full answer.
  EXPECT_FALSE(core().AnswerFor("n1", 1).delta);
  EXPECT_FALSE(core().AnswerFor("n1", core().NodeVersion("n1") + 1).delta);
  // The same node registering again (a restarted agent) starts its history over.
  uint64_t before = core().NodeVersion("n1");
  Register("n1", 8);
  EXPECT_FALSE(core().AnswerFor("n1", before).delta);
}

INSTANTIATE_TEST_SUITE_P(Head, Scenario, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "RestartEveryStep" : "Live"; });

// --- identity ---

TEST(CoreIdentity, OwnersComeFromTheCallerNotTheRequest) {
  CoreHarness h(Config());
  auto& core = h.core();
  auto own = core.Submit(kAna, JobSpec{.command = {"x"}}, "", h.now);
  ASSERT_TRUE(own.ok());
  EXPECT_EQ(own->owner, "ana");
  auto forged = core.Submit(kAna, JobSpec{.command = {"x"}}, "mallory", h.now);
  EXPECT_EQ(forged.status().code(), ErrorCode::kPermissionDenied);
  auto on_behalf = core.Submit(kAdmin, JobSpec{.command = {"x"}}, "mallory", h.now);
  ASSERT_TRUE(on_behalf.ok());
  EXPECT_EQ(on_behalf->owner, "mallory");
  EXPECT_EQ(core.Submit(Caller::Node("n1"), JobSpec{.command = {"x"}}, "", h.now).status().code(),
            ErrorCode::kPermissionDenied);
}

// A change logged by a head from before liveness and drain were apart reads as the one fact it
// set: an undrain clears the drain, an agent heard from again makes the node alive, and neither
// touches the other.
TEST(CoreChanges, AnOldNodeStateChangeReadsAsLivenessOrDrain) {
  auto decode = [](const char* state, const char* reason) {
    Json j{{"rev", 7},
           {"at", 1},
           {"type", "node_state_set"},
           {"by", ToJson(Caller::System())},
           {"node", "n1"},
           {"state", state},
           {"reason", reason}};
    auto c = ChangeFromJson(j);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c->what;
  };
  auto drained = decode("drained", "drained by root");
  ASSERT_TRUE(std::holds_alternative<NodeDrainSet>(drained));
  EXPECT_EQ(std::get<NodeDrainSet>(drained).drain, Drain::kDrained);
  auto undrained = decode("ready", "undrained by root");
  ASSERT_TRUE(std::holds_alternative<NodeDrainSet>(undrained));
  EXPECT_EQ(std::get<NodeDrainSet>(undrained).drain, Drain::kNone);
  auto heard = decode("ready", "agent heard from again");
  ASSERT_TRUE(std::holds_alternative<NodeLivenessSet>(heard));
  EXPECT_EQ(std::get<NodeLivenessSet>(heard).liveness, Liveness::kAlive);
  auto down = decode("down", "no sync for 1m");
  ASSERT_TRUE(std::holds_alternative<NodeLivenessSet>(down));
  EXPECT_EQ(std::get<NodeLivenessSet>(down).liveness, Liveness::kDown);
}

// An admin reserves a queue for some users and groups (a token's groups): others are refused
// with 403 naming the queue, in its sub-queues too, which may narrow the list but not widen it.
TEST(CoreIdentity, QueueAccessListsAdmitTheirUsersAndGroupsAndBindSubQueues) {
  CoreHarness h(Config());
  auto& core = h.core();
  QueueConfig lab{.name = "lab", .allowed_users = {"ana"}, .allowed_groups = {"vision"}};
  ASSERT_TRUE(core.SetQueue(kAdmin, lab, h.now).ok());
  ASSERT_TRUE(core.SetQueue(kAdmin, QueueConfig{.name = "lab/big"}, h.now).ok());
  QueueConfig narrow{.name = "lab/ana-only", .allowed_users = {"ana"}};
  ASSERT_TRUE(core.SetQueue(kAdmin, narrow, h.now).ok());
  h.Commit();
  auto submit = [&](const Caller& by, const std::string& queue) {  // the core of after a Crash
    return h.core().Submit(by, JobSpec{.command = {"x"}, .queue = queue}, "", h.now).status();
  };
  Caller carol = Caller::User("carol");
  carol.groups = {"vision"};
  for (const char* queue : {"lab", "lab/big"}) {
    EXPECT_TRUE(submit(kAna, queue).ok()) << queue;
    EXPECT_TRUE(submit(carol, queue).ok()) << queue << ": a member of an allowed group";
    EXPECT_TRUE(submit(kAdmin, queue).ok()) << queue;
    Status bob = submit(kBob, queue);
    EXPECT_EQ(bob.code(), ErrorCode::kPermissionDenied) << queue;
    EXPECT_NE(bob.message().find("may not submit to queue '" + std::string(queue) + "'"),
              std::string::npos)
        << bob.message();
    EXPECT_NE(bob.message().find("queue 'lab' admits users [ana] and groups [vision]"),
              std::string::npos)
        << bob.message();
  }
  EXPECT_TRUE(submit(kAna, "lab/ana-only").ok());
  EXPECT_EQ(submit(carol, "lab/ana-only").code(), ErrorCode::kPermissionDenied);
  EXPECT_TRUE(submit(kBob, "default").ok()) << "a queue without a list admits everyone";
  // The lists survive a restart.
  h.Commit();
  h.Crash();
  EXPECT_EQ(submit(kBob, "lab/big").code(), ErrorCode::kPermissionDenied);
  EXPECT_EQ(h.core().state().queues.at("lab").allowed_groups, std::vector<std::string>{"vision"});
}

// What one user may queue: an array's elements and the jobs pending at once (over all queues)
// are capped, naming the field and the setting; an admin is not held to them.
TEST(CoreJobs, ArraySizeAndPendingJobsPerUserAreCapped) {
  CoreConfig config = Config();
  config.max_array_size = 100;
  config.max_pending_per_user = 150;
  CoreHarness h(config);
  auto submit = [&](const Caller& by, const std::string& array) {
    return h.core().Submit(by, JobSpec{.command = {"x"}, .array = array}, "", h.now).status();
  };
  Status big = submit(kAna, "0-100");
  EXPECT_EQ(big.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(big.message().find("field 'array': 101 elements"), std::string::npos) << big.message();
  EXPECT_NE(big.message().find("--max-array-size"), std::string::npos) << big.message();
  ASSERT_TRUE(submit(kAna, "0-99").ok());
  ASSERT_TRUE(h.core().SetQueue(kAdmin, QueueConfig{.name = "other"}, h.now).ok());
  ASSERT_TRUE(h.core().Submit(kAna, JobSpec{.command = {"x"}, .queue = "other"}, "", h.now).ok());
  Status full = submit(kAna, "0-49");  // 101 pending, in two queues
  EXPECT_EQ(full.code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(full.message().find("user 'ana' has 101 jobs pending"), std::string::npos)
      << full.message();
  EXPECT_TRUE(submit(kAna, "0-48").ok()) << "up to the limit";
  EXPECT_TRUE(submit(kBob, "0-99").ok()) << "each user has their own";
  EXPECT_TRUE(submit(kAdmin, "0-999").ok()) << "admins are not held to them";
  EXPECT_TRUE(h.core().Submit(kAdmin, JobSpec{.command = {"x"}}, "ana", h.now).ok());
}

// A huge array is cancelled a slice per call when the shell asks so: each call cancels at
// most that many live elements and says whether any are left.
TEST(CoreJobs, AnArraysCancelCanGoASliceAtATime) {
  CoreHarness h(Config());
  auto array = h.core().Submit(kAna, JobSpec{.command = {"x"}, .array = "0-4"}, "", h.now);
  ASSERT_TRUE(array.ok());
  bool more = false;
  int calls = 0;
  do {
    ASSERT_TRUE(h.core().Cancel(kAna, array->id, h.now, false, 2, &more).ok());
    ++calls;
  } while (more);
  EXPECT_EQ(calls, 3);
  for (JobId id = array->id; id < array->id + 5; ++id) {
    EXPECT_EQ(h.core().GetJob(kAna, id)->state, JobState::kCancelled) << id;
  }
  h.Commit();
  h.ExpectReplayEqualsLive();
}

TEST(CoreIdentity, ARetriedRequestIdGetsTheSameJobEvenAfterACrash) {
  CoreHarness h(Config());
  auto first = h.core().Submit(kAna, JobSpec{.command = {"x"}}, "", h.now, "req-1");
  ASSERT_TRUE(first.ok());
  h.Commit();
  uint64_t rev = h.core().revision();
  auto retry = h.core().Submit(kAna, JobSpec{.command = {"x"}}, "", h.now, "req-1");
  ASSERT_TRUE(retry.ok());
  EXPECT_EQ(retry->id, first->id);
  h.Commit();
  EXPECT_EQ(h.core().revision(), rev) << "a retry changes nothing";
  // Another owner's id, and another id, are other requests.
  auto bobs = h.core().Submit(kBob, JobSpec{.command = {"x"}}, "", h.now, "req-1");
  ASSERT_TRUE(bobs.ok());
  EXPECT_NE(bobs->id, first->id);
  h.Commit();
  h.Crash();  // the new leader knows the ids from the store
  auto after = h.core().Submit(kAna, JobSpec{.command = {"x"}}, "", h.now, "req-1");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->id, first->id);
  auto bad = h.core().Submit(kAna, JobSpec{.command = {"x"}}, "", h.now, "a b");
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("request_id"), std::string::npos);
}

TEST(CoreJobs, ListingCanLeaveOutJobsThatEndedBeforeAGivenTime) {
  CoreHarness h(Config());
  auto old = h.core().Submit(kAna, JobSpec{.command = {"x"}}, "", h.now);
  ASSERT_TRUE(old.ok());
  ASSERT_TRUE(h.core().Cancel(kAna, old->id, h.now).ok());
  h.now += kHour;
  auto live = h.core().Submit(kAna, JobSpec{.command = {"x"}}, "", h.now);
  ASSERT_TRUE(live.ok());
  JobFilter recent;
  recent.ended_since = h.now - kMinute;
  auto listed = h.core().ListJobs(kAna, recent);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].id, live->id);
  EXPECT_EQ(h.core().ListJobs(kAna, {}).size(), 2u);  // without the filter: every job
}

TEST(CoreIdentity, OnlyTheOwnerAndAdminsSeeAJobsEnvironmentAndOutput) {
  CoreHarness h(Config());
  auto& core = h.core();
  JobSpec spec{.command = {"x"}};
  spec.env = {{"WANDB_API_KEY", "secret"}};
  auto job = core.Submit(kAna, spec, "", h.now);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(core.GetJob(kAna, job->id)->spec.env.at("WANDB_API_KEY"), "secret");
  EXPECT_EQ(core.GetJob(kAdmin, job->id)->spec.env.at("WANDB_API_KEY"), "secret");
  auto seen = core.GetJob(kBob, job->id);
  ASSERT_TRUE(seen.ok()) << "every user sees every job, like squeue";
  EXPECT_TRUE(seen->spec.env.empty());
  EXPECT_EQ(seen->owner, "ana");
  for (const auto& j : core.ListJobs(kBob, {})) EXPECT_TRUE(j.spec.env.empty()) << j.id;
  EXPECT_TRUE(core.GetJobForLogs(kAna, job->id).ok());
  EXPECT_TRUE(core.GetJobForLogs(kAdmin, job->id).ok());
  auto denied = core.GetJobForLogs(kBob, job->id);
  EXPECT_EQ(denied.status().code(), ErrorCode::kPermissionDenied);
  EXPECT_NE(denied.status().message().find("owner (ana)"), std::string::npos);
}

TEST(CoreIdentity, TokensAuthenticateUntilRevokedOrExpired) {
  CoreHarness h(Config());
  auto& core = h.core();
  EXPECT_EQ(core.IssueToken(kAna, {"eve", Role::kAdmin, {}, 0}, "s0", h.now).status().code(),
            ErrorCode::kPermissionDenied);
  auto t = core.IssueToken(kAdmin, {"eve", Role::kUser, {}, kHour}, "s1", h.now);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->hash.size(), 64u);
  EXPECT_NE(t->hash, "s1") << "only the hash is kept";
  auto who = core.Authenticate("s1", h.now);
  ASSERT_TRUE(who.ok());
  EXPECT_EQ(who->name, "eve");
  EXPECT_EQ(core.Authenticate("s2", h.now).status().code(), ErrorCode::kUnauthenticated);
  EXPECT_EQ(core.Authenticate("s1", h.now + kHour).status().code(), ErrorCode::kUnauthenticated);
  h.Commit();
  h.Crash();  // credentials are durable
  ASSERT_TRUE(h.core().Authenticate("s1", h.now).ok());
  ASSERT_TRUE(h.core().RevokeToken(kAdmin, t->id, h.now).ok());
  EXPECT_EQ(h.core().Authenticate("s1", h.now).status().code(), ErrorCode::kUnauthenticated);
}

TEST(CoreIdentity, ANodeReportsOnlyOnItself) {
  CoreHarness h(Config());
  RegisterRequest req;
  req.name = "n1";
  ASSERT_TRUE(h.core().Register(kJoin, req, "node-secret", h.now).ok());
  EXPECT_EQ(h.core().Register(kAna, req, "x", h.now).status().code(), ErrorCode::kPermissionDenied);
  auto who = h.core().Authenticate("node-secret", h.now);
  ASSERT_TRUE(who.ok());
  EXPECT_EQ(who->kind, Caller::Kind::kNode);
  SyncRequest other;
  other.node = "n2";
  EXPECT_EQ(h.core().Report(*who, other, h.now).status().code(), ErrorCode::kPermissionDenied);
  // Re-registering replaces the node's credential.
  ASSERT_TRUE(h.core().Register(kJoin, req, "node-secret-2", h.now).ok());
  EXPECT_FALSE(h.core().Authenticate("node-secret", h.now).ok());
}

TEST(CoreQueues, ValidationIsTheCoresAndNamesTheField) {
  CoreHarness h(Config());
  auto bad = h.core().SetQueue(kAdmin, {"a", 4, 2, 1.0}, h.now);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("limit_gpus"), std::string::npos);
  EXPECT_FALSE(h.core().SetQueue(kAdmin, {"a//b", 0, -1, 1.0}, h.now).ok());
  Caller lead = Caller::User("lead", Role::kQueueAdmin);
  lead.queues = {"org"};
  EXPECT_TRUE(h.core().SetQueue(lead, {"org/team", 1, -1, 1.0}, h.now).ok());
  EXPECT_EQ(h.core().SetQueue(lead, {"other", 1, -1, 1.0}, h.now).status().code(),
            ErrorCode::kPermissionDenied);
}

TEST_P(Scenario, UsageIsComputedFromTheCoresRuns) {
  Register("n1", 2);
  TimeMs t0 = now();
  Job job = Submit(Spec(2));
  now() += 2 * kMinute;
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(job.id))}));
  now() += kHour;
  auto running = core().Usage(kBob, UsageBy::kUser, 2 * kHour, now());
  ASSERT_TRUE(running.ok());
  ASSERT_EQ(running->rows.size(), 1u);
  EXPECT_EQ(running->rows[0].key, "ana");
  EXPECT_DOUBLE_EQ(running->rows[0].gpu_seconds, 2 * 3600.0);  // counted up to now
  ASSERT_TRUE(*Report("n1", {Exited(Get(job.id), 0, 0)}));
  now() += kHour;
  auto done = core().Usage(kBob, UsageBy::kQueue, 2 * kHour, now());
  ASSERT_TRUE(done.ok());
  ASSERT_EQ(done->rows.size(), 1u);
  EXPECT_EQ(done->rows[0].key, "default");
  EXPECT_DOUBLE_EQ(done->rows[0].gpu_seconds, 2 * 3600.0);  // no more after it ended
  EXPECT_DOUBLE_EQ(done->rows[0].AverageWaitSeconds(), 120.0);
  // A window that ends before the job was submitted holds nothing of it.
  auto before = core().Usage(kBob, UsageBy::kUser, kMinute, t0 - 1);
  ASSERT_TRUE(before.ok());
  EXPECT_TRUE(before->rows.empty());
  EXPECT_FALSE(core().Usage(kJoin, UsageBy::kUser, kHour, now()).ok());
}

TEST_P(Scenario, RunWhoseGpusStayIdleIsFlaggedUntilOneGetsBusy) {
  if (GetParam()) GTEST_SKIP() << "GPU samples are observations: a recovered head starts over";
  Register("n1", 4);
  Job job = Submit(Spec(2));
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(job.id))}));
  std::vector<int32_t> held = Desired("n1").at(0).gpus;
  // One sync with its GPUs at `mine` percent and the node's other GPUs at `others`.
  auto sample = [&](int32_t mine, int32_t others) {
    SyncRequest req;
    req.node = "n1";
    req.agent_epoch = epochs_["n1"];
    req.runs = {Running(Get(job.id))};
    for (int32_t i = 0; i < 4; ++i) {
      bool its = std::find(held.begin(), held.end(), i) != held.end();
      req.gpu_samples.push_back({i, its ? mine : others, 0});
    }
    ASSERT_TRUE(*core().Report(Caller::Node("n1"), req, now()));
    Step();
  };
  const DurationMs after = core().config().idle_after_ms;
  ASSERT_GT(after, 0);
  TimeMs t0 = now();
  sample(0, 90);  // its GPUs idle, the others busy: its clock starts
  now() += after - kSecond;
  sample(0, 90);
  core().Tick(now());
  EXPECT_EQ(Get(job.id).idle_since, 0) << "not idle for long enough yet";
  EXPECT_TRUE(core().idle_runs().empty());
  now() += 2 * kSecond;
  core().Tick(now());
  EXPECT_EQ(Get(job.id).idle_since, t0);
  EXPECT_EQ(core().idle_runs().size(), 1u);
  // At the threshold is not under it: busy again, and the clock starts over.
  sample(core().config().idle_threshold_percent, 0);
  EXPECT_EQ(Get(job.id).idle_since, 0);
  TimeMs t1 = now();
  sample(0, 0);
  now() += after;
  sample(0, 0);  // still idle (and the node still heard from: liveness is checked, too)
  core().Tick(now());
  EXPECT_EQ(Get(job.id).idle_since, t1);
  // A run that ends is idle no more.
  ASSERT_TRUE(*Report("n1", {Exited(Get(job.id), 0, 0)}));
  core().Tick(now());
  EXPECT_EQ(Get(job.id).idle_since, 0);
  EXPECT_TRUE(core().idle_runs().empty());
}

// Queue lab stops idle runs: three runs on one node, all idle; only the preemptible one in
// lab (here in its sub-queue) is warned, then cancelled when the warning period is over.
class IdleStop : public Scenario {
 protected:
  std::vector<Job> jobs_;
  // One sync reporting every job running, with all of the node's GPUs at `percent`.
  void Sample(int32_t percent) {
    SyncRequest req;
    req.node = "n1";
    req.agent_epoch = epochs_["n1"];
    for (const Job& j : jobs_) req.runs.push_back(Running(Get(j.id)));
    for (int32_t i = 0; i < 4; ++i) req.gpu_samples.push_back({i, percent, 0});
    ASSERT_TRUE(*core().Report(Caller::Node("n1"), req, now()));
    core().Tick(now());
    Step();
  }
  Job Add(const std::string& queue, bool preemptible) {
    JobSpec spec = Spec(1);
    spec.queue = queue;
    spec.preemptible = preemptible;
    jobs_.push_back(Submit(spec));
    return jobs_.back();
  }
  int Warnings(JobId id) {
    int n = 0;
    for (const auto& e : Get(id).events) n += e.what == "idle warning";
    return n;
  }
  bool StopRequested(JobId id) { return Get(id).CurrentRun()->stop_requested; }
};

TEST_P(IdleStop, APreemptibleIdleRunIsWarnedThenCancelled) {
  if (GetParam()) GTEST_SKIP() << "GPU samples are observations: a recovered head starts over";
  Register("n1", 4);
  Job target = Add("lab/vision", true);
  Job kept = Add("lab", false);          // not preemptible: flagged idle, never stopped
  Job elsewhere = Add("default", true);  // its queue does not stop idle runs
  Schedule();
  ASSERT_TRUE(
      *Report("n1", {Running(Get(target.id)), Running(Get(kept.id)), Running(Get(elsewhere.id))}));
  const DurationMs after = core().config().idle_after_ms;
  const DurationMs warning = core().config().idle_stop_warning_ms;
  Sample(0);
  now() += after - kSecond;
  Sample(0);
  EXPECT_EQ(Warnings(target.id), 0) << "not idle long enough to be flagged";
  now() += 2 * kSecond;
  Sample(0);
  ASSERT_EQ(core().idle_runs().size(), 3u);
  EXPECT_EQ(Warnings(target.id), 1);
  EXPECT_NE(Get(target.id).events.back().reason.find("stopped in 0:10:00"), std::string::npos)
      << Get(target.id).events.back().reason;
  EXPECT_EQ(Warnings(kept.id), 0);
  EXPECT_EQ(Warnings(elsewhere.id), 0);
  now() += warning - kSecond;
  Sample(0);
  EXPECT_EQ(Warnings(target.id), 1) << "warned once";
  EXPECT_FALSE(StopRequested(target.id)) << "not before the warning period is over";
  now() += 2 * kSecond;
  Sample(0);
  ASSERT_TRUE(StopRequested(target.id));
  EXPECT_EQ(Get(target.id).CurrentRun()->reason.rfind("cancelled: its GPUs stayed under 1% use", 0),
            0u)
      << Get(target.id).CurrentRun()->reason;
  EXPECT_FALSE(StopRequested(kept.id));
  EXPECT_FALSE(StopRequested(elsewhere.id));
  jobs_ = {kept, elsewhere};
  ASSERT_TRUE(*Report(
      "n1", {Exited(Get(target.id), 0, -15), Running(Get(kept.id)), Running(Get(elsewhere.id))}));
  EXPECT_EQ(Get(target.id).state, JobState::kCancelled) << "not requeued to idle again";
  EXPECT_EQ(Get(kept.id).state, JobState::kRunning);
}

TEST_P(IdleStop, AWarnedRunThatUsesItsGpusAgainIsNotStopped) {
  if (GetParam()) GTEST_SKIP() << "GPU samples are observations: a recovered head starts over";
  Register("n1", 4);
  Job target = Add("lab", true);
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(target.id))}));
  const DurationMs after = core().config().idle_after_ms;
  const DurationMs warning = core().config().idle_stop_warning_ms;
  Sample(0);
  now() += after;
  Sample(0);
  ASSERT_EQ(Warnings(target.id), 1);
  Sample(50);  // used again: forgiven, and its idle clock starts over
  now() += warning;
  Sample(0);
  EXPECT_FALSE(StopRequested(target.id));
  EXPECT_EQ(Warnings(target.id), 1);
  now() += after;
  Sample(0);
  EXPECT_EQ(Warnings(target.id), 2) << "idle again long enough: a new warning";
  EXPECT_FALSE(StopRequested(target.id));
}

INSTANTIATE_TEST_SUITE_P(Head, IdleStop, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "RestartEveryStep" : "Live"; });

}  // namespace
}  // namespace corral::head
