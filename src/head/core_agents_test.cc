// The head's core answering agents (desired-state deltas), usage, and idle runs.
#include "core/codec.h"
#include "head/core_scenario.h"

namespace corral::head::core_test {
namespace {

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

// An agent too old for this head is refused, the error naming both protocol versions; its
// node is not registered. A current one is taken.
TEST_P(Scenario, AnAgentTooOldForTheHeadIsRefusedNamingBothVersions) {
  RegisterRequest old;
  old.name = "n-old";
  old.cpu_milli = 1000;
  old.protocol = kMinAgentProtocol - 1;
  auto refused = core().Register(kJoin, old, "secret", now());
  ASSERT_FALSE(refused.ok());
  const std::string why = refused.status().message();
  EXPECT_EQ(refused.status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(why.find("protocol version " + std::to_string(kMinAgentProtocol - 1)),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("(version " + std::to_string(kAgentProtocol)), std::string::npos) << why;
  EXPECT_NE(why.find("field 'protocol'"), std::string::npos) << why;
  Step();
  EXPECT_FALSE(core().GetNode("n-old").ok()) << "a refused agent changes nothing";
  // Decoded from an agent that sends no version: version 1, refused alike.
  auto decoded = RegisterRequestFromJson(Json{{"name", "n-old"}});
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->protocol, 1);
  EXPECT_FALSE(core().Register(kJoin, *decoded, "secret", now()).ok());
  old.protocol = kAgentProtocol;
  EXPECT_TRUE(core().Register(kJoin, old, "secret", now()).ok());
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

// GPU samples are observations, not changes: a recovered head starts over, so these scenarios
// run live only (no restart after every step).
class GpuSamples : public Scenario {};

TEST_P(GpuSamples, RunWhoseGpusStayIdleIsFlaggedUntilOneGetsBusy) {
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
class IdleStop : public GpuSamples {
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

INSTANTIATE_TEST_SUITE_P(Head, GpuSamples, ::testing::Values(false),
                         [](const auto&) { return "Live"; });
INSTANTIATE_TEST_SUITE_P(Head, IdleStop, ::testing::Values(false),
                         [](const auto&) { return "Live"; });

}  // namespace
}  // namespace corral::head::core_test
