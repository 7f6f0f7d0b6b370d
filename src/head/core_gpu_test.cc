// GPU health in the head core (DESIGN §9): each row of the Xid policy table, per-GPU drains by
// the health checks and by an operator, and what each does to the runs on that GPU.
#include "head/core_scenario.h"

namespace corral::head::core_test {
namespace {

// One health check of one GPU as the agent reports it.
GpuSample Check(int32_t gpu, uint64_t check, GpuHealth health, std::string reason = "",
                std::vector<int32_t> xids = {}) {
  GpuSample s;
  s.index = gpu;
  s.check = check;
  s.health = health;
  s.health_reason = std::move(reason);
  s.xids = std::move(xids);
  return s;
}

class GpuHealthScenario : public Scenario {
 protected:
  // A sync from `node` with its runs and these GPUs' checks.
  void Sync(const std::string& node, std::vector<RunReport> runs, std::vector<GpuSample> gpus) {
    SyncRequest req;
    req.node = node;
    req.agent_epoch = epochs_[node];
    req.runs = std::move(runs);
    req.gpu_samples = std::move(gpus);
    ASSERT_TRUE(*core().Report(Caller::Node(node), req, now()));
    Step();
  }
  std::map<int32_t, GpuDrain> Drains(const std::string& node) {
    return core().GetNode(node)->gpu_drains;
  }
};

// Critical (Xid 79): the GPU is drained by the health checks, the run on it is stopped and
// requeued without spending a restart, its events name the GPU and the Xid; the requeued run
// lands on the node's other GPU, which stays schedulable.
TEST_P(GpuHealthScenario, ACriticalXidDrainsTheGpuAndRequeuesItsRunOnAnother) {
  Register("n1", 2);
  Job job = Submit(Spec(1));  // max_restarts 0: a requeue must not spend one
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(job.id))}));
  const int32_t bad = Desired("n1").at(0).gpus.at(0);
  Sync("n1", {Running(Get(job.id))},
       {Check(bad, 1, GpuHealth::kCritical, "Xid 79 (fallen off the bus)", {79}),
        Check(1 - bad, 1, GpuHealth::kOk)});
  auto drains = Drains("n1");
  ASSERT_EQ(drains.size(), 1u);
  EXPECT_EQ(drains.at(bad).source, DrainSource::kHealth);
  EXPECT_NE(drains.at(bad).reason.find("Xid 79"), std::string::npos) << drains.at(bad).reason;
  EXPECT_EQ(core().GetNode("n1")->state(), NodeState::kReady) << "the node is not drained";
  const Job stopping = Get(job.id);
  const corral::Run* run = stopping.CurrentRun();
  ASSERT_TRUE(run->stop_requested);
  EXPECT_NE(run->reason.find("GPU " + std::to_string(bad) + " of node n1"), std::string::npos)
      << run->reason;
  EXPECT_NE(run->reason.find("Xid 79"), std::string::npos) << run->reason;
  ASSERT_TRUE(*Report("n1", {Exited(Get(job.id), 0, -15)}));
  Job requeued = Get(job.id);
  EXPECT_EQ(requeued.state, JobState::kPending);
  EXPECT_EQ(requeued.runs.at(0).state, RunState::kPreempted) << "not its failure";
  bool named = false;
  for (const auto& e : requeued.events) named |= e.reason.find("Xid 79") != std::string::npos;
  EXPECT_TRUE(named) << "an event names the Xid";
  Schedule();
  ASSERT_EQ(Get(job.id).state, JobState::kScheduled);
  EXPECT_EQ(Get(job.id).CurrentRun()->placement.at(0).gpus, std::vector<int32_t>{1 - bad});
  // The drained GPU takes nothing new while the other is busy.
  Job more = Submit(Spec(1));
  Schedule();
  EXPECT_EQ(Get(more.id).state, JobState::kPending);
}

// A gang with one replica on a GPU that turns critical: the whole run stops (every replica
// gets its checkpoint signal) and is requeued, no restart spent; it restarts off the drained
// GPU with the same checkpoint directory, so it resumes from its last checkpoint.
TEST_P(GpuHealthScenario, ACriticalGpuRequeuesTheWholeGangWhichRestartsElsewhere) {
  Register("n1", 1);
  Register("n2", 1);
  Register("n3", 1);
  Job gang = Submit(Spec(1, 2));
  Schedule();
  const Job placed = Get(gang.id);
  ASSERT_EQ(placed.state, JobState::kScheduled);
  const std::string bad = placed.CurrentRun()->placement.at(0).node;
  const std::string other = placed.CurrentRun()->placement.at(1).node;
  ASSERT_TRUE(*Report(bad, {Running(placed, 0)}));
  ASSERT_TRUE(*Report(other, {Running(placed, 1)}));
  const std::string dir = Desired(bad).at(0).layout.checkpoint_dir;
  Sync(bad, {Running(placed, 0)},
       {Check(0, 1, GpuHealth::kCritical, "Xid 48 (double-bit ECC error)", {48})});
  for (const std::string& n : {bad, other}) {
    auto orders = Desired(n);
    ASSERT_EQ(orders.size(), 1u);
    EXPECT_TRUE(orders[0].stop) << "every replica of the gang stops, on " << n;
  }
  ASSERT_TRUE(*Report(bad, {Exited(Get(gang.id), 0, -15)}));
  ASSERT_TRUE(*Report(other, {Exited(Get(gang.id), 1, -15)}));
  EXPECT_EQ(Get(gang.id).state, JobState::kPending);
  EXPECT_EQ(Get(gang.id).runs.at(0).state, RunState::kPreempted);
  Schedule();
  const Job again = Get(gang.id);
  ASSERT_EQ(again.state, JobState::kScheduled);
  for (const ReplicaPlacement& p : again.CurrentRun()->placement) {
    EXPECT_NE(p.node, bad) << "not on the drained GPU";
  }
  const std::string node = again.CurrentRun()->placement.at(0).node;
  EXPECT_EQ(Desired(node).at(0).layout.checkpoint_dir, dir) << "resumes from its checkpoint";
}

// An application's Xid (13): its run is stopped and the job fails (even though its process
// exits 0 on the stop signal), naming the Xid; the GPU stays in service.
TEST_P(GpuHealthScenario, AnApplicationXidFailsTheJobAndTheGpuStays) {
  Register("n1", 1);
  Job job = Submit(Spec(1));
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(job.id))}));
  Sync("n1", {Running(Get(job.id))}, {Check(0, 1, GpuHealth::kOk, "", {13})});
  EXPECT_TRUE(Drains("n1").empty()) << "the application's fault";
  ASSERT_TRUE(Get(job.id).CurrentRun()->stop_requested);
  ASSERT_TRUE(*Report("n1", {Exited(Get(job.id), 0, 0)}));
  Job failed = Get(job.id);
  EXPECT_EQ(failed.state, JobState::kFailed);
  EXPECT_NE(failed.runs.at(0).reason.find("Xid 13 (graphics engine exception) on GPU 0"),
            std::string::npos)
      << failed.runs.at(0).reason;
  Job next = Submit(Spec(1));
  Schedule();
  EXPECT_EQ(Get(next.id).state, JobState::kScheduled) << "the GPU takes new runs";
}

// Double-bit ECC errors reported by the agent as a critical check drain the GPU too, and its
// Xid-less reason is what the drain says.
TEST_P(GpuHealthScenario, DoubleBitEccDrainsTheGpu) {
  Register("n1", 2);
  Sync("n1", {}, {Check(1, 1, GpuHealth::kCritical, "double-bit ECC errors 0 -> 2")});
  ASSERT_EQ(Drains("n1").count(1), 1u);
  EXPECT_EQ(Drains("n1").at(1).reason, "critical: double-bit ECC errors 0 -> 2");
  Job big = Submit(Spec(2));
  Job one = Submit(Spec(1));
  Schedule();
  EXPECT_EQ(Get(big.id).state, JobState::kPending) << "one of its two GPUs is drained";
  ASSERT_EQ(Get(one.id).state, JobState::kScheduled);
  EXPECT_EQ(Get(one.id).CurrentRun()->placement.at(0).gpus, std::vector<int32_t>{0});
}

// An operator's drain of one GPU: kept whatever the checks say, the node's other GPUs stay
// schedulable; bad input changes nothing; only an operator returns it.
TEST_P(GpuHealthScenario, AnAdminDrainIsKeptThroughCleanChecks) {
  Register("n1", 2);
  EXPECT_EQ(core().SetGpuDrain(kAna, "n1", 0, true, "", now()).status().code(),
            ErrorCode::kPermissionDenied);
  auto bad = core().SetGpuDrain(kAdmin, "n1", 7, true, "", now());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("field 'gpu'"), std::string::npos);
  EXPECT_TRUE(Drains("n1").empty());
  ASSERT_TRUE(core().SetGpuDrain(kAdmin, "n1", 0, true, "fan noise", now()).ok());
  Step();
  for (uint64_t c = 1; c <= 5; ++c) Sync("n1", {}, {Check(0, c, GpuHealth::kOk)});
  ASSERT_EQ(Drains("n1").count(0), 1u);
  EXPECT_EQ(Drains("n1").at(0).source, DrainSource::kAdmin);
  EXPECT_EQ(Drains("n1").at(0).reason, "drained by root: fan noise");
  Sync("n1", {}, {Check(0, 6, GpuHealth::kCritical, "Xid 48 (double-bit ECC error)", {48})});
  EXPECT_EQ(Drains("n1").at(0).source, DrainSource::kAdmin) << "a health finding keeps it admin";
  Job one = Submit(Spec(1));
  Schedule();
  ASSERT_EQ(Get(one.id).state, JobState::kScheduled);
  EXPECT_EQ(Get(one.id).CurrentRun()->placement.at(0).gpus, std::vector<int32_t>{1});
  ASSERT_TRUE(core().SetGpuDrain(kAdmin, "n1", 0, false, "", now()).ok());
  Step();
  EXPECT_TRUE(Drains("n1").empty());
}

INSTANTIATE_TEST_SUITE_P(Head, GpuHealthScenario, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "RestartEveryStep" : "Live"; });

// Clean checks are observations (a new head counts afresh), so these run live only.
class GpuHealthChecks : public GpuHealthScenario {};

// A health drain returns the GPU after K clean checks in a row: a warning restarts the count,
// and a check repeated (a sync retried) counts once.
TEST_P(GpuHealthChecks, KCleanChecksInARowReturnAHealthDrainedGpu) {
  ASSERT_EQ(core().config().gpu_clean_checks_to_return, 3);
  Register("n1", 1);
  Sync("n1", {}, {Check(0, 1, GpuHealth::kCritical, "Xid 94 (contained ECC error)", {94})});
  ASSERT_EQ(Drains("n1").count(0), 1u);
  Sync("n1", {}, {Check(0, 2, GpuHealth::kOk)});
  Sync("n1", {}, {Check(0, 3, GpuHealth::kWarn, "Xid 63")});
  Sync("n1", {}, {Check(0, 4, GpuHealth::kOk)});
  Sync("n1", {}, {Check(0, 5, GpuHealth::kOk)});
  Sync("n1", {}, {Check(0, 5, GpuHealth::kOk)});  // the same check again
  EXPECT_EQ(Drains("n1").count(0), 1u) << "two clean checks since the warning";
  Sync("n1", {}, {Check(0, 6, GpuHealth::kOk)});
  EXPECT_TRUE(Drains("n1").empty()) << "three in a row";
  Job one = Submit(Spec(1));
  Schedule();
  EXPECT_EQ(Get(one.id).state, JobState::kScheduled);
}

INSTANTIATE_TEST_SUITE_P(Head, GpuHealthChecks, ::testing::Values(false),
                         [](const auto&) { return "Live"; });

}  // namespace
}  // namespace corral::head::core_test
