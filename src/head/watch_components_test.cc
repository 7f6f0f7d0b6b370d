// The observation components on their own, over a hand-made cluster state: the sessions'
// clocks (session_clocks.h) and the GPU watch (gpu_watch.h). The core's tests cover the same
// rules through commands and syncs.
#include <gtest/gtest.h>

#include "head/gpu_watch.h"
#include "head/session_clocks.h"

namespace corral::head {
namespace {

constexpr TimeMs kT0 = 1'000'000;

// A running job with one replica per (node, GPUs).
Job& AddRunning(ClusterState& s, JobId id, std::vector<ReplicaPlacement> placement) {
  Job& j = s.jobs[id];
  j.id = id;
  j.owner = "ana";
  j.state = JobState::kRunning;
  j.spec.queue = "default";
  Run run;
  run.attempt = 1;
  run.state = RunState::kRunning;
  run.started_at = kT0;
  run.placement = std::move(placement);
  j.runs.push_back(run);
  return j;
}

ReplicaPlacement On(const std::string& node, std::vector<int32_t> gpus) {
  ReplicaPlacement p;
  p.node = node;
  p.gpus = std::move(gpus);
  return p;
}

GpuSample Sample(int32_t gpu, int32_t utilization) {
  GpuSample s;
  s.index = gpu;
  s.utilization_percent = utilization;
  return s;
}

TEST(GpuWatch, ARunIsIdleOnlyWhenEveryNodeHoldingItsGpusSaysSo) {
  ClusterState s;
  AddRunning(s, 1, {On("a", {0}), On("b", {0})});
  GpuWatch w;
  w.Observe("a", {Sample(0, 0)});
  w.ObserveUse(s, {1}, "a", 5, kT0);
  w.FlagIdle(s, 100, kT0 + 1000);
  EXPECT_TRUE(w.idle().empty());  // b has not said
  w.Observe("b", {Sample(0, 0)});
  w.ObserveUse(s, {1}, "b", 5, kT0 + 500);
  w.FlagIdle(s, 100, kT0 + 1000);
  ASSERT_EQ(w.idle().count(1), 1u);
  EXPECT_EQ(w.idle().at(1), kT0 + 500);  // since the latest node's first low sample
}

TEST(GpuWatch, AnUnmeasuredGpuCountsAsBusy) {
  ClusterState s;
  AddRunning(s, 1, {On("a", {0, 1})});
  GpuWatch w;
  w.Observe("a", {Sample(0, 0)});  // GPU 1 missing
  w.ObserveUse(s, {1}, "a", 5, kT0);
  w.FlagIdle(s, 0, kT0 + 1000);
  EXPECT_TRUE(w.idle().empty());
  EXPECT_FALSE(w.LowSince(RunId{1, 1}, "a").has_value());
}

TEST(GpuWatch, AnIdleRunOfAStoppingQueueIsWarnedThenStoppedAndForgivenWhenUsed) {
  ClusterState s;
  Job& j = AddRunning(s, 1, {On("a", {0})});
  j.spec.preemptible = true;
  GpuWatch w;
  w.Observe("a", {Sample(0, 0)});
  w.ObserveUse(s, {1}, "a", 5, kT0);
  w.FlagIdle(s, 100, kT0 + 200);
  EXPECT_TRUE(w.DueStops(s, {}, kT0 + 200).warn.empty());  // no queue stops idle runs
  GpuWatch::IdleStops due = w.DueStops(s, {"default"}, kT0 + 200);
  ASSERT_EQ(due.warn.size(), 1u);
  w.Warned(RunId{1, 1}, kT0 + 300);
  EXPECT_TRUE(w.DueStops(s, {"default"}, kT0 + 250).stop.empty());
  EXPECT_EQ(w.DueStops(s, {"default"}, kT0 + 300).stop.size(), 1u);
  // Used again: no longer idle, the warning is dropped and the clock starts over.
  w.Observe("a", {Sample(0, 90)});
  w.ObserveUse(s, {1}, "a", 5, kT0 + 310);
  w.FlagIdle(s, 100, kT0 + 310);
  due = w.DueStops(s, {"default"}, kT0 + 400);
  EXPECT_TRUE(due.warn.empty());
  EXPECT_TRUE(due.stop.empty());
}

TEST(SessionClocks, AClientNotHeardFromPastTheLimitEndsItsSessionButNotANotebook) {
  ClusterState s;
  Job& shell = AddRunning(s, 1, {On("a", {})});
  shell.spec.interactive = true;
  Job& notebook = AddRunning(s, 2, {On("a", {})});
  notebook.spec.interactive = true;
  notebook.spec.notebook = true;
  SessionClocks c;
  c.Rebuild(s, kT0);
  auto never_idle = [](const Job&, const corral::Run&) { return TimeMs{0}; };
  SessionClocks::Rules rules{/*inactive_limit_ms=*/1000, /*idle_threshold_percent=*/5};
  EXPECT_TRUE(c.Check(s, rules, never_idle, kT0 + 900).end.empty());
  c.Heard(1, /*typed=*/false, kT0 + 900);
  EXPECT_TRUE(c.Check(s, rules, never_idle, kT0 + 1500).end.empty());
  SessionClocks::Verdicts v = c.Check(s, rules, never_idle, kT0 + 2000);
  ASSERT_EQ(v.end.size(), 1u);
  EXPECT_EQ(v.end[0].first, 1u);
}

TEST(SessionClocks, ABusyKernelKeepsANotebookInUse) {
  SessionClocks c;
  c.Start(7, kT0);
  EXPECT_EQ(c.UserIdleSince(7, kT0), kT0);
  c.KernelActivity(7, /*idle_ms=*/0, kT0 + 100);
  EXPECT_EQ(c.UserIdleSince(7, kT0), 0);
  c.KernelActivity(7, /*idle_ms=*/50, kT0 + 200);
  EXPECT_EQ(c.UserIdleSince(7, kT0), kT0 + 150);
  c.Heard(7, /*typed=*/true, kT0 + 300);
  EXPECT_EQ(c.UserIdleSince(7, kT0), kT0 + 300);
}

TEST(SessionClocks, AnIdleSessionIsWarnedThenEndedAndAnEndedJobIsDropped) {
  ClusterState s;
  s.queues["default"].idle_timeout_ms = 100;
  Job& shell = AddRunning(s, 1, {On("a", {})});
  shell.spec.interactive = true;
  SessionClocks c;
  c.Rebuild(s, kT0);
  auto idle_since_start = [](const Job&, const corral::Run& r) { return r.started_at; };
  SessionClocks::Rules rules{0, 5};
  SessionClocks::Verdicts v = c.Check(s, rules, idle_since_start, kT0 + 200);
  ASSERT_EQ(v.warn.size(), 1u);
  c.Warned(RunId{1, 1}, kT0 + 300);
  EXPECT_EQ(c.StopAt(RunId{1, 1}), kT0 + 300);
  EXPECT_TRUE(c.Check(s, rules, idle_since_start, kT0 + 250).end.empty());
  EXPECT_EQ(c.Check(s, rules, idle_since_start, kT0 + 300).end.size(), 1u);
  s.jobs.at(1).state = JobState::kCancelled;
  EXPECT_TRUE(c.Check(s, rules, idle_since_start, kT0 + 400).end.empty());
  c.Heard(1, true, kT0 + 400);  // no longer a session: nothing to hear
  EXPECT_EQ(c.UserIdleSince(1, kT0), kT0);
}

}  // namespace
}  // namespace corral::head
