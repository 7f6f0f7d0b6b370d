// Each index of the head's core (core_indexes.h) kept live by the changes of a job lifecycle
// equals the index rebuilt from the state, after every change: request ids, arrays, runs on
// two nodes, a requeue, a cancel while pending, ends, and retirement.
#include "head/core_indexes.h"

#include <gtest/gtest.h>

#include "head/core_scenario.h"

namespace corral::head::core_test {
namespace {

class Indexes : public Scenario {
 protected:
  // The lifecycle; returns nothing, leaves its changes in the harness.
  void Lifecycle() {
    Register("n1", 2);
    Register("n2", 2);
    JobSpec wide = Spec(2, 2);  // one replica on each node
    wide.max_restarts = 1;
    auto retried = core().Submit(kAna, wide, "", now(), "req-1");
    ASSERT_TRUE(retried.ok()) << retried.status().ToString();
    Step();
    auto again = core().Submit(kAna, wide, "", now(), "req-1");  // the same submission, retried
    ASSERT_TRUE(again.ok());
    ASSERT_EQ(again->id, retried->id);
    JobSpec array = Spec(1);
    array.array = "0-2";
    array.queue = "default";
    Job first = Submit(array, kBob);
    Job waiting = Submit(Spec(1), kBob);
    Schedule();
    Job wide_job = Get(retried->id);
    ASSERT_EQ(wide_job.state, JobState::kScheduled);
    ASSERT_TRUE(Report("n1", {Running(wide_job, 0)}).ok());
    ASSERT_TRUE(Report("n2", {Running(wide_job, 1)}).ok());
    // A replica fails: the job is requeued (a restart left) and runs again.
    ASSERT_TRUE(Report("n1", {Exited(wide_job, 0, 1)}).ok());
    ASSERT_TRUE(Report("n2", {Exited(wide_job, 1, -15)}).ok());
    ASSERT_TRUE(core().Cancel(kBob, waiting.id, now()).ok());
    Step();
    Schedule();
    for (const Job& j : core().ListJobs(kAdmin, {})) {
      if (j.state != JobState::kScheduled) continue;
      for (int32_t r = 0; r < j.spec.replicas; ++r) {
        const std::string& node = j.CurrentRun()->placement[r].node;
        ASSERT_TRUE(Report(node, {Exited(j, r, 0)}).ok());
      }
    }
    (void)first;
    Schedule();
    now() += 2 * kDay;
    Retire();
  }

  // An elastic job's lifecycle: it starts with two of three, grows to three, gives one to a
  // higher-priority job, and ends; then retirement.
  void ElasticLifecycle() {
    for (const char* n : {"n1", "n2", "n3"}) Register(n, 1);
    Job filler = Submit(Spec(1));
    Schedule();
    const std::string filler_node = Get(filler.id).CurrentRun()->placement[0].node;
    JobSpec spec = Spec(1, 3);
    spec.min_replicas = 1;
    spec.max_replicas_per_node = 1;
    Job e = Submit(spec);
    Schedule();
    ASSERT_EQ(Get(e.id).CurrentRun()->placement.size(), 2u);
    ASSERT_TRUE(Report(filler_node, {Exited(Get(filler.id), 0, 0)}).ok());
    Schedule();
    ASSERT_EQ(Get(e.id).CurrentRun()->LiveReplicas(), 3);
    JobSpec urgent = Spec(1);
    urgent.priority = 10;
    Job u = Submit(urgent, kAdmin);
    Schedule();
    const Job shrunk = Get(e.id);
    ASSERT_EQ(shrunk.CurrentRun()->departed.size(), 1u);
    const int32_t gone = shrunk.CurrentRun()->departed[0];
    ASSERT_TRUE(
        Report(shrunk.CurrentRun()->placement[gone].node, {Exited(shrunk, gone, -15)}).ok());
    Schedule();
    ASSERT_EQ(Get(u.id).state, JobState::kScheduled);
    for (const Job& j : core().ListJobs(kAdmin, {})) {
      if (j.state != JobState::kScheduled && j.state != JobState::kRunning) continue;
      const corral::Run& run = *j.CurrentRun();
      for (size_t r = 0; r < run.placement.size(); ++r) {
        if (run.exit_codes[r] != kNotExited) continue;
        ASSERT_TRUE(Report(run.placement[r].node, {Exited(j, static_cast<int>(r), 0)}).ok());
      }
    }
    ASSERT_EQ(Get(e.id).state, JobState::kSucceeded);
    now() += 2 * kDay;
    Retire();
  }

  // Replays the changes from an empty state into one index, comparing it with a rebuild of
  // the state after each; returns after how many changes the index held something.
  template <typename Index>
  int ExpectApplyEqualsRebuild() {
    ClusterState state;
    Index live;
    int held = 0;
    for (const Change& c : h_.changes()) {
      ApplyChange(state, c);
      live.Apply(state, c);
      Index rebuilt;
      rebuilt.Rebuild(state, c.at);
      EXPECT_TRUE(live == rebuilt)
          << "after change " << c.revision << " (" << ChangeName(c.what) << ")";
      if (::testing::Test::HasFailure()) return held;
      held += !(live == Index{});
    }
    return held;
  }
  bool Saw(bool (*pred)(const Change&)) {
    for (const Change& c : h_.changes())
      if (pred(c)) return true;
    return false;
  }
};

TEST_P(Indexes, TheLifecycleCoversEveryIndexedChange) {
  Lifecycle();
  EXPECT_TRUE(Saw([](const Change& c) { return std::holds_alternative<ArraySubmitted>(c.what); }));
  EXPECT_TRUE(Saw([](const Change& c) {
    const auto* e = std::get_if<RunEnded>(&c.what);
    return e && e->job_state == JobState::kPending;
  }));
  EXPECT_TRUE(Saw([](const Change& c) { return std::holds_alternative<JobEnded>(c.what); }));
  EXPECT_TRUE(Saw([](const Change& c) { return std::holds_alternative<JobsRetired>(c.what); }));
}

TEST_P(Indexes, ActiveRunsApplyEqualsRebuild) {
  Lifecycle();
  EXPECT_GT(ExpectApplyEqualsRebuild<ActiveRuns>(), 0);
}

TEST_P(Indexes, PendingCountsApplyEqualsRebuild) {
  Lifecycle();
  EXPECT_GT(ExpectApplyEqualsRebuild<PendingCounts>(), 0);
}

TEST_P(Indexes, RequestIdsApplyEqualsRebuild) {
  Lifecycle();
  EXPECT_GT(ExpectApplyEqualsRebuild<RequestIds>(), 0);
}

TEST_P(Indexes, ElasticSizesApplyEqualsRebuild) {
  ElasticLifecycle();
  EXPECT_TRUE(Saw([](const Change& c) { return std::holds_alternative<JobResized>(c.what); }));
  EXPECT_GT(ExpectApplyEqualsRebuild<ElasticSizes>(), 0);
  EXPECT_GT(ExpectApplyEqualsRebuild<ActiveRuns>(), 0);
  EXPECT_GT(ExpectApplyEqualsRebuild<CoreIndexes>(), 0);
}

TEST_P(Indexes, AllIndexesTogetherEqualTheCoresRebuild) {
  Lifecycle();
  EXPECT_GT(ExpectApplyEqualsRebuild<CoreIndexes>(), 0);
}

INSTANTIATE_TEST_SUITE_P(Head, Indexes, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Crashing" : "Straight"; });

}  // namespace
}  // namespace corral::head::core_test
