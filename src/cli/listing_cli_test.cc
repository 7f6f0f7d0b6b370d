// corral jobs, show, nodes and queues against a fake transport: the tables and JSON they print.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "cli/cli_test_harness.h"

namespace corral::cli {
namespace {

using namespace corral::cli::test;  // NOLINT: the shared harness
using ::testing::HasSubstr;
using ::testing::Not;

std::vector<Job> SampleJobs() {
  Job pending = MakeJob(1, JobState::kPending);
  pending.spec.name = "sweep";
  pending.spec.per_replica.gpu_milli = 8000;
  pending.pending_reason = "waiting for 8 GPUs on one node";
  Job running = MakeJob(2, JobState::kRunning);
  running.spec.name = "ddp";
  running.spec.queue = "org/team";
  running.spec.replicas = 2;
  running.spec.per_replica.gpu_milli = 4000;
  running.owner = "bo";
  Run r;
  r.attempt = 1;
  r.state = RunState::kRunning;
  r.scheduled_at = kT0 + kMinute;
  r.started_at = kT0 + 2 * kMinute;
  r.placement = {{"n1", {0, 1, 2, 3}}, {"n2", {0, 1, 2, 3}}};
  running.runs.push_back(r);
  Job failed = MakeJob(3, JobState::kFailed);
  failed.exit_code = 3;
  Run fr;
  fr.attempt = 1;
  fr.state = RunState::kFailed;
  fr.started_at = kT0;
  fr.ended_at = kT0 + 75 * kSecond;
  fr.placement = {{"n3", {}}};
  fr.exit_codes = {3};
  failed.runs.push_back(fr);
  failed.ended_at = fr.ended_at;
  return {pending, running, failed};
}

TEST(JobsTest, TableFromCannedJson) {
  Harness h;
  std::vector<Job> jobs = SampleJobs();
  h.fake->handler = [&](const FakeTransport::Sent& s) {
    Json page = Json::array();
    Json next = nullptr;
    if (s.path.find("after=") == std::string::npos) {  // two pages: ids 1-2, then 3
      page = {ToJson(jobs[0]), ToJson(jobs[1])};
      next = 2;
    } else {
      page = {ToJson(jobs[2])};
    }
    return Result<ApiReply>(JsonReply(200, {{"jobs", page}, {"next_after", next}}));
  };
  ASSERT_EQ(h.Run("jobs", {"--queue", "org/team"}), 0) << h.err.str();
  // The exact layout is pinned by RenderedTableIsAligned; here: both pages, in order.
  EXPECT_EQ(h.out.str(), RenderJobsTable(jobs, h.now));
  EXPECT_THAT(h.out.str(), HasSubstr("\n3   -"));
  ASSERT_EQ(h.fake->sent.size(), 2u);
  EXPECT_THAT(h.fake->sent[0].path, HasSubstr("queue=org%2Fteam"));
  EXPECT_THAT(h.fake->sent[1].path, HasSubstr("after=2"));
}

// `corral jobs` folds an array into one line; --expand lists each element.
TEST(JobsTest, ArraysFoldUnlessExpanded) {
  Harness h;
  std::vector<Job> elements;
  for (int i = 0; i < 3; ++i) {
    Job e = SampleJobs()[0];
    e.id = 10 + i;
    e.array_id = 10;
    e.array_index = i;
    elements.push_back(e);
  }
  h.fake->handler = [&](const FakeTransport::Sent&) {
    Json page = Json::array();
    for (const Job& e : elements) page.push_back(ToJson(e));
    return Result<ApiReply>(JsonReply(200, {{"jobs", page}, {"next_after", nullptr}}));
  };
  ASSERT_EQ(h.Run("jobs", {}), 0) << h.err.str();
  EXPECT_EQ(h.out.str(), RenderJobsTable(elements, h.now, false));
  std::string folded = h.out.str();
  h.out.str("");
  ASSERT_EQ(h.Run("jobs", {"--expand"}), 0) << h.err.str();
  EXPECT_EQ(h.out.str(), RenderJobsTable(elements, h.now, true));
  EXPECT_NE(h.out.str(), folded);
  EXPECT_THAT(h.out.str(), HasSubstr("10_2"));
}

TEST(JobsTest, RenderedTableIsAligned) {
  EXPECT_EQ(
      RenderJobsTable(SampleJobs(), kT0 + 10 * kMinute),
      "ID  NAME   USER  QUEUE     STATE    GPUS  NODES  TIME    REASON\n"
      "1   sweep  ana   default   pending  8     -      10m00s  waiting for 8 GPUs on one node\n"
      "2   ddp    bo    org/team  running  8     n1,n2  8m00s\n"
      "3   -      ana   default   failed   0     n3     1m15s   exit 3\n");
}

TEST(JobsTest, LimitKeepsNewestAndJsonOutput) {
  Harness h;
  std::vector<Job> jobs = SampleJobs();
  h.fake->handler = [&](const FakeTransport::Sent&) {
    Json page = {ToJson(jobs[0]), ToJson(jobs[1]), ToJson(jobs[2])};
    return Result<ApiReply>(JsonReply(200, {{"jobs", page}, {"next_after", nullptr}}));
  };
  ASSERT_EQ(h.Run("jobs", {"--limit", "2", "-o", "json", "--state", "running,failed"}), 0)
      << h.err.str();
  Json out = Json::parse(h.out.str());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0]["id"], 2);
  EXPECT_EQ(out[1]["id"], 3);
  EXPECT_THAT(h.fake->sent.at(0).path, HasSubstr("state=running,failed"));
}

TEST(JobsTest, ListsRecentlyEndedJobsUnlessAskedForAllOrAnotherWindow) {
  Harness h;
  h.fake->handler = [](const FakeTransport::Sent&) {
    return Result<ApiReply>(JsonReply(200, {{"jobs", Json::array()}, {"next_after", nullptr}}));
  };
  ASSERT_EQ(h.Run("jobs", {}), 0) << h.err.str();
  EXPECT_THAT(h.fake->sent.at(0).path, HasSubstr("ended_since=" + std::to_string(h.now - kHour)));
  ASSERT_EQ(h.Run("jobs", {"--since", "2d"}), 0) << h.err.str();
  EXPECT_THAT(h.fake->sent.at(1).path,
              HasSubstr("ended_since=" + std::to_string(h.now - 48 * kHour)));
  ASSERT_EQ(h.Run("jobs", {"--all"}), 0) << h.err.str();
  EXPECT_THAT(h.fake->sent.at(2).path, Not(HasSubstr("ended_since")));
  EXPECT_EQ(h.Run("jobs", {"--all", "--since", "1h"}), 2);
  EXPECT_EQ(h.Run("jobs", {"--since", "soon"}), 2);
  EXPECT_EQ(h.fake->sent.size(), 3u);
}

// A requeued job waits again: the node of its ended run is not where it is.
TEST(JobsTest, ARequeuedPendingJobShowsNoNode) {
  Job requeued = MakeJob(4, JobState::kPending);
  corral::Run old;
  old.attempt = 1;
  old.state = RunState::kPreempted;
  old.placement = {{"n7", {0}}};
  old.exit_codes = {-15};
  requeued.runs.push_back(old);
  std::string table = RenderJobsTable({requeued}, kT0);
  EXPECT_THAT(table, Not(HasSubstr("n7"))) << table;
}

// `corral jobs --start`: each pending job's estimate, marked where it rests on predictions.
TEST(JobsTest, StartColumnMarksEstimatesThatAreLessThanSure) {
  std::vector<Job> jobs;
  for (auto c :
       {EstimateConfidence::kHigh, EstimateConfidence::kMedium, EstimateConfidence::kLow}) {
    Job j = MakeJob(static_cast<JobId>(jobs.size() + 1), JobState::kPending);
    j.estimated_start = kT0 + 5 * kMinute;
    j.estimated_nodes = {"n1"};
    j.estimate_confidence = c;
    jobs.push_back(j);
  }
  Job none = MakeJob(4, JobState::kPending);
  jobs.push_back(none);
  std::string table = RenderJobsTable(jobs, kT0, false, /*start=*/true);
  EXPECT_THAT(table, HasSubstr("in 5m00s (medium)")) << table;
  EXPECT_THAT(table, HasSubstr("in 5m00s (low)")) << table;
  EXPECT_THAT(table, HasSubstr("N/A")) << table;
  EXPECT_THAT(table, Not(HasSubstr("(high)"))) << table;
}

// An elastic job listed: a REPLICAS column with its size now and its range; its GPUs are
// those its replicas hold now.
TEST(JobsTest, ElasticJobsShowTheirSizeAndRange) {
  Job elastic = MakeJob(5, JobState::kRunning);
  elastic.spec.replicas = 4;
  elastic.spec.min_replicas = 2;
  elastic.spec.per_replica.gpu_milli = 8000;
  corral::Run run;
  run.attempt = 1;
  run.state = RunState::kRunning;
  run.placement = {{"n1", {0}}, {"n2", {0}}, {"n3", {0}}, {"n4", {0}}};
  run.departed = {3};  // grew to four, then gave one back
  run.exit_codes = {kNotExited, kNotExited, kNotExited, -15};
  elastic.runs.push_back(run);
  Job waiting = MakeJob(6, JobState::kPending);
  waiting.spec.replicas = 3;
  waiting.spec.min_replicas = 1;
  std::string table = RenderJobsTable({elastic, waiting}, kT0);
  EXPECT_THAT(table, HasSubstr("REPLICAS")) << table;
  EXPECT_THAT(table, HasSubstr("3/2:4")) << table;
  EXPECT_THAT(table, HasSubstr(" 24 ")) << table;  // 3 x 8 GPUs held, not 4 x 8
  EXPECT_THAT(table, Not(HasSubstr(" 32 "))) << table;
  EXPECT_THAT(table, HasSubstr("0/1:3")) << table;
  // Without elastic jobs the table has no such column.
  waiting.spec.min_replicas = 0;
  EXPECT_THAT(RenderJobsTable({waiting}, kT0), Not(HasSubstr("REPLICAS")));
}

// A replica still running has no exit code to print (its slot holds kNotExited).
TEST(ShowTest, ARunningReplicaShowsNoExitCode) {
  Job running = SampleJobs()[1];
  running.runs.back().exit_codes = {kNotExited, 0};
  std::string text = RenderJob(running, kT0 + 10 * kMinute, true);
  EXPECT_THAT(text, HasSubstr("replica 0: n1  GPUs 0,1,2,3\n")) << text;
  EXPECT_THAT(text, HasSubstr("replica 1: n2  GPUs 0,1,2,3  exit 0\n")) << text;
  EXPECT_THAT(text, Not(HasSubstr("killed by"))) << text;
}

TEST(JobsTest, BadStateIsAUsageError) {
  Harness h;
  EXPECT_EQ(h.Run("jobs", {"--state", "runing"}), 2);
  EXPECT_THAT(h.err.str(), HasSubstr("runing"));
  EXPECT_TRUE(h.fake->sent.empty());
}

TEST(ShowTest, HumanBlockAndJson) {
  Harness h;
  Job j = SampleJobs()[1];
  j.events.push_back({kT0 + 2 * kMinute, "running", "all replicas started"});
  h.fake->handler = [&](const FakeTransport::Sent& s) {
    EXPECT_EQ(s.path, "/v1/jobs/2");
    return Result<ApiReply>(JsonReply(200, {{"job", ToJson(j)}}));
  };
  ASSERT_EQ(h.Run("show", {"2"}), 0) << h.err.str();
  const std::string text = h.out.str();
  EXPECT_THAT(text, HasSubstr("Job 2 (ddp): running\n"));
  EXPECT_THAT(text, HasSubstr("  owner:             bo\n"));
  EXPECT_THAT(text, HasSubstr("  submitted:         2025-11-22 06:00:34 (10m00s ago)\n"));
  EXPECT_THAT(text, HasSubstr("  command:           python train.py\n"));
  EXPECT_THAT(text, HasSubstr("2 replicas x (4 GPUs, 1 CPU, memory -)"));
  EXPECT_THAT(text, HasSubstr("  2.1  running  started 2025-11-22 06:02:34\n"));
  EXPECT_THAT(text, HasSubstr("    replica 1: n2  GPUs 0,1,2,3\n"));
  EXPECT_THAT(text, HasSubstr("  2025-11-22 06:02:34  running  all replicas started\n"));

  Harness hj;
  hj.fake->handler = h.fake->handler;
  ASSERT_EQ(hj.Run("show", {"-o", "json", "2"}), 0);
  EXPECT_EQ(Json::parse(hj.out.str()), ToJson(j));
}

TEST(ShowTest, NotFoundPrintsServerMessage) {
  Harness h;
  h.fake->handler = [](const FakeTransport::Sent&) {
    return Result<ApiReply>(
        JsonReply(404, {{"error", {{"code", "not_found"}, {"message", "job 99 not found"}}}}));
  };
  EXPECT_EQ(h.Run("show", {"99"}), 1);
  EXPECT_EQ(h.err.str(), "corral show: job 99 not found\n");
  Harness h2;
  EXPECT_EQ(h2.Run("show", {"abc"}), 2);
}

// ---- nodes / queues ----

TEST(NodesTest, TableFromCannedJson) {
  Harness h;
  Json nodes = Json::array();
  Node n1;
  n1.name = "gpu-node-1";
  n1.cpu_milli = 64000;
  n1.memory_mb = 512 * 1024;
  n1.labels = {{"rack", "r1"}, {"zone", "a"}};
  for (int i = 0; i < 4; ++i)
    n1.gpus.push_back({i, "u" + std::to_string(i), "H100", 81920, i / 2, true});
  n1.gpu_drains[3] = GpuDrain{.source = DrainSource::kHealth, .reason = "critical: Xid 79"};
  // What the API answers: the record, with what the agent measured of its GPUs beside it.
  NodeView v1{.node = n1, .gpus_used = 3};
  for (int i = 0; i < 4; ++i) {
    GpuSample s{.index = i, .utilization_percent = i * 30};
    s.check = 1;
    s.health = i == 1 ? GpuHealth::kWarn : GpuHealth::kOk;
    v1.gpu_samples.push_back(s);
  }
  Json j1 = ToJson(v1);
  Node n2;
  n2.name = "cpu1";
  n2.drain = Drain::kDraining;
  n2.cpu_milli = 8500;
  n2.memory_mb = 1536;
  Json j2 = ToJson(NodeView{.node = n2});
  nodes = {j1, j2};
  h.fake->handler = [&](const FakeTransport::Sent& s) {
    EXPECT_EQ(s.path, "/v1/nodes");
    return Result<ApiReply>(JsonReply(200, {{"nodes", nodes}}));
  };
  ASSERT_EQ(h.Run("nodes", {}), 0) << h.err.str();
  EXPECT_EQ(h.out.str(),
            "NAME        STATE     GPUS  MODEL  GPU-UTIL        GPU-HEALTH                 CPUS  "
            "MEMORY  LABELS\n"
            "gpu-node-1  ready     3/4   H100   0%,30%,60%,90%  ok,warn,ok,drained:health  64    "
            "512G    rack=r1,zone=a\n"
            "cpu1        draining  0/0   -      -               -                          8.5   "
            "1.5G    -\n");
}

TEST(NodesTest, SharedGpusShowTheirMilliGpusAndHolders) {
  Harness h;
  Node n;
  n.name = "n1";
  n.cpu_milli = 8000;
  n.memory_mb = 1024;
  for (int i = 0; i < 2; ++i) n.gpus.push_back({i, "u", "T4", 15360, 0, true});
  Json j = ToJson(n);
  j["gpus_used"] = 1;
  j["gpus"][1]["shares"] = Json::array({{{"job", 7}, {"owner", "ana"}, {"milli", 500}},
                                        {{"job", 8}, {"owner", "bob"}, {"milli", 250}}});
  j["gpus"][1]["shared_milli"] = 750;
  h.fake->handler = [&](const FakeTransport::Sent&) {
    return Result<ApiReply>(JsonReply(200, {{"nodes", Json::array({j})}}));
  };
  ASSERT_EQ(h.Run("nodes", {}), 0) << h.err.str();
  EXPECT_NE(h.out.str().find("1/2 (shared 1:750m/2)"), std::string::npos) << h.out.str();
}

// The API names the reservation a node is in now: the STATE column says maint (a maintenance
// window) or reserved, after any admin state; `nodes show` names it.
TEST(NodesTest, ANodeInsideAReservationShowsMaintOrReserved) {
  Harness h;
  auto view = [](const std::string& name, Drain drain, const std::string& reservation, bool maint) {
    Node n;
    n.name = name;
    n.drain = drain;
    return ToJson(NodeView{.node = n, .reservation = reservation, .maintenance = maint});
  };
  Json nodes =
      Json::array({view("a", Drain::kNone, "m1", true), view("b", Drain::kNone, "train", false),
                   view("c", Drain::kDraining, "m1", true), view("d", Drain::kNone, "", false)});
  h.fake->handler = [&](const FakeTransport::Sent&) {
    return Result<ApiReply>(JsonReply(200, {{"nodes", nodes}}));
  };
  ASSERT_EQ(h.Run("nodes", {}), 0) << h.err.str();
  std::string out = h.out.str();
  EXPECT_NE(out.find("\na     maint "), std::string::npos) << out;
  EXPECT_NE(out.find("\nb     reserved "), std::string::npos) << out;
  EXPECT_NE(out.find("\nc     draining+maint "), std::string::npos) << out;
  EXPECT_NE(out.find("\nd     ready "), std::string::npos) << out;
  h.out.str("");
  ASSERT_EQ(h.Run("nodes", {"show", "a"}), 0) << h.err.str();
  EXPECT_NE(h.out.str().find("  maintenance window m1 "), std::string::npos) << h.out.str();
}

// `nodes drain NODE --reason TEXT` sends the reason; `nodes show` prints it.
TEST(NodesTest, DrainTakesAReasonAndShowPrintsIt) {
  Harness h;
  Node n;
  n.name = "e";
  n.drain = Drain::kDrained;
  n.drain_reason = "drained by admin: fan failing";
  h.fake->handler = [&](const FakeTransport::Sent& s) {
    if (s.method == "POST") return Result<ApiReply>(JsonReply(200, {{"node", ToJson(n)}}));
    return Result<ApiReply>(
        JsonReply(200, {{"nodes", Json::array({ToJson(NodeView{.node = n})})}}));
  };
  ASSERT_EQ(h.Run("nodes", {"drain", "e", "--reason", "fan failing"}), 0) << h.err.str();
  ASSERT_EQ(h.fake->sent.size(), 1u);
  EXPECT_EQ(h.fake->sent[0].path, "/v1/nodes/e/drain");
  EXPECT_EQ(Json::parse(h.fake->sent[0].body)["reason"], "fan failing");
  EXPECT_EQ(h.out.str(), "Node e: drained\n");
  h.out.str("");
  ASSERT_EQ(h.Run("nodes", {"show", "e"}), 0) << h.err.str();
  EXPECT_NE(h.out.str().find("\n  drained by admin: fan failing\n"), std::string::npos)
      << h.out.str();
  EXPECT_EQ(h.Run("nodes", {"undrain", "e", "--reason", "x"}), 2) << "a reason goes with drain";
}

// A drained node whose agent is lost stays drained: both show, in the table and in `nodes show`.
TEST(NodesTest, ADrainedNodeThatGoesDownShowsBoth) {
  Harness h;
  Node n;
  n.name = "e";
  n.drain = Drain::kDrained;
  n.liveness = Liveness::kDown;
  Json nodes = Json::array({ToJson(NodeView{.node = n})});
  h.fake->handler = [&](const FakeTransport::Sent&) {
    return Result<ApiReply>(JsonReply(200, {{"nodes", nodes}}));
  };
  ASSERT_EQ(h.Run("nodes", {}), 0) << h.err.str();
  EXPECT_NE(h.out.str().find("\ne     drained+down "), std::string::npos) << h.out.str();
  h.out.str("");
  ASSERT_EQ(h.Run("nodes", {"show", "e"}), 0) << h.err.str();
  EXPECT_NE(h.out.str().find("Node e: drained+down\n"), std::string::npos) << h.out.str();
}

TEST(QueuesTest, ATreeShowsParentsAndEachSubtreesUseAgainstItsQuota) {
  Harness h;
  auto q = [](const char* name, int quota, int used) {
    return Json{
        {"name", name},      {"quota_gpus", quota}, {"limit_gpus", -1},           {"weight", 1},
        {"used_gpus", used}, {"pending", 0},        {"running", used > 0 ? 1 : 0}};
  };
  Json queues = {q("org-x", 1, 1), q("org", 8, 0), q("org/b", 2, 2), q("org/a", 4, 3),
                 q("org/a/x", 2, 1)};
  h.fake->handler = [&](const FakeTransport::Sent&) {
    return Result<ApiReply>(JsonReply(200, {{"queues", queues}}));
  };
  ASSERT_EQ(h.Run("queues", {}), 0) << h.err.str();
  EXPECT_EQ(h.out.str(),
            "NAME     PARENT  QUOTA  LIMIT  WEIGHT  USED  PENDING  RUNNING  SUBTREE_USED/QUOTA\n"
            "org      -       8      -      1       0     0        0        6/8\n"
            "org/a    org     4      -      1       3     0        1        4/4\n"
            "org/a/x  org/a   2      -      1       1     0        1        -\n"
            "org/b    org     2      -      1       2     0        1        -\n"
            "org-x    -       1      -      1       1     0        1        -\n");
}

TEST(QueuesTest, TableAndSetMergesCurrentValues) {
  Harness h;
  Json queues = {{{"name", "default"},
                  {"quota_gpus", 0},
                  {"limit_gpus", -1},
                  {"weight", 1},
                  {"used_gpus", 2},
                  {"pending", 1},
                  {"running", 1}},
                 {{"name", "org/team"},
                  {"quota_gpus", 16},
                  {"limit_gpus", 32},
                  {"weight", 2.5},
                  {"used_gpus", 12},
                  {"pending", 40},
                  {"running", 3}}};
  h.fake->handler = [&](const FakeTransport::Sent& s) {
    if (s.method == "PUT") {
      Json q = queues[1];
      Json b = Json::parse(s.body);
      for (auto it = b.begin(); it != b.end(); ++it) q[it.key()] = it.value();
      return Result<ApiReply>(JsonReply(200, {{"queue", q}}));
    }
    return Result<ApiReply>(JsonReply(200, {{"queues", queues}}));
  };
  ASSERT_EQ(h.Run("queues", {}), 0) << h.err.str();
  EXPECT_EQ(h.out.str(),
            "NAME      QUOTA  LIMIT  WEIGHT  USED  PENDING  RUNNING\n"
            "default   0      -      1       2     1        1\n"
            "org/team  16     32     2.5     12    40       3\n");
  h.fake->sent.clear();
  ASSERT_EQ(h.Run("queues", {"set", "org/team", "--quota", "20"}), 0) << h.err.str();
  ASSERT_EQ(h.fake->sent.size(), 2u);
  EXPECT_EQ(h.fake->sent[1].method, "PUT");
  EXPECT_EQ(h.fake->sent[1].path, "/v1/queues/org/team");
  // The whole queue as it is, with the one change: nothing the listing carried is lost, and
  // only the queue's own settings are sent (not its name, nor its use).
  Json put = Json::parse(h.fake->sent[1].body);
  EXPECT_EQ(put["quota_gpus"], 20);
  EXPECT_EQ(put["limit_gpus"], 32);
  EXPECT_EQ(put["weight"], 2.5);
  for (const char* derived : {"name", "used_gpus", "pending", "running"}) {
    EXPECT_FALSE(put.contains(derived)) << derived;
  }
  h.fake->sent.clear();
  ASSERT_EQ(h.Run("queues", {"set", "org/team", "--max-grace", "5m"}), 0) << h.err.str();
  EXPECT_EQ(Json::parse(h.fake->sent[1].body)["max_grace_ms"], 300000);
  h.fake->sent.clear();
  ASSERT_EQ(h.Run("queues", {"set", "org/team", "--max-wait", "6h"}), 0) << h.err.str();
  EXPECT_EQ(Json::parse(h.fake->sent[1].body)["max_wait_ms"], 6 * 3600 * 1000);
  EXPECT_NE(h.out.str().find("MAX_WAIT"), std::string::npos) << h.out.str();
  EXPECT_NE(h.out.str().find("6:00:00"), std::string::npos) << h.out.str();
  // Settings the flags do not name are kept, whatever they are.
  queues[1]["idle_timeout_ms"] = 600000;
  queues[1]["allowed_users"] = {"ana"};
  queues[1]["gpu_sharing"] = false;
  h.fake->sent.clear();
  ASSERT_EQ(h.Run("queues", {"set", "org/team", "--weight", "3"}), 0) << h.err.str();
  put = Json::parse(h.fake->sent[1].body);
  EXPECT_EQ(put["weight"], 3);
  EXPECT_EQ(put["quota_gpus"], 16);
  EXPECT_EQ(put["idle_timeout_ms"], 600000);
  EXPECT_EQ(put["allowed_users"], Json({"ana"}));
  EXPECT_EQ(put["gpu_sharing"], false);
  // An answer the CLI cannot read is an error, not a half-drawn table.
  Harness broken;
  broken.fake->handler = [&](const FakeTransport::Sent&) {
    return Result<ApiReply>(JsonReply(200, {{"queues", {{{"quota_gpus", 1}}}}}));
  };
  EXPECT_EQ(broken.Run("queues", {}), 1);
  EXPECT_THAT(broken.err.str(), HasSubstr("name"));
  Harness bad;
  EXPECT_EQ(bad.Run("queues", {"set", "x", "--weight", "-2"}), 2);
  EXPECT_THAT(bad.err.str(), HasSubstr("--weight"));
  EXPECT_EQ(bad.Run("queues", {"set", "x", "--max-grace", "soon"}), 2);
  EXPECT_THAT(bad.err.str(), HasSubstr("--max-grace"));
  EXPECT_EQ(bad.Run("queues", {"set", "x", "--max-wait", "soon"}), 2);
  EXPECT_THAT(bad.err.str(), HasSubstr("--max-wait"));
  EXPECT_EQ(bad.Run("queues", {"set", "x", "--quota", "1.5"}), 2);
  EXPECT_THAT(bad.err.str(), HasSubstr("--quota: got \"1.5\", want a whole number of GPUs"));
  EXPECT_EQ(bad.Run("queues", {"set", "x", "--limit", "-3"}), 2);
  EXPECT_THAT(bad.err.str(), HasSubstr("--limit: got \"-3\""));
  EXPECT_EQ(bad.Run("queues", {"set", "x", "--max-interactive-gpus-per-user", "x"}), 2);
  EXPECT_THAT(bad.err.str(), HasSubstr("--max-interactive-gpus-per-user"));
  EXPECT_EQ(bad.Run("queues", {"set", "x", "--gpu-sharing", "maybe"}), 2);
  EXPECT_THAT(bad.err.str(), HasSubstr("--gpu-sharing: got \"maybe\", want on or off"));
  // A good flag beside a bad one sends nothing either.
  EXPECT_EQ(bad.Run("queues", {"set", "x", "--quota", "4", "--idle-timeout", "later"}), 2);
  EXPECT_THAT(bad.err.str(), HasSubstr("--idle-timeout"));
  EXPECT_TRUE(bad.fake->sent.empty()) << "bad input reached the head";
}

// ---- wait ----

// Serves GET /v1/jobs/ID from a script of states per job (the last one repeats).

}  // namespace
}  // namespace corral::cli
