// Elastic jobs through the head's core (docs/elastic.md): a job starts with its minimum, grows
// into freed nodes, gives replicas to a higher-priority job (and what it borrows beyond its
// queue's quota to a queue reclaiming its own) and keeps running, and drops a lost node's
// replica while it keeps its minimum. Every scenario also runs with the head killed and
// recovered after every step (core_scenario.h): each JobResized is durable and replayed.
#include "core/spec.h"
#include "core/usage.h"
#include "head/core_scenario.h"
#include "sched/job_input.h"

namespace corral::head::core_test {
namespace {

class Elastic : public Scenario {
 protected:
  void ThreeHosts() {
    for (const char* n : {"h1", "h2", "h3"}) Register(n, 1);
  }
  JobSpec ElasticSpec(int min, int max) {
    JobSpec s = Spec(1, max);
    s.min_replicas = min;
    s.max_replicas_per_node = 1;
    s.preemptible = true;
    return s;
  }
  // A one-GPU job running on `node` (its only free node).
  Job Filler(const std::string& node, int priority = 0) {
    JobSpec s = Spec(1);
    s.priority = priority;
    Job j = Submit(s);
    Schedule();
    EXPECT_EQ(Get(j.id).state, JobState::kScheduled);
    EXPECT_EQ(Get(j.id).CurrentRun()->placement.at(0).node, node);
    EXPECT_TRUE(*Report(node, {Running(Get(j.id))}));
    return Get(j.id);
  }
  int32_t Size(JobId id) {
    const ElasticSize* e = core().elastic_sizes().Of(id);
    return e ? e->current : -1;
  }
  bool HasEvent(JobId id, const std::string& what) {
    for (const JobEvent& e : Get(id).events) {
      if (e.what == what) return true;
    }
    return false;
  }
  // `silent` stops syncing until the head declares it down; the other nodes of `job` report
  // their replicas running, and `idle` (nodes without its replicas) an empty sync, just before
  // the tick that does (with no step between: a recovered head gives every node a full timeout
  // again).
  void LoseAllBut(const Job& job, const std::string& silent,
                  const std::vector<std::string>& idle = {}) {
    now() += core().config().down_after_ms + kSecond;
    const corral::Run& run = *job.CurrentRun();
    for (size_t r = 0; r < run.placement.size(); ++r) {
      const std::string& node = run.placement[r].node;
      if (node == silent) continue;
      SyncRequest req;
      req.node = node;
      req.agent_epoch = epochs_[node];
      req.runs = {Running(job, static_cast<int>(r))};
      ASSERT_TRUE(core().Report(Caller::Node(node), req, now()).ok());
    }
    for (const std::string& node : idle) {
      SyncRequest req;
      req.node = node;
      req.agent_epoch = epochs_[node];
      ASSERT_TRUE(core().Report(Caller::Node(node), req, now()).ok());
    }
    core().Tick(now());
    Step();
  }
  // Reports every live replica of `job` running on its node.
  void ReportAllRunning(const Job& job) {
    const corral::Run& run = *job.CurrentRun();
    for (size_t r = 0; r < run.placement.size(); ++r) {
      if (run.Departed(static_cast<int32_t>(r))) continue;
      ASSERT_TRUE(*Report(run.placement[r].node, {Running(job, static_cast<int>(r))}));
    }
  }
};

TEST_P(Elastic, StartsWithItsMinimumAndGrowsWhenHostsFree) {
  ThreeHosts();
  Job a = Filler("h1");
  Job b = Filler("h2");
  Job e = Submit(ElasticSpec(1, 3));
  Schedule();
  ASSERT_EQ(Get(e.id).state, JobState::kScheduled);
  ASSERT_EQ(Get(e.id).CurrentRun()->placement.size(), 1u);
  EXPECT_EQ(Get(e.id).CurrentRun()->placement[0].node, "h3");
  EXPECT_EQ(Size(e.id), 1);
  ASSERT_TRUE(*Report("h3", {Running(Get(e.id))}));
  ASSERT_TRUE(*Report("h1", {Exited(a, 0, 0)}));
  ASSERT_TRUE(*Report("h2", {Exited(b, 0, 0)}));
  Schedule();
  const Job grown = Get(e.id);
  ASSERT_EQ(grown.CurrentRun()->LiveReplicas(), 3) << Json(ToJson(grown)).dump();
  EXPECT_EQ(grown.CurrentRun()->attempt, 1);  // the same run: no restart
  EXPECT_EQ(grown.state, JobState::kRunning);
  EXPECT_EQ(Size(e.id), 3);
  EXPECT_TRUE(HasEvent(e.id, "grown"));
  // The new replicas' nodes are told to start them.
  for (const char* n : {"h1", "h2"}) {
    std::vector<RunOrder> orders = Desired(n);
    ASSERT_EQ(orders.size(), 1u) << n;
    EXPECT_EQ(orders[0].job_id, e.id);
    EXPECT_FALSE(orders[0].stop);
  }
  h_.ExpectDerivedStateRebuilds();
  h_.ExpectReplayEqualsLive();
}

TEST_P(Elastic, AHigherPriorityJobShrinksItAndItKeepsRunning) {
  ThreeHosts();
  Job e = Submit(ElasticSpec(2, 3));
  Schedule();
  ASSERT_EQ(Get(e.id).CurrentRun()->placement.size(), 3u);
  ReportAllRunning(Get(e.id));
  JobSpec urgent = Spec(1);
  urgent.priority = 10;
  Job u = Submit(urgent, kAdmin);
  Schedule();
  const Job shrunk = Get(e.id);
  ASSERT_EQ(shrunk.CurrentRun()->departed.size(), 1u);
  const int32_t gone = shrunk.CurrentRun()->departed[0];
  const std::string node = shrunk.CurrentRun()->placement[gone].node;
  EXPECT_FALSE(shrunk.CurrentRun()->stop_requested);  // the run is not stopped
  EXPECT_TRUE(HasEvent(e.id, "shrunk"));
  EXPECT_EQ(Size(e.id), 2);
  EXPECT_EQ(Get(u.id).state, JobState::kPending);  // waits for the replica to leave
  // Only the leaving replica's node is told to stop it (signal, then grace).
  std::vector<RunOrder> orders = Desired(node);
  ASSERT_EQ(orders.size(), 1u);
  EXPECT_TRUE(orders[0].stop);
  EXPECT_EQ(orders[0].replica, gone);
  for (const char* n : {"h1", "h2", "h3"}) {
    if (n == node) continue;
    for (const RunOrder& o : Desired(n)) {
      EXPECT_FALSE(o.stop) << n;
      EXPECT_EQ(o.peers_lost, 0) << n << ": a replica asked to leave is no lost peer";
    }
  }
  // Killed by its checkpoint signal: not a failure of the job.
  ASSERT_TRUE(*Report(node, {Exited(shrunk, gone, -15)}));
  Schedule();
  ASSERT_EQ(Get(u.id).state, JobState::kScheduled);
  EXPECT_EQ(Get(u.id).CurrentRun()->placement[0].node, node);
  EXPECT_EQ(Get(e.id).state, JobState::kRunning);
  EXPECT_EQ(Get(e.id).runs.size(), 1u);
  // The others end well: the job succeeded, whatever the leaving replica's code.
  const Job after = Get(e.id);
  for (size_t r = 0; r < after.CurrentRun()->placement.size(); ++r) {
    if (after.CurrentRun()->Departed(static_cast<int32_t>(r))) continue;
    ASSERT_TRUE(
        *Report(after.CurrentRun()->placement[r].node, {Exited(after, static_cast<int>(r), 0)}));
  }
  EXPECT_EQ(Get(e.id).state, JobState::kSucceeded);
  EXPECT_EQ(Size(e.id), -1);
  h_.ExpectDerivedStateRebuilds();
  h_.ExpectReplayEqualsLive();
}

TEST_P(Elastic, AQueueUnderItsQuotaTakesBackWhatAnotherQueueBorrows) {
  ThreeHosts();
  ASSERT_TRUE(core().SetQueue(kAdmin, {"a", 1, -1, 1.0}, now()).ok());
  Step();
  ASSERT_TRUE(core().SetQueue(kAdmin, {"b", 2, -1, 1.0}, now()).ok());
  Step();
  JobSpec spec = ElasticSpec(1, 3);
  spec.queue = "a";
  spec.priority = 5;
  Job e = Submit(spec, kAdmin);
  Schedule();
  ASSERT_EQ(Get(e.id).CurrentRun()->placement.size(), 3u);  // two beyond queue a's quota
  ReportAllRunning(Get(e.id));
  // A job of queue b, of a lower priority, reclaims its quota.
  JobSpec low = Spec(1);
  low.queue = "b";
  Job l = Submit(low, kAdmin);
  Schedule();
  const Job shrunk = Get(e.id);
  ASSERT_EQ(shrunk.CurrentRun()->departed.size(), 1u) << Json(ToJson(shrunk)).dump();
  const int32_t gone = shrunk.CurrentRun()->departed[0];
  const std::string node = shrunk.CurrentRun()->placement[gone].node;
  EXPECT_TRUE(HasEvent(e.id, "shrunk"));
  EXPECT_EQ(Size(e.id), 2);
  EXPECT_EQ(Get(l.id).state, JobState::kPending);  // waits for the replica to leave
  ASSERT_TRUE(*Report(node, {Exited(shrunk, gone, -15)}));
  Schedule();
  ASSERT_EQ(Get(l.id).state, JobState::kScheduled);
  EXPECT_EQ(Get(l.id).CurrentRun()->placement[0].node, node);
  EXPECT_EQ(Get(e.id).state, JobState::kRunning);
  EXPECT_EQ(Get(e.id).runs.size(), 1u);
  h_.ExpectDerivedStateRebuilds();
  h_.ExpectReplayEqualsLive();
}

TEST_P(Elastic, ALostNodeDropsItsReplicaAndTheJobGoesOn) {
  ThreeHosts();
  Job e = Submit(ElasticSpec(2, 3));
  Schedule();
  const Job started = Get(e.id);
  ReportAllRunning(started);
  for (const char* n : {"h1", "h2", "h3"}) EXPECT_EQ(Desired(n).at(0).peers_lost, 0) << n;
  LoseAllBut(started, "h3");
  const Job after = Get(e.id);
  EXPECT_EQ(after.state, JobState::kRunning);
  EXPECT_EQ(after.runs.size(), 1u);  // no requeue, no restart
  EXPECT_EQ(after.CurrentRun()->LiveReplicas(), 2);
  EXPECT_TRUE(HasEvent(e.id, "shrunk"));
  EXPECT_EQ(Size(e.id), 2);
  // The survivors' agents are told at once: their orders count the loss (they kill their
  // torchrun workers, which re-rendezvous), and they keep running.
  for (const char* n : {"h1", "h2"}) {
    std::vector<RunOrder> orders = Desired(n);
    ASSERT_EQ(orders.size(), 1u) << n;
    EXPECT_EQ(orders[0].peers_lost, 1) << n;
    EXPECT_FALSE(orders[0].stop) << n;
  }
  // h3 comes back: a replacement replica joins the same run there.
  ASSERT_TRUE(Register("h3", 1) > 0);
  Schedule();
  EXPECT_EQ(Get(e.id).CurrentRun()->LiveReplicas(), 3);
  EXPECT_EQ(Get(e.id).runs.size(), 1u);
  EXPECT_TRUE(HasEvent(e.id, "grown"));
  h_.ExpectDerivedStateRebuilds();
  h_.ExpectReplayEqualsLive();
}

TEST_P(Elastic, BelowItsMinimumALostNodeRequeuesTheJob) {
  Register("h1", 1);
  Register("h2", 1);
  Job e = Submit(ElasticSpec(2, 3));
  Schedule();
  const Job started = Get(e.id);
  ASSERT_EQ(started.CurrentRun()->placement.size(), 2u);
  ReportAllRunning(started);
  LoseAllBut(started, "h2");
  const Job after = Get(e.id);
  EXPECT_EQ(after.state, JobState::kPending);  // requeued whole, as a rigid gang
  EXPECT_EQ(after.runs.back().state, RunState::kLost);
  EXPECT_EQ(Size(e.id), -1);
  h_.ExpectDerivedStateRebuilds();
  h_.ExpectReplayEqualsLive();
}

// Hot spares (docs/elastic.md): a 1:2 job with one spare runs on two of three hosts and the
// scheduler holds the third for it. A low-priority job is submitted just as a host of the job
// is lost: the pass that learns of the loss replaces the replica on the spare, before the
// job. Spares are not durable: a head restarted holds them again at its first pass when no
// job waits; with a crash after every step that pass is the one after the loss, where the
// waiting job comes first and the run keeps going on its minimum.
TEST_P(Elastic, ALostReplicaIsReplacedOnItsHotSpareBeforeAWaitingJob) {
  ThreeHosts();
  JobSpec spec = ElasticSpec(1, 2);
  spec.hot_spares = 1;
  Job e = Submit(spec);
  Schedule();
  const Job started = Get(e.id);
  ASSERT_EQ(started.CurrentRun()->placement.size(), 2u);
  ReportAllRunning(started);
  std::string spare_host = "h1";
  for (const char* n : {"h1", "h2", "h3"}) {
    bool used = false;
    for (const ReplicaPlacement& p : started.CurrentRun()->placement) used |= p.node == n;
    if (!used) spare_host = n;
  }
  if (!GetParam()) {
    EXPECT_EQ(Get(e.id).hot_spare_nodes, std::vector<std::string>{spare_host});
  }
  JobSpec low = Spec(1);
  low.priority = -1;
  Job waiting = Submit(low);
  const std::string lost = started.CurrentRun()->placement[1].node;
  LoseAllBut(started, lost, {spare_host});
  Schedule();
  const Job after = Get(e.id);
  EXPECT_EQ(after.runs.size(), 1u);  // no requeue, no restart
  EXPECT_TRUE(HasEvent(e.id, "shrunk"));
  if (GetParam()) {
    EXPECT_EQ(Get(waiting.id).state, JobState::kScheduled);
    EXPECT_EQ(after.CurrentRun()->LiveReplicas(), 1);
  } else {
    EXPECT_EQ(Get(waiting.id).state, JobState::kPending);
    EXPECT_EQ(after.CurrentRun()->LiveReplicas(), 2);
    EXPECT_EQ(after.CurrentRun()->placement.back().node, spare_host);
    EXPECT_EQ(Size(e.id), 2);
    bool from_spare = false;
    for (const JobEvent& ev : after.events) {
      from_spare |= ev.what == "grown" && ev.reason.find("hot spare") != std::string::npos;
    }
    EXPECT_TRUE(from_spare);
    EXPECT_TRUE(Get(e.id).hot_spare_nodes.empty());  // no host left to hold another
  }
  h_.ExpectDerivedStateRebuilds();
  h_.ExpectReplayEqualsLive();
}

// GPU time counts the replicas an elastic run held over time: one replica for an hour, three
// for the next, then one taken away (it holds its GPU through its 10 minutes of grace) and two
// for the last hour. `corral usage`, fair share (what a recovered head and retirement count)
// and the attained service of the job agree; its maximum for its whole length would be 9.5 h.
TEST_P(Elastic, GpuTimeCountsTheReplicasItHeld) {
  ThreeHosts();
  Job a = Filler("h1");
  Job b = Filler("h2");
  Job e = Submit(ElasticSpec(1, 3));
  Schedule();
  const TimeMs t0 = now();
  ASSERT_TRUE(*Report("h3", {Running(Get(e.id))}));
  now() += kHour;
  ASSERT_TRUE(*Report("h1", {Exited(a, 0, 0)}));
  ASSERT_TRUE(*Report("h2", {Exited(b, 0, 0)}));
  Schedule();
  ASSERT_EQ(Size(e.id), 3);
  ReportAllRunning(Get(e.id));
  now() += kHour;
  JobSpec urgent = Spec(1);
  urgent.priority = 10;
  Submit(urgent, kAdmin);
  Schedule();
  ASSERT_EQ(Size(e.id), 2);
  const Job shrunk = Get(e.id);
  const int32_t gone = shrunk.CurrentRun()->departed.at(0);
  now() += 10 * kMinute;
  ASSERT_TRUE(*Report(shrunk.CurrentRun()->placement[gone].node, {Exited(shrunk, gone, -15)}));
  Schedule();
  now() += kHour;
  // Replica 0: 3 h 10; the replica that stayed: 2 h 10; the one taken away: 1 h 10.
  const double want_s = (3 * 60 + 10 + 2 * 60 + 10 + 60 + 10) * 60.0;
  auto live = core().Usage(kAna, UsageBy::kUser, 4 * kHour, now());
  ASSERT_TRUE(live.ok());
  double ana_s = 0;
  for (const UsageRow& r : live->rows) ana_s += r.key == "ana" ? r.gpu_seconds : 0;
  EXPECT_DOUBLE_EQ(ana_s, want_s + 2 * 3600.0) << "the elastic run, then the two fillers' hours";
  const Job after = Get(e.id);
  EXPECT_DOUBLE_EQ(RunGpuSecondsIn(*after.CurrentRun(), t0, now()), want_s);
  int64_t past_gpu_ms = 0;
  for (const sched::PastUsage& u : sched::PastUsageOf(after, now())) {
    past_gpu_ms += u.gpu_milli * (u.to - u.from) / kGpuMilli;
  }
  EXPECT_EQ(past_gpu_ms, static_cast<int64_t>(want_s) * kSecond);
  // The run ends: its attained service, and what retirement keeps for fair share.
  for (size_t r = 0; r < after.CurrentRun()->placement.size(); ++r) {
    if (after.CurrentRun()->Departed(static_cast<int32_t>(r))) continue;
    ASSERT_TRUE(
        *Report(after.CurrentRun()->placement[r].node, {Exited(after, static_cast<int>(r), 0)}));
  }
  ASSERT_EQ(Get(e.id).state, JobState::kSucceeded);
  EXPECT_EQ(sched::ToPendingJob(Get(e.id)).attained_ms, static_cast<int64_t>(want_s) * kSecond);
  // What corral_queue_gpu_seconds_total adds at the run's end, times its GPUs per replica.
  const Job done = Get(e.id);
  const corral::Run& ended = *done.CurrentRun();
  EXPECT_EQ(ended.ReplicaMs(ended.ended_at), static_cast<int64_t>(want_s) * kSecond);
  now() += 25 * kHour;
  Retire();
  ASSERT_FALSE(core().state().jobs.count(e.id));
  int64_t retired_gpu_ms = 0;
  for (const auto& [key, u] : core().state().retired_usage) {
    if (key.user == "ana") retired_gpu_ms += u.gpu_ms;
  }
  EXPECT_EQ(retired_gpu_ms, static_cast<int64_t>(want_s) * kSecond + 2 * kHour);
  h_.ExpectDerivedStateRebuilds();
  h_.ExpectReplayEqualsLive();
}

// With rendezvous stores on (--rdzv-host), an elastic job gets torchrun's variables, and the
// head wants its store while its run is live, on the port its id gives.
TEST(ElasticRendezvous, AnElasticJobGetsItsStoreWhileItRuns) {
  CoreConfig config = Config();
  config.rdzv_host = "10.0.0.1";
  config.rdzv_port_lo = 29400;
  config.rdzv_port_hi = 29409;
  CoreHarness h(config);
  RegisterRequest req;
  req.name = "n1";
  req.address = "n1.example:7071";
  req.cpu_milli = 16000;
  req.memory_mb = 64000;
  req.gpus.push_back({0, "n1-gpu0", "Sim", 1000, 0, true});
  auto reg = h.core().Register(kJoin, req, "secret-n1", h.now);
  ASSERT_TRUE(reg.ok()) << reg.status().ToString();
  JobSpec spec;
  spec.command = {"train"};
  spec.replicas = 2;
  spec.min_replicas = 1;
  spec.per_replica.gpu_milli = kGpuMilli;
  auto job = h.core().Submit(kAna, spec, "", h.now);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  const std::string port = std::to_string(29400 + job->id % 10);
  EXPECT_EQ(job->spec.env.at("CORRAL_RDZV_ENDPOINT"), "10.0.0.1:" + port);
  EXPECT_EQ(job->spec.env.at("CORRAL_RDZV_ID"), "corral-job-" + std::to_string(job->id));
  EXPECT_EQ(job->spec.env.at("CORRAL_NNODES"), "1:2");
  EXPECT_EQ(job->spec.env.at("CORRAL_RDZV_CONF"), "is_host=false,last_call_timeout=3");
  EXPECT_TRUE(h.core().RendezvousWanted().empty());  // none before it is placed
  h.core().Schedule(h.now);
  h.Commit();
  ASSERT_EQ(h.core().RendezvousWanted().size(), 1u);
  EXPECT_EQ(std::to_string(h.core().RendezvousWanted().at(job->id)), port);
  h.Crash();  // a recovered head wants the same store
  ASSERT_EQ(h.core().RendezvousWanted().size(), 1u);
  ASSERT_TRUE(h.core().Cancel(kAna, job->id, h.now).ok());
  // A rigid job, or a job that sets its own endpoint, is left as it is.
  JobSpec own = spec;
  own.env["CORRAL_RDZV_ENDPOINT"] = "store.example:1234";
  auto mine = h.core().Submit(kAna, own, "", h.now);
  ASSERT_TRUE(mine.ok());
  EXPECT_EQ(mine->spec.env.at("CORRAL_RDZV_ENDPOINT"), "store.example:1234");
  JobSpec rigid = spec;
  rigid.replicas = 1;  // fits the one node
  rigid.min_replicas = 0;
  auto fixed = h.core().Submit(kAna, rigid, "", h.now);
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(fixed->spec.env.count("CORRAL_RDZV_ENDPOINT"), 0u);
}

TEST(ElasticSpecParse, RangesAndTheirErrorsNameTheField) {
  auto parse = [](const std::string& text) { return ParseJobSpec(Json::parse(text)); };
  auto colon = parse(R"({"command":"x","replicas":"2:4"})");
  ASSERT_TRUE(colon.ok()) << colon.status().ToString();
  EXPECT_EQ(colon->min_replicas, 2);
  EXPECT_EQ(colon->replicas, 4);
  auto object = parse(R"({"command":"x","replicas":{"min":1,"max":3}})");
  ASSERT_TRUE(object.ok());
  EXPECT_TRUE(object->IsElastic());
  EXPECT_EQ(object->min_replicas, 1);
  auto same = parse(R"({"command":"x","replicas":"3:3"})");
  ASSERT_TRUE(same.ok());
  EXPECT_FALSE(same->IsElastic());
  EXPECT_EQ(same->replicas, 3);
  auto backwards = parse(R"({"command":"x","replicas":"4:2"})");
  ASSERT_FALSE(backwards.ok());
  EXPECT_NE(backwards.status().message().find("field 'replicas'"), std::string::npos)
      << backwards.status().message();
  auto bad_max = parse(R"({"command":"x","replicas":{"min":1,"max":"lots"}})");
  ASSERT_FALSE(bad_max.ok());
  EXPECT_NE(bad_max.status().message().find("field 'replicas.max'"), std::string::npos)
      << bad_max.status().message();
  auto extra = parse(R"({"command":"x","replicas":{"min":1,"max":2,"step":1}})");
  ASSERT_FALSE(extra.ok());
  EXPECT_NE(extra.status().message().find("replicas.step"), std::string::npos);
  auto spares = parse(R"({"command":"x","replicas":{"min":1,"max":4,"hot_spares":2}})");
  ASSERT_TRUE(spares.ok()) << spares.status().ToString();
  EXPECT_EQ(spares->hot_spares, 2);
  auto flat = parse(R"({"command":"x","replicas":"2:4","hot_spares":2})");
  ASSERT_TRUE(flat.ok()) << flat.status().ToString();
  EXPECT_EQ(flat->hot_spares, 2);
  auto too_many = parse(R"({"command":"x","replicas":"2:4","hot_spares":3})");
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("field 'hot_spares'"), std::string::npos)
      << too_many.status().message();
  EXPECT_NE(too_many.status().message().find("max - min (2)"), std::string::npos);
  auto rigid = parse(R"({"command":"x","replicas":3,"hot_spares":1})");
  ASSERT_FALSE(rigid.ok());
  EXPECT_NE(rigid.status().message().find("field 'hot_spares'"), std::string::npos);
  auto negative = parse(R"({"command":"x","replicas":{"min":1,"max":2,"hot_spares":-1}})");
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("field 'replicas.hot_spares'"), std::string::npos)
      << negative.status().message();
  auto session = parse(R"({"command":"x","replicas":"1:2","kind":"interactive"})");
  ASSERT_FALSE(session.ok());
  EXPECT_NE(session.status().message().find("field 'replicas'"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Head, Elastic, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "CrashAfterEveryStep" : "Straight";
                         });

}  // namespace
}  // namespace corral::head::core_test
