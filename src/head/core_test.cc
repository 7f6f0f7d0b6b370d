// The head's core driven step by step through a job's life: runs, preemption, cancels, gangs,
// batch jobs and their steps, holds and signals (the fixture: core_scenario.h).
#include "head/core_scenario.h"

namespace corral::head::core_test {
namespace {

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
  RunNamed("long", 2 * kHour);
  RunNamed("short", kMinute);
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

// A job keeps the run time it was predicted when it was queued (a live head predicts once, at
// submission or requeue); a restarted head predicts it from the history as it stood then, not
// from the jobs that ended since: the order is the same either way.
TEST_P(Scenario, AJobKeepsThePredictionItWasQueuedWithAcrossRestarts) {
  Register("n1", 1);
  RunNamed("p", 2 * kHour);
  RunNamed("q", 2 * kHour);
  JobSpec busy = Spec(1);
  busy.name = "q";
  Job blocker = Submit(busy);
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(blocker.id))}));
  JobSpec p = Spec(1), q = Spec(1);
  p.name = "p";
  q.name = "q";
  Job first = Submit(p);   // predicted 2 h
  Job second = Submit(q);  // predicted 2 h too: submission order decides
  now() += kMinute;
  // A "q" of a minute ends: "q" jobs queued from now on are predicted shorter, not this one.
  ASSERT_TRUE(*Report("n1", {Exited(Get(blocker.id), 0, 0)}));
  Schedule();
  EXPECT_EQ(Get(first.id).state, JobState::kScheduled);
  EXPECT_EQ(Get(second.id).state, JobState::kPending);
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

// A queue bounds the grace its jobs (and its sub-queues' jobs) may ask for: refused at submit,
// naming the field and the queue, and nothing is added.
TEST_P(Scenario, AQueueBoundsTheGraceAJobMayAskFor) {
  QueueConfig team{"org", 0, -1, 1.0};
  team.max_grace_ms = kMinute;
  ASSERT_TRUE(core().SetQueue(kAdmin, team, now()).ok());
  Step();
  JobSpec spec = Spec(0);
  spec.queue = "org/a";
  spec.grace_ms = 2 * kMinute;
  uint64_t rev = core().revision();
  Result<Job> refused = core().Submit(kAna, spec, "", now());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("field 'grace_period'"), std::string::npos)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find("queue 'org' max_grace"), std::string::npos);
  EXPECT_EQ(core().revision(), rev) << "a refused job changes nothing";
  spec.grace_ms = kMinute;
  EXPECT_TRUE(core().Submit(kAna, spec, "", now()).ok());
  Step();
  team.max_grace_ms = -1;
  EXPECT_EQ(core().SetQueue(kAdmin, team, now()).status().code(), ErrorCode::kInvalidArgument);
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
  ASSERT_FALSE(after.events.empty());
  const JobEvent& requeued = after.events.back();
  EXPECT_EQ(requeued.what, "requeued");
  std::string why = requeued.reason;  // says "preempted" once, not once per layer
  ASSERT_NE(why.find("preempted"), std::string::npos) << why;
  EXPECT_EQ(why.find("preempted", why.find("preempted") + 1), std::string::npos) << why;
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
  // Every replica carries the run's credential (the batch step and the holder alike).
  std::vector<RunOrder> d0 = Desired(n0), d1 = Desired(n1);
  ASSERT_EQ(d0.size(), 1u);
  ASSERT_EQ(d1.size(), 1u);
  ASSERT_TRUE(d0[0].env.count("CORRAL_STEP_TOKEN"));
  ASSERT_TRUE(d1[0].env.count("CORRAL_STEP_TOKEN"));
  EXPECT_EQ(d1[0].env.at("CORRAL_STEP_TOKEN"), d0[0].env.at("CORRAL_STEP_TOKEN"));
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

// Any job's tasks (not only a batch script's) hold a credential for their own job: it reports
// that job's checkpoints and may cancel it, is refused for another job, and ends with the run.
TEST_P(Scenario, EveryJobsTasksHoldACredentialForTheirOwnJobOnly) {
  Register("n1", 2);
  Job job = Submit(Spec(1));
  Job other = Submit(Spec(1));
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(job.id)), Running(Get(other.id))}));
  std::string token;
  for (const RunOrder& o : Desired("n1")) {
    ASSERT_TRUE(o.env.count("CORRAL_STEP_TOKEN")) << o.run_id;
    if (o.run_id == ToString(RunId{job.id, 1})) token = o.env.at("CORRAL_STEP_TOKEN");
  }
  ASSERT_FALSE(token.empty());
  auto self = core().Authenticate(token, now());
  ASSERT_TRUE(self.ok()) << self.status().ToString();
  EXPECT_TRUE(core().ReportCheckpoint(*self, job.id, now()).ok());
  EXPECT_EQ(core().ReportCheckpoint(*self, other.id, now()).status().code(),
            ErrorCode::kPermissionDenied);
  EXPECT_EQ(core().Cancel(*self, other.id, now()).status().code(), ErrorCode::kPermissionDenied);
  EXPECT_EQ(core().Submit(*self, Spec(1), "", now()).status().code(), ErrorCode::kPermissionDenied);
  Step();
  ASSERT_TRUE(core().Cancel(*self, job.id, now()).ok());
  Step();
  ASSERT_TRUE(*Report("n1", {Exited(Get(job.id), 0, -15), Running(Get(other.id))}));
  EXPECT_EQ(Get(job.id).state, JobState::kCancelled);
  EXPECT_FALSE(core().Authenticate(token, now()).ok()) << "it ends with the job";
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

INSTANTIATE_TEST_SUITE_P(Head, Scenario, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "RestartEveryStep" : "Live"; });

}  // namespace
}  // namespace corral::head::core_test
