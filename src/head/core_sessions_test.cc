// Interactive sessions in the core (core_sessions.cc) on virtual time: who may exec into a job,
// the inactive limit for sessions whose client is gone, and idle culling by queue.
#include <set>

#include "head/core_scenario.h"

namespace corral::head::core_test {
namespace {

class Sessions : public Scenario {
 protected:
  JobSpec Session(int gpus, const std::string& queue = "default") {
    JobSpec s = Spec(gpus);
    s.command = {"sleep", "infinity"};
    s.interactive = true;
    s.queue = queue;
    return s;
  }
  void SetIdleTimeout(const std::string& queue, DurationMs timeout) {
    QueueConfig q{queue, 0, -1, 1.0};
    q.idle_timeout_ms = timeout;
    ASSERT_TRUE(core().SetQueue(kAdmin, q, now()).ok());
    Step();
  }
  // One sync of n1 reporting `running` as running, its GPUs 0..3 at `percent`, then a tick.
  void Sample(const std::vector<Job>& running, int32_t percent) {
    SyncRequest req;
    req.node = "n1";
    req.agent_epoch = epochs_["n1"];
    for (const Job& j : running) req.runs.push_back(Running(Get(j.id)));
    for (int32_t i = 0; i < 4; ++i) req.gpu_samples.push_back({i, percent, 0});
    ASSERT_TRUE(*core().Report(Caller::Node("n1"), req, now()));
    core().Tick(now());
    Step();
  }
  // Moves time on by `ms`, a minute at a time: every client in `running` touches its session
  // (typing in those of `typing`), and n1 syncs with its GPUs at `percent`, then a tick.
  void Pass(DurationMs ms, const std::vector<Job>& running, int32_t percent,
            const std::set<JobId>& typing = {}) {
    for (DurationMs left = ms; left > 0; left -= kMinute) {
      now() += std::min(left, kMinute);
      for (const Job& j : running) Touch(j, typing.count(j.id) > 0);
      Sample(running, percent);
    }
  }
  void Touch(const Job& j, bool typed) {
    ASSERT_TRUE(core().TouchSession(kAna, j.id, typed, now()).ok());
    Step();
  }
  int Warnings(JobId id) {
    int n = 0;
    for (const auto& e : Get(id).events) n += e.what == "idle warning";
    return n;
  }
  bool StopRequested(JobId id) { return Get(id).CurrentRun()->stop_requested; }
};

// What rests on observations a new leadership starts afresh (when a client was last heard
// from, GPU samples, terminal input) runs on a live core only: a skip would fail CI.
class LiveSessions : public Sessions {};

TEST_P(Sessions, OnlyTheOwnerQueueAdminsAndAdminsMayExec) {
  Register("n1", 4);
  Job job = Submit(Spec(1));
  auto early = core().OpenExec(kAna, job.id, 0, now());
  EXPECT_EQ(early.status().code(), ErrorCode::kFailedPrecondition) << "not running yet";
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(job.id))}));
  auto mine = core().OpenExec(kAna, job.id, 0, now());
  ASSERT_TRUE(mine.ok()) << mine.status().ToString();
  EXPECT_EQ(mine->node, "n1");
  EXPECT_EQ(mine->address, "n1.example:7071");
  EXPECT_EQ(mine->run_id, ToString(RunId{job.id, 1}));
  auto bobs = core().OpenExec(kBob, job.id, 0, now());
  ASSERT_EQ(bobs.status().code(), ErrorCode::kPermissionDenied);
  EXPECT_NE(bobs.status().message().find("its owner (ana)"), std::string::npos)
      << bobs.status().message();
  EXPECT_NE(bobs.status().message().find("not bob"), std::string::npos);
  Caller lead = Caller::User("lead", Role::kQueueAdmin);
  lead.queues = {"default"};
  EXPECT_TRUE(core().OpenExec(lead, job.id, 0, now()).ok());
  EXPECT_TRUE(core().OpenExec(kAdmin, job.id, 0, now()).ok());
  EXPECT_EQ(core().OpenExec(kAna, job.id, 1, now()).status().code(), ErrorCode::kInvalidArgument);
}

// A session's order says so: its monitor on the node ends it when the agent is gone longer than
// its lease, where a batch job's outlives the agent (docs/interactive.md).
TEST_P(Sessions, ASessionsOrderIsMarkedInteractiveABatchJobsIsNot) {
  Register("n1", 2);
  Job batch = Submit(Spec(1));
  Job session = Submit(Session(1));
  Schedule();
  std::map<JobId, bool> interactive;
  for (const RunOrder& o : Desired("n1")) interactive[o.job_id] = o.interactive;
  ASSERT_EQ(interactive.size(), 2u);
  EXPECT_FALSE(interactive.at(batch.id));
  EXPECT_TRUE(interactive.at(session.id));
}

TEST_P(LiveSessions, ASessionWhoseClientIsGoneEndsAfterTheInactiveLimit) {
  Register("n1", 1);
  const DurationMs limit = core().config().inactive_limit_ms;
  Job batch = Submit(Spec(1));
  Job waiting = Submit(Session(1));  // waits behind the batch job
  Schedule();
  ASSERT_NE(Get(batch.id).CurrentRun(), nullptr);
  Sample({batch}, 50);
  now() += limit - kSecond;
  Sample({batch}, 50);
  Touch(waiting, false);  // its client is there, waiting
  now() += limit - kSecond;
  Sample({batch}, 50);  // (each sync keeps n1 alive; each sample ends with a tick)
  EXPECT_EQ(Get(waiting.id).state, JobState::kPending) << "touched within the limit";
  now() += 2 * kSecond;
  Sample({batch}, 50);
  ASSERT_EQ(Get(waiting.id).state, JobState::kCancelled);
  EXPECT_NE(Get(waiting.id).events.back().reason.find("its client has not been heard from"),
            std::string::npos)
      << Get(waiting.id).events.back().reason;
  EXPECT_FALSE(StopRequested(batch.id)) << "a batch job is never ended for that";
  EXPECT_EQ(core().TouchSession(kAna, batch.id, false, now()).status().code(),
            ErrorCode::kFailedPrecondition)
      << "a batch job is no session";
  // A running session: its run is stopped, cancelled, with the reason.
  ASSERT_TRUE(*Report("n1", {Exited(Get(batch.id), 0, 0)}));
  Job running = Submit(Session(1));
  Schedule();
  ASSERT_NE(Get(running.id).CurrentRun(), nullptr) << Get(running.id).pending_reason;
  Sample({running}, 50);
  now() += limit - kSecond;
  ASSERT_TRUE(core().OpenExec(kAna, running.id, 0, now()).ok());  // an exec is heard from, too
  Step();
  now() += limit - kSecond;
  Sample({running}, 50);
  EXPECT_FALSE(StopRequested(running.id));
  now() += 2 * kSecond;
  Sample({running}, 50);
  ASSERT_TRUE(StopRequested(running.id));
  EXPECT_EQ(Get(running.id).CurrentRun()->reason.rfind("cancelled: its client", 0), 0u)
      << Get(running.id).CurrentRun()->reason;
  auto touch = core().TouchSession(kBob, running.id, false, now());
  EXPECT_EQ(touch.status().code(), ErrorCode::kPermissionDenied);
}

TEST_P(LiveSessions, AnIdleSessionIsWarnedThenEndedWithTheReason) {
  Register("n1", 4);
  const DurationMs timeout = 20 * kMinute;
  SetIdleTimeout("dev", timeout);
  Job idle = Submit(Session(1, "dev"));
  Job typing = Submit(Session(1, "dev"));
  Job elsewhere = Submit(Session(1));  // queue default has no idle_timeout
  Schedule();
  std::vector<Job> all = {idle, typing, elsewhere};
  Sample(all, 0);  // they start
  Sample(all, 0);  // and their GPUs are idle from now
  Pass(timeout - kMinute, all, 0, {typing.id});
  EXPECT_EQ(Warnings(idle.id), 0) << "not idle long enough";
  Pass(kMinute, all, 0, {typing.id});
  EXPECT_EQ(Warnings(idle.id), 1) << "idle for its queue's idle_timeout: warned";
  auto status = core().TouchSession(kAna, idle.id, false, now());
  ASSERT_TRUE(status.ok());
  EXPECT_GT(status->idle_stop_at, now()) << "the client learns when it ends";
  EXPECT_EQ(Warnings(typing.id), 0) << "its user types";
  EXPECT_EQ(Warnings(elsewhere.id), 0);
  const DurationMs warning = std::min(core().config().idle_stop_warning_ms, timeout);
  Pass(warning - kMinute, all, 0, {typing.id});
  EXPECT_FALSE(StopRequested(idle.id)) << "not before the warning period is over";
  Pass(kMinute, all, 0, {typing.id});
  ASSERT_TRUE(StopRequested(idle.id));
  const std::string reason = Get(idle.id).CurrentRun()->reason;
  EXPECT_EQ(reason.rfind("cancelled: idle for", 0), 0u) << reason;
  EXPECT_NE(reason.find("no terminal input and its GPUs under 1% use"), std::string::npos)
      << reason;
  EXPECT_NE(reason.find("queue dev's idle_timeout is"), std::string::npos) << reason;
  EXPECT_FALSE(StopRequested(typing.id));
  EXPECT_FALSE(StopRequested(elsewhere.id));
}

TEST_P(LiveSessions, BusyGpusOrTypingForgiveAWarnedSession) {
  Register("n1", 4);
  const DurationMs timeout = 20 * kMinute;
  const DurationMs warning = core().config().idle_stop_warning_ms;
  SetIdleTimeout("dev", timeout);
  Job s = Submit(Session(1, "dev"));
  Schedule();
  Sample({s}, 0);
  Sample({s}, 0);
  Pass(timeout, {s}, 0);
  ASSERT_EQ(Warnings(s.id), 1);
  Pass(warning + kMinute, {s}, 80);  // its GPU works again: forgiven
  EXPECT_FALSE(StopRequested(s.id));
  // Idle again from its first idle sample (a minute in): a whole timeout before a second warning.
  Pass(timeout, {s}, 0);
  EXPECT_EQ(Warnings(s.id), 1);
  Pass(kMinute, {s}, 0);
  EXPECT_EQ(Warnings(s.id), 2);
  Pass(warning + kMinute, {s}, 0, {s.id});  // typing forgives it as well
  EXPECT_FALSE(StopRequested(s.id));
}

TEST_P(LiveSessions, ANotebookIsReadyOnItsNoteAndOutlivesTheInactiveLimit) {
  Register("n1", 1);
  JobSpec spec = Session(1);
  spec.command = {"jupyter-notebook"};
  spec.notebook = true;
  Job nb = Submit(spec);
  Schedule();
  ASSERT_NE(Get(nb.id).CurrentRun(), nullptr);
  RunReport ready = Running(Get(nb.id));
  ready.note = "notebook ready on n1";
  ASSERT_TRUE(*Report("n1", {ready}));
  ASSERT_TRUE(*Report("n1", {ready}));  // a note is an event once
  int events = 0;
  for (const auto& e : Get(nb.id).events) events += e.what == "notebook ready";
  EXPECT_EQ(events, 1);
  auto target = core().OpenExec(kAna, nb.id, 0, now());
  ASSERT_TRUE(target.ok()) << target.status().ToString();
  EXPECT_TRUE(target->notebook);
  // No client touches it: a browser comes and goes.
  Pass(3 * core().config().inactive_limit_ms, {}, 50);
  Sample({nb}, 50);
  EXPECT_FALSE(StopRequested(nb.id));
}

// A notebook's kernels and terminals count as use (its agent reports how long ago they were
// last active): one whose user runs cells while its GPU idles is not warned; one whose kernels
// went quiet is warned after the timeout from its last activity, then ended with that reason.
TEST_P(LiveSessions, NotebookKernelActivityKeepsItAndItsAbsenceEndsIt) {
  Register("n1", 4);
  const DurationMs timeout = 20 * kMinute;
  SetIdleTimeout("dev", timeout);
  JobSpec spec = Session(1, "dev");
  spec.command = {"jupyter-notebook"};
  spec.notebook = true;
  Job working = Submit(spec);
  Job quiet = Submit(spec);
  Schedule();
  const TimeMs quiet_since = now() + 5 * kMinute;  // its last cell ran five minutes in
  // Each minute n1 syncs: its GPUs idle, `working`'s kernel busy or used seconds ago.
  auto pass = [&](DurationMs ms) {
    for (DurationMs left = ms; left > 0; left -= kMinute) {
      now() += std::min(left, kMinute);
      SyncRequest req;
      req.node = "n1";
      req.agent_epoch = epochs_["n1"];
      RunReport w = Running(Get(working.id));
      w.notebook_idle_ms = (now() / kMinute) % 2 == 0 ? 0 : 40 * kSecond;
      RunReport q = Running(Get(quiet.id));
      q.notebook_idle_ms = std::max<int64_t>(0, now() - quiet_since);
      req.runs = {w, q};
      for (int32_t i = 0; i < 4; ++i) req.gpu_samples.push_back({i, 0, 0});
      ASSERT_TRUE(*core().Report(Caller::Node("n1"), req, now()));
      core().Tick(now());
      Step();
    }
  };
  pass(kMinute);
  // Idle from its last activity, not from its start: no warning a timeout after the start.
  pass(timeout);
  EXPECT_EQ(Warnings(quiet.id), 0) << "its kernel ran a cell five minutes in";
  pass(5 * kMinute);
  EXPECT_EQ(Warnings(quiet.id), 1) << "a timeout after its kernel's last activity: warned";
  const DurationMs warning = std::min(core().config().idle_stop_warning_ms, timeout);
  pass(warning);
  ASSERT_TRUE(StopRequested(quiet.id));
  const std::string reason = Get(quiet.id).CurrentRun()->reason;
  EXPECT_EQ(reason.rfind("cancelled: idle for", 0), 0u) << reason;
  EXPECT_NE(reason.find("no kernel or terminal activity in its notebook and its GPUs under"),
            std::string::npos)
      << reason;
  EXPECT_EQ(Warnings(working.id), 0) << "its user runs cells: in use though its GPU idles";
  EXPECT_FALSE(StopRequested(working.id));
}

// A session whose node is lost ends, failed with a reason naming the node, where a batch job
// on the same node goes back to the queue: its command and its client's connection died with
// the node, and an allocation elsewhere would hold GPUs for nobody. Its agent's fence (the
// node cut off from the head) ends it the same way.
TEST_P(Sessions, ASessionLostWithItsNodeEndsWhereABatchJobIsRequeued) {
  Register("n1", 2);
  Job batch = Submit(Spec(1));
  Job session = Submit(Session(1));
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(batch.id)), Running(Get(session.id))}));
  now() += 61 * kSecond;  // past the head's down_after without a sync
  core().Tick(now());
  Step();
  ASSERT_EQ(core().GetNode("n1")->state(), NodeState::kDown);
  Job ended = Get(session.id);
  EXPECT_EQ(ended.state, JobState::kFailed);
  ASSERT_EQ(ended.runs.size(), 1u);
  EXPECT_EQ(ended.runs[0].state, RunState::kLost);
  EXPECT_EQ(ended.runs[0].reason, "node n1 lost; an interactive session is not requeued");
  EXPECT_EQ(ended.events.back().what, "failed");
  EXPECT_EQ(ended.events.back().reason, ended.runs[0].reason);
  EXPECT_EQ(Get(batch.id).state, JobState::kPending) << "a batch job is requeued as before";
  EXPECT_EQ(Get(batch.id).runs[0].state, RunState::kLost);

  Register("n2", 2);
  Schedule();
  EXPECT_EQ(Get(batch.id).state, JobState::kScheduled);
  EXPECT_EQ(Get(session.id).state, JobState::kFailed) << "not placed again";
  EXPECT_EQ(Get(session.id).runs.size(), 1u);

  Job fenced = Submit(Session(1));
  Schedule();
  ASSERT_TRUE(*Report("n2", {Running(Get(batch.id)), Running(Get(fenced.id))}));
  RunReport stopped = Exited(Get(fenced.id), 0, -15);
  stopped.fenced = true;
  ASSERT_TRUE(*Report("n2", {Running(Get(batch.id)), stopped}));
  EXPECT_EQ(Get(fenced.id).state, JobState::kFailed);
  EXPECT_NE(Get(fenced.id).runs[0].reason.find("(fenced); an interactive session is not requeued"),
            std::string::npos)
      << Get(fenced.id).runs[0].reason;
}

// A queue's max_interactive_gpus_per_user: one user's sessions past it wait with the reason,
// while the same user's batch jobs and another user's sessions start; the waiting one starts
// when the user's earlier session ends.
TEST_P(Sessions, AQueueCapsOneUsersInteractiveGpus) {
  Register("n1", 4);
  Register("n2", 4);
  QueueConfig dev{"dev", 0, -1, 1.0};
  dev.max_interactive_gpus_per_user = 2;
  ASSERT_TRUE(core().SetQueue(kAdmin, dev, now()).ok());
  Step();
  Job first = Submit(Session(2, "dev"));
  Schedule();
  ASSERT_NE(Get(first.id).CurrentRun(), nullptr) << Get(first.id).pending_reason;
  ASSERT_TRUE(*Report("n1", {Running(Get(first.id))}));
  Job over = Submit(Session(1, "dev"));
  JobSpec batch_spec = Spec(2);
  batch_spec.queue = "dev";
  Job batch = Submit(batch_spec);
  Job bobs = Submit(Session(2, "dev"), kBob);
  Schedule();
  EXPECT_EQ(Get(over.id).state, JobState::kPending);
  if (!GetParam()) {  // a pending reason is not durable: a recovered core has none yet
    EXPECT_EQ(Get(over.id).pending_code, PendingCode::kQueueLimit);
    EXPECT_EQ(Get(over.id).pending_reason,
              "user ana's interactive sessions hold 2 GPUs in queue dev, its "
              "max_interactive_gpus_per_user is 2");
  }
  EXPECT_NE(Get(batch.id).CurrentRun(), nullptr) << "batch jobs are not counted";
  EXPECT_NE(core().GetJob(kAdmin, bobs.id)->CurrentRun(), nullptr)
      << "another user has a cap of their own";
  // Another queue's sessions are not held to dev's cap.
  Job elsewhere = Submit(Session(1));
  Job still_over = Submit(Session(1, "dev"));
  Schedule();
  EXPECT_EQ(Get(still_over.id).state, JobState::kPending);
  EXPECT_EQ(Get(over.id).state, JobState::kPending) << "the room is there: the cap holds it";
  EXPECT_NE(Get(elsewhere.id).CurrentRun(), nullptr) << Get(elsewhere.id).pending_reason;
  // The first session ends: one GPU's session fits under the cap again, then the next.
  ASSERT_TRUE(*Report("n1", {Exited(Get(first.id), 0, 0)}));
  Schedule();
  EXPECT_NE(Get(over.id).CurrentRun(), nullptr) << Get(over.id).pending_reason;
  EXPECT_NE(Get(still_over.id).CurrentRun(), nullptr) << Get(still_over.id).pending_reason;
}

INSTANTIATE_TEST_SUITE_P(Head, Sessions, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? "Recovered" : "Live";
                         });
INSTANTIATE_TEST_SUITE_P(Head, LiveSessions, ::testing::Values(false),
                         [](const auto&) { return "Live"; });

}  // namespace
}  // namespace corral::head::core_test
