// The scheduler's model (scheduler_model.h) on its own: for each change it follows by itself
// (runs' ends and requeues, resizes, checkpoints, nodes, queues, reservations), a model rebuilt
// before the change and then applied it equals a model rebuilt after it; and a rebuild asks
// admission of each pending job, in id order, and holds only those admitted.
#include "head/scheduler_model.h"

#include <gtest/gtest.h>

#include <optional>

#include "head/core_scenario.h"

namespace corral::head::core_test {
namespace {

// Admission's part of the model (submissions, holds, updates, a pending job's end, the pass
// that places runs) is the core's: those changes are not the model's alone.
bool FollowedByTheModelAlone(const Change& c) {
  return !(std::holds_alternative<JobSubmitted>(c.what) ||
           std::holds_alternative<ArraySubmitted>(c.what) ||
           std::holds_alternative<RunPlaced>(c.what) || std::holds_alternative<JobEnded>(c.what) ||
           std::holds_alternative<JobHoldSet>(c.what) ||
           std::holds_alternative<JobUpdated>(c.what) || std::holds_alternative<QosSet>(c.what) ||
           std::holds_alternative<QosDeleted>(c.what) ||
           (std::holds_alternative<JobResized>(c.what) &&
            std::get<JobResized>(c.what).cause != ResizeCause::kNodeLost));
}

const auto kEveryone = [](const Job&) { return true; };

class SchedulerModelTest : public Scenario {
 protected:
  SchedulerModel Fresh() const {
    const CoreConfig c = Config();
    return SchedulerModel(c.scheduler, c.estimator, nullptr);
  }

  // Two nodes; a job that fails once and is requeued, then runs again and ends; a checkpoint;
  // a queue, a reservation, a drain and a removed node.
  void Lifecycle() {
    Register("n1", 2);
    Register("n2", 2);
    JobSpec retried = Spec(1);
    retried.max_restarts = 1;
    Job job = Submit(retried);
    Job other = Submit(Spec(1), kBob);
    Schedule();
    ASSERT_EQ(Get(job.id).state, JobState::kScheduled);
    const std::string node = Get(job.id).CurrentRun()->placement[0].node;
    ASSERT_TRUE(Report(node, {Running(Get(job.id))}).ok());
    ASSERT_TRUE(core().ReportCheckpoint(kAna, job.id, now()).ok());
    Step();
    ASSERT_TRUE(Report(node, {Exited(Get(job.id), 0, 1)}).ok());  // requeued
    ASSERT_EQ(Get(job.id).state, JobState::kPending);
    ASSERT_TRUE(core().SetQueue(kAdmin, QueueConfig{"lab", 0, 4, 1.0}, now()).ok());
    Step();
    NodeReservationSpec r{"maint", {"n2"}, now() + kHour, now() + 2 * kHour, true, {}, {}};
    ASSERT_TRUE(core().CreateReservation(kAdmin, r, now()).ok());
    Step();
    Schedule();
    for (const Job& j : core().ListJobs(kAdmin, {})) {
      if (j.state != JobState::kScheduled) continue;
      ASSERT_TRUE(Report(j.CurrentRun()->placement[0].node, {Exited(j, 0, 0)}).ok());
    }
    ASSERT_TRUE(core().SetDrain(kAdmin, "n2", true, now(), "disk").ok());
    Step();
    ASSERT_TRUE(core().RemoveNode(kAdmin, "n2", now()).ok());
    Step();
    (void)other;
  }
};

TEST_P(SchedulerModelTest, ApplyAfterARebuildEqualsARebuildAfterEachChangeItFollows) {
  Lifecycle();
  ClusterState state;
  int checked = 0;
  bool saw_requeue = false, saw_end = false, saw_node = false, saw_removal = false;
  for (const Change& c : h_.changes()) {
    if (!FollowedByTheModelAlone(c)) {
      ApplyChange(state, c);
      continue;
    }
    SchedulerModel live = Fresh();
    live.Rebuild(state, c.at, {}, kEveryone);
    ApplyChange(state, c);
    live.Apply(state, c, {});
    SchedulerModel rebuilt = Fresh();
    rebuilt.Rebuild(state, c.at, {}, kEveryone);
    EXPECT_EQ(live.scheduler().ModelSummary(), rebuilt.scheduler().ModelSummary())
        << "after change " << c.revision << " (" << ChangeName(c.what) << ")";
    ++checked;
    if (const auto* e = std::get_if<RunEnded>(&c.what)) {
      (e->job_state == JobState::kPending ? saw_requeue : saw_end) = true;
    }
    saw_node |= std::holds_alternative<NodeDrainSet>(c.what);
    saw_removal |= std::holds_alternative<NodeRemoved>(c.what);
  }
  EXPECT_GT(checked, 5);
  EXPECT_TRUE(saw_requeue);
  EXPECT_TRUE(saw_end);
  EXPECT_TRUE(saw_node);
  EXPECT_TRUE(saw_removal);
}

TEST_P(SchedulerModelTest, ARequeueIsPendingAgainAndAnEndTeachesTheEstimator) {
  Register("n1", 1);
  JobSpec spec = Spec(1);
  spec.max_restarts = 1;
  spec.name = "train";
  Job job = Submit(spec);
  Schedule();
  ASSERT_TRUE(Report("n1", {Running(Get(job.id))}).ok());
  SchedulerModel model = Fresh();
  model.Rebuild(core().state(), now(), {}, kEveryone);
  EXPECT_EQ(model.scheduler().GetStats().running, 1);
  EXPECT_EQ(model.scheduler().GetStats().pending, 0);
  ASSERT_TRUE(Report("n1", {Exited(Get(job.id), 0, 1)}).ok());
  std::optional<Change> requeue;
  for (const Change& c : h_.changes()) {
    if (std::holds_alternative<RunEnded>(c.what)) requeue = c;
  }
  ASSERT_TRUE(requeue.has_value());
  ASSERT_EQ(std::get<RunEnded>(requeue->what).job_state, JobState::kPending);
  EXPECT_TRUE(model.Apply(core().state(), *requeue, {}));  // room freed: a pass is wanted
  EXPECT_EQ(model.scheduler().GetStats().running, 0);
  EXPECT_EQ(model.scheduler().GetStats().pending, 1);
  EXPECT_EQ(model.estimator().observed(), 0);  // a requeue is not an end
  Schedule();
  ASSERT_TRUE(Report("n1", {Running(Get(job.id))}).ok());
  now() += kMinute;
  ASSERT_TRUE(Report("n1", {Exited(Get(job.id), 0, 0)}).ok());
  ASSERT_EQ(Get(job.id).state, JobState::kSucceeded);
  std::optional<Change> end;
  for (const Change& c : h_.changes()) {
    if (std::holds_alternative<RunEnded>(c.what)) end = c;
  }
  ASSERT_TRUE(end.has_value());
  ASSERT_NE(end->revision, requeue->revision);
  EXPECT_TRUE(model.Apply(core().state(), *end, {}));
  EXPECT_EQ(model.estimator().observed(), 1);
}

TEST_P(SchedulerModelTest, ARebuildAsksAdmissionInIdOrderAndQueuesOnlyWhatItAdmits) {
  Register("n1", 1);
  Job running = Submit(Spec(1));
  Schedule();
  Job a = Submit(Spec(1));
  Job held = Submit(Spec(1));
  Job c = Submit(Spec(1));
  std::vector<JobId> asked;
  SchedulerModel model = Fresh();
  model.Rebuild(core().state(), now(), {}, [&](const Job& j) {
    asked.push_back(j.id);
    return j.id != held.id;
  });
  EXPECT_EQ(asked, (std::vector<JobId>{a.id, held.id, c.id}));  // the running job is not asked
  const std::string summary = model.scheduler().ModelSummary();
  EXPECT_NE(summary.find("pending " + std::to_string(a.id) + " " + std::to_string(c.id) + "\n"),
            std::string::npos)
      << summary;
  EXPECT_EQ(model.scheduler().GetStats().running, 1);
  (void)running;
}

TEST_P(SchedulerModelTest, ANodesDatasetsAndDrainedGpusReachItsSchedulerNode) {
  Register("n1", 2);
  ASSERT_TRUE(core().SetGpuDrain(kAdmin, "n1", 1, true, "xid", now()).ok());
  Step();
  const Node& node = core().state().nodes.at("n1");
  sched::NodeInfo info = SchedulerNode(node, {{"n1", {"sha256:aa"}}, {"n2", {"sha256:bb"}}});
  EXPECT_EQ(info.datasets, (std::vector<std::string>{"sha256:aa"}));
  ASSERT_EQ(info.gpus.size(), 2u);
  EXPECT_TRUE(info.gpus[0].healthy);
  EXPECT_FALSE(info.gpus[1].healthy);
}

INSTANTIATE_TEST_SUITE_P(Head, SchedulerModelTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Crashing" : "Straight"; });

}  // namespace
}  // namespace corral::head::core_test
