// Unit tests of `corral whatif`'s parts: the history's JSON, the history as a trace (run times
// from the recorded runs), the changes, the rank correlation, the report and the command's
// errors. The live check (a real cluster's recording replayed) is tests/whatif_test.cc.
#include "sim/whatif.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "sim/whatif_command.h"

namespace corral::sim {
namespace {

constexpr TimeMs kT0 = 1'700'000'000'000;  // the recording's first submission

Node MakeNode(const std::string& name, int32_t gpus) {
  Node n;
  n.name = name;
  n.address = name + ":7071";
  n.cpu_milli = 16000;
  n.memory_mb = 65536;
  for (int32_t g = 0; g < gpus; ++g) {
    Gpu gpu;
    gpu.index = g;
    gpu.uuid = name + "-" + std::to_string(g);
    gpu.model = "A100";
    n.gpus.push_back(gpu);
  }
  return n;
}

QueueConfig MakeQueue(const std::string& name, int32_t quota) {
  QueueConfig q;
  q.name = name;
  q.quota_gpus = quota;
  return q;
}

Job MakeJob(JobId id, const std::string& owner, const std::string& queue, TimeMs submitted,
            int32_t gpus) {
  Job j;
  j.id = id;
  j.owner = owner;
  j.spec.queue = queue;
  j.spec.per_replica.gpu_milli = gpus * kGpuMilli;
  j.submitted_at = submitted;
  return j;
}

// A run placed at `from`, over at `to` (0: still running).
Run MakeRun(int32_t attempt, TimeMs from, TimeMs to, RunState state) {
  Run r;
  r.attempt = attempt;
  r.scheduled_at = from;
  r.started_at = from + 100;
  r.ended_at = to;
  r.state = state;
  return r;
}

head::History SmallHistory() {
  head::History h;
  h.from = kT0 - kHour;
  h.now = kT0 + 100 * kSecond;
  h.min_runtime_before_preempt_ms = 0;
  h.fair_share_half_life_ms = kHour;
  h.nodes = {MakeNode("n1", 4), MakeNode("n2", 4), MakeNode("n3", 2)};
  h.queues = {MakeQueue("a", 2), MakeQueue("b", 6)};
  // 1: ana's, preempted after 10 s, then ran 20 s to the end.
  Job j1 = MakeJob(1, "ana", "a", kT0, 1);
  j1.runs = {MakeRun(1, kT0, kT0 + 10 * kSecond, RunState::kPreempted),
             MakeRun(2, kT0 + 15 * kSecond, kT0 + 35 * kSecond, RunState::kSucceeded)};
  j1.state = JobState::kSucceeded;
  j1.ended_at = kT0 + 35 * kSecond;
  j1.spec.env = {{"SECRET", "x"}};
  j1.spec.dependencies = {Dependency{DependencyType::kAfterOk, {99}}};
  // 2: cancelled before it ran.
  Job j2 = MakeJob(2, "bob", "b", kT0 + kSecond, 1);
  j2.state = JobState::kCancelled;
  j2.ended_at = kT0 + 2 * kSecond;
  // 3: bob's gang of 2 x 1.5 GPUs, running for 5 s, limit 60 s.
  Job j3 = MakeJob(3, "bob", "b", kT0 + 2 * kSecond, 0);
  j3.spec.replicas = 2;
  j3.spec.per_replica.gpu_milli = 1500;
  j3.spec.time_limit_ms = 60 * kSecond;
  j3.state = JobState::kRunning;
  j3.runs = {MakeRun(1, h.now - 5 * kSecond, 0, RunState::kRunning)};
  // 4: ana's, still pending, no limit: her ended jobs' median (30 s).
  Job j4 = MakeJob(4, "ana", "a", kT0 + 3 * kSecond, 1);
  // 5: submitted before 4 (a recorded id does not say when).
  Job j5 = MakeJob(5, "cy", "c", kT0 + 2500, 1);
  j5.runs = {MakeRun(1, kT0 + 3 * kSecond, kT0 + 4 * kSecond, RunState::kFailed)};
  j5.state = JobState::kFailed;
  j5.ended_at = kT0 + 4 * kSecond;
  h.jobs = {j1, j2, j3, j4, j5};
  return h;
}

TEST(WhatIfHistoryTest, TheHistoryRoundTripsThroughItsJson) {
  head::History h = SmallHistory();
  Result<head::History> back = head::HistoryFromJson(head::ToJson(h));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->now, h.now);
  EXPECT_EQ(back->from, h.from);
  EXPECT_EQ(back->policy, h.policy);
  EXPECT_EQ(back->fair_share_half_life_ms, kHour);
  ASSERT_EQ(back->jobs.size(), 5u);
  EXPECT_EQ(back->jobs[0].runs.size(), 2u);
  EXPECT_EQ(back->jobs[2].spec.per_replica.gpu_milli, 1500);
  ASSERT_EQ(back->nodes.size(), 3u);
  EXPECT_EQ(back->nodes[2].gpus.size(), 2u);
  ASSERT_EQ(back->queues.size(), 2u);
  EXPECT_EQ(back->queues[1], h.queues[1]);
}

TEST(WhatIfHistoryTest, AMalformedHistoryIsAnErrorNamingTheField) {
  Json j = head::ToJson(SmallHistory());
  j["scheduler"]["policy"] = "random";
  Result<head::History> bad = head::HistoryFromJson(j);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("scheduler.policy"), std::string::npos)
      << bad.status().message();
  j = head::ToJson(SmallHistory());
  j["jobs"][1]["runs"] = "none";
  bad = head::HistoryFromJson(j);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("jobs[1]"), std::string::npos) << bad.status().message();
  bad = head::HistoryFromJson(Json{{"now", 1}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'from'"), std::string::npos) << bad.status().message();
}

TEST(WhatIfTraceTest, RecordedRunsBecomeRunTimesAndSubmissionsTraceTime) {
  Result<Replay> r = ReplayFromHistory(SmallHistory(), RunningAs::kSoFar);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->left_out, 1);  // job 2, cancelled before it ran
  EXPECT_EQ(r->origin, kT0);
  ASSERT_EQ(r->jobs.size(), 4u);
  // In submission order: 1 (0 s), 3 (2 s), 5 (2.5 s), 4 (3 s).
  std::vector<std::string> ids;
  for (const TraceJob& t : r->jobs) ids.push_back(t.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"1", "3", "5", "4"}));
  const TraceJob& j1 = r->jobs[0];
  EXPECT_EQ(j1.submit_ms, 0);
  EXPECT_EQ(j1.duration_ms, 30 * kSecond) << "both runs' held time";
  EXPECT_EQ(j1.user, "ana");
  EXPECT_EQ(j1.queue, "a");
  ASSERT_TRUE(j1.spec);
  EXPECT_TRUE(j1.spec->env.empty());
  EXPECT_TRUE(j1.spec->dependencies.empty()) << "recorded ids mean nothing in the replay";
  EXPECT_EQ(r->recorded[0].first_start, 0);
  EXPECT_EQ(r->recorded[0].end, 35 * kSecond);
  EXPECT_EQ(r->recorded[0].gpu_ms, 30 * kSecond);
  const TraceJob& j3 = r->jobs[1];
  EXPECT_EQ(j3.num_gpus, 4) << "2 replicas of 1.5 GPUs hold 2 whole GPUs each";
  EXPECT_EQ(j3.duration_ms, 5 * kSecond) << "a running job counts what it has run";
  EXPECT_EQ(r->recorded[1].end, -1);
  EXPECT_EQ(r->jobs[2].submit_ms, 2500);
  EXPECT_EQ(r->jobs[3].duration_ms, 30 * kSecond) << "never ran: its owner's ended median";
  EXPECT_EQ(r->recorded[3].first_start, -1);

  Result<Replay> limit = ReplayFromHistory(SmallHistory(), RunningAs::kLimit);
  ASSERT_TRUE(limit.ok());
  EXPECT_EQ(limit->jobs[1].duration_ms, 60 * kSecond) << "running: its time limit";

  // The cluster and the head's scheduler settings come along.
  EXPECT_EQ(r->config.cluster.registered.size(), 3u);
  EXPECT_EQ(r->config.queues.size(), 2u);
  EXPECT_EQ(r->config.min_runtime_before_preempt_ms, 0);
  EXPECT_EQ(r->config.fair_share_half_life_ms, kHour);
  EXPECT_EQ(r->config.policy, sched::OrderPolicy::kCorral);
}

TEST(WhatIfTraceTest, AHistoryWithoutNodesIsRefused) {
  head::History h = SmallHistory();
  h.nodes.clear();
  EXPECT_FALSE(ReplayFromHistory(h, RunningAs::kSoFar).ok());
}

TEST(WhatIfChangeTest, SetQuotaParsesAndNamesTheFlagWhenWrong) {
  WhatIfChange c;
  ASSERT_TRUE(ParseSetQuota("org/team=3", &c).ok());
  EXPECT_EQ(c.quotas.at("org/team"), 3);
  for (const char* bad : {"a", "=3", "a=", "a=-1", "a=x", "a=1.5"}) {
    Status st = ParseSetQuota(bad, &c);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.message().find("--set-quota"), std::string::npos) << st.message();
  }
}

TEST(WhatIfChangeTest, ChangesApplyToACopyOfTheRecordedConfiguration) {
  Result<Replay> r = ReplayFromHistory(SmallHistory(), RunningAs::kSoFar);
  ASSERT_TRUE(r.ok());
  WhatIfChange c;
  c.quotas = {{"a", 5}, {"c", 1}};  // c has jobs but no configuration
  c.policy = sched::OrderPolicy::kFifo;
  c.nodes = 5;
  Result<SimConfig> changed = ChangedConfig(*r, c);
  ASSERT_TRUE(changed.ok()) << changed.status().message();
  EXPECT_EQ(changed->queues[0].quota_gpus, 5);
  ASSERT_EQ(changed->queues.size(), 3u);
  EXPECT_EQ(changed->queues[2].name, "c");
  EXPECT_EQ(changed->policy, sched::OrderPolicy::kFifo);
  ASSERT_EQ(changed->cluster.registered.size(), 5u);
  EXPECT_EQ(changed->cluster.registered[4].gpus.size(), 4u) << "the most common node: 4 GPUs";
  EXPECT_EQ(r->config.queues[0].quota_gpus, 2) << "the recorded configuration is unchanged";

  WhatIfChange unknown;
  unknown.quotas = {{"nope", 1}};
  Result<SimConfig> bad = ChangedConfig(*r, unknown);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("no queue 'nope'"), std::string::npos);
  EXPECT_NE(bad.status().message().find("a, b, c"), std::string::npos) << bad.status().message();
}

TEST(WhatIfSpearmanTest, RankCorrelation) {
  EXPECT_DOUBLE_EQ(Spearman({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(Spearman({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  EXPECT_NEAR(Spearman({1, 2, 3, 4, 5}, {1, 2, 3, 5, 4}), 0.9, 1e-9);
  // Ties take their average rank: (1, 2.5, 2.5, 4) against (1, 2, 3, 4).
  EXPECT_NEAR(Spearman({0, 5, 5, 9}, {1, 2, 3, 4}), 0.9486832980505138, 1e-9);
  EXPECT_EQ(Spearman({1, 1, 1}, {1, 2, 3}), 0) << "no spread";
  EXPECT_EQ(Spearman({1}, {1}), 0);
}

// Two queues share one 4-GPU node, both submitting ten 10-second 1-GPU jobs at once: the
// recorded quotas (a: 1, b: 3) and their swap.
head::History Contended() {
  head::History h;
  h.from = kT0;
  h.now = kT0 + kHour;
  h.min_runtime_before_preempt_ms = 5 * kMinute;
  h.fair_share_half_life_ms = 7 * kDay;
  h.nodes = {MakeNode("n1", 4)};
  h.queues = {MakeQueue("a", 1), MakeQueue("b", 3)};
  JobId id = 1;
  for (int i = 0; i < 10; ++i) {
    for (const char* q : {"a", "b"}) {
      Job j = MakeJob(id, std::string("u") + q, q, kT0 + static_cast<TimeMs>(id), 1);
      TimeMs start = kT0 + 100 * static_cast<TimeMs>(id);
      j.runs = {MakeRun(1, start, start + 10 * kSecond, RunState::kSucceeded)};
      j.state = JobState::kSucceeded;
      j.ended_at = start + 10 * kSecond;
      h.jobs.push_back(j);
      ++id;
    }
  }
  return h;
}

TEST(WhatIfReportTest, SwappingQuotasMovesEachQueuesWaitTheExpectedWay) {
  Result<Replay> r = ReplayFromHistory(Contended(), RunningAs::kSoFar);
  ASSERT_TRUE(r.ok());
  Result<SimResult> replayed = Simulate(r->jobs, r->config);
  ASSERT_TRUE(replayed.ok()) << replayed.status().message();
  WhatIfChange c;
  c.quotas = {{"a", 3}, {"b", 1}};
  Result<SimConfig> swapped = ChangedConfig(*r, c);
  ASSERT_TRUE(swapped.ok());
  Result<SimResult> changed = Simulate(r->jobs, *swapped);
  ASSERT_TRUE(changed.ok()) << changed.status().message();
  WhatIfReport report = BuildReport(*r, *replayed, &*changed);
  EXPECT_EQ(report.jobs, 20);
  EXPECT_EQ(report.measured_jobs, 20);
  EXPECT_EQ(report.ranked_jobs, 20);
  ASSERT_EQ(report.queues.size(), 2u);
  const GroupRow& a = report.queues[0];
  const GroupRow& b = report.queues[1];
  EXPECT_EQ(a.name, "a");
  EXPECT_EQ(a.recorded.jobs, 10);
  EXPECT_EQ(a.replayed.jobs, 10);
  // As recorded, b (quota 3) goes first; swapped, a does.
  EXPECT_GT(a.replayed.avg_wait_s, b.replayed.avg_wait_s);
  EXPECT_LT(a.changed.avg_wait_s, a.replayed.avg_wait_s);
  EXPECT_GT(b.changed.avg_wait_s, b.replayed.avg_wait_s);
  EXPECT_LT(a.changed.avg_jct_s, a.replayed.avg_jct_s);
  // Each queue's GPU time is its jobs' work in every scenario: 100 of 200 GPU-seconds.
  EXPECT_NEAR(a.recorded.gpu_share, 0.5, 1e-9);
  EXPECT_NEAR(a.replayed.gpu_share, 0.5, 1e-9);
  EXPECT_NEAR(b.changed.gpu_share, 0.5, 1e-9);
  ASSERT_EQ(report.users.size(), 2u);
  EXPECT_EQ(report.users[0].name, "ua");

  std::string table = RenderWhatIf(report);
  for (const char* want : {"Spearman", "QUEUE", "USER", "WAIT changed", "GPU replay", "ua"}) {
    EXPECT_NE(table.find(want), std::string::npos) << want << " in\n" << table;
  }
  Json j = ToJson(report);
  EXPECT_EQ(j["queues"][0]["name"], "a");
  EXPECT_TRUE(j["queues"][0].contains("changed"));
}

TEST(WhatIfReportTest, ReplayingTheSimulatorsOwnRecordingReproducesItsStartOrder) {
  // Record: the contended history's jobs run by the simulator itself; then that recording,
  // as a head would have kept it, replayed. The same inputs must give the same order.
  Result<Replay> r = ReplayFromHistory(Contended(), RunningAs::kSoFar);
  ASSERT_TRUE(r.ok());
  Result<SimResult> first = Simulate(r->jobs, r->config);
  ASSERT_TRUE(first.ok());
  head::History h = Contended();
  for (size_t i = 0; i < h.jobs.size(); ++i) {
    const JobOutcome& o = first->jobs[i];
    Job& j = h.jobs[i];
    j.runs = {MakeRun(1, kT0 + o.first_start, kT0 + o.end, RunState::kSucceeded)};
    j.ended_at = kT0 + o.end;
  }
  Result<Replay> again = ReplayFromHistory(h, RunningAs::kSoFar);
  ASSERT_TRUE(again.ok());
  Result<SimResult> second = Simulate(again->jobs, again->config);
  ASSERT_TRUE(second.ok());
  WhatIfReport report = BuildReport(*again, *second, nullptr);
  EXPECT_DOUBLE_EQ(report.spearman, 1.0);
  EXPECT_FALSE(ToJson(report)["queues"][0].contains("changed"));
}

struct CommandRun {
  int code = 0;
  std::string out, err;
};

CommandRun WhatIf(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  cli::CliContext ctx;
  ctx.out = &out;
  ctx.err = &err;
  ctx.env = [](const std::string&) { return std::nullopt; };
  ctx.connect = []() -> Result<std::shared_ptr<cli::ApiTransport>> {
    return Unavailable("no head in this test");
  };
  int code = RunWhatIf(args, ctx);
  return {code, out.str(), err.str()};
}

TEST(WhatIfCommandTest, BadFlagsAreUsageErrorsNamingTheFlag) {
  for (const auto& [args, want] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--set-quota", "a"}, "--set-quota"},
           {{"--policy", "random"}, "--policy"},
           {{"--nodes", "0"}, "--nodes"},
           {{"--since", "soon"}, "--since"},
           {{"--running", "maybe"}, "--running"},
           {{"-o", "xml"}, "-o"},
           {{"extra"}, "extra"}}) {
    CommandRun r = WhatIf(args);
    EXPECT_EQ(r.code, 2) << args[0];
    EXPECT_NE(r.err.find(want), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("usage: corral whatif"), std::string::npos) << r.err;
  }
}

TEST(WhatIfCommandTest, ReplaysAHistoryFileWithAChange) {
  std::string path = ::testing::TempDir() + "/whatif-history.json";
  std::ofstream(path) << head::ToJson(Contended()).dump();
  CommandRun r =
      WhatIf({"--history", path, "--set-quota", "a=3", "--set-quota", "b=1", "-o", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  Json j = Json::parse(r.out);
  EXPECT_EQ(j["jobs"], 20);
  EXPECT_LT(j["queues"][0]["changed"]["avg_wait_seconds"].get<double>(),
            j["queues"][0]["replayed"]["avg_wait_seconds"].get<double>());
  r = WhatIf({"--history", path, "--set-quota", "zzz=1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no queue 'zzz'"), std::string::npos) << r.err;
  r = WhatIf({"--history", path + ".missing"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--history"), std::string::npos) << r.err;
  r = WhatIf({});
  EXPECT_EQ(r.code, 1) << "no head to ask";
  EXPECT_NE(r.err.find("no head in this test"), std::string::npos) << r.err;
  std::remove(path.c_str());
}

}  // namespace
}  // namespace corral::sim
