// The head's core and its nodes: lost replicas, GPU health, time limits, drain and liveness,
// agents' incarnations, master ports; arrays, dependencies and retirement.
#include "head/core_scenario.h"

namespace corral::head::core_test {
namespace {

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
  now() += 10 * kSecond - 1;
  core().Tick(now());
  Step();
  EXPECT_FALSE(Get(job.id).CurrentRun()->stop_requested);
  now() += 1;  // exactly its limit
  core().Tick(now());
  Step();
  ASSERT_TRUE(Get(job.id).CurrentRun()->stop_requested);
  ASSERT_TRUE(*Report("n1", {Exited(Get(job.id), 0, -15)}));
  Job done = Get(job.id);
  EXPECT_EQ(done.state, JobState::kFailed);
  EXPECT_NE(done.CurrentRun()->reason.find("time limit"), std::string::npos);
}

// The preemption handshake: a checkpoint reported once the stop was asked for ends the grace
// (the node is told to stop the run at once); one reported before the stop does not.
TEST_P(Scenario, ACheckpointDuringTheGraceEndsIt) {
  Register("n1", 1);
  JobSpec spec = Spec(1);
  spec.grace_ms = 5 * kMinute;
  Job job = Submit(spec);
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(job.id))}));
  ASSERT_TRUE(core().ReportCheckpoint(kAna, job.id, now()).ok());
  Step();
  now() += kSecond;
  ASSERT_TRUE(core().Requeue(kAna, job.id, now()).ok());
  Step();
  std::vector<RunOrder> orders = Desired("n1");
  ASSERT_EQ(orders.size(), 1u);
  EXPECT_TRUE(orders[0].stop);
  EXPECT_EQ(orders[0].grace_ms, 5 * kMinute) << "a checkpoint before the stop ends no grace";
  uint64_t version = core().NodeVersion("n1");
  now() += kSecond;
  ASSERT_TRUE(core().ReportCheckpoint(kAna, job.id, now()).ok());
  Step();
  EXPECT_GT(core().NodeVersion("n1"), version) << "the node must hear of it";
  orders = Desired("n1");
  ASSERT_EQ(orders.size(), 1u);
  EXPECT_TRUE(orders[0].stop);
  EXPECT_EQ(orders[0].grace_ms, 0);
  ASSERT_TRUE(*Report("n1", {Exited(Get(job.id), 0, -9)}));
  EXPECT_EQ(Get(job.id).state, JobState::kPending) << "requeued, not failed";
}

TEST_P(Scenario, DrainWaitsForTheLastRun) {
  Register("n1", 2);
  Job job = Submit(Spec(1));
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(job.id))}));
  EXPECT_EQ(core().SetDrain(kAna, "n1", true, now()).status().code(), ErrorCode::kPermissionDenied);
  ASSERT_TRUE(core().SetDrain(kAdmin, "n1", true, now(), "fan failing").ok());
  Step();
  EXPECT_EQ(core().GetNode("n1")->state(), NodeState::kDraining);
  Job next = Submit(Spec(1));
  Schedule();
  EXPECT_EQ(Get(next.id).state, JobState::kPending) << "nothing new lands on a draining node";
  ASSERT_TRUE(*Report("n1", {Exited(Get(job.id), 0, 0)}));
  EXPECT_EQ(core().GetNode("n1")->state(), NodeState::kDrained);
  // The operator's reason stays with the drain, once drained too, and goes with it.
  EXPECT_EQ(core().GetNode("n1")->drain_reason, "drained by root: fan failing");
  ASSERT_TRUE(core().SetDrain(kAdmin, "n1", false, now()).ok());
  Step();
  EXPECT_EQ(core().GetNode("n1")->drain_reason, "");
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

}  // namespace
}  // namespace corral::head::core_test
