// Client commands against a fake transport: what they send, what they print, how they exit.
#include "cli/cli.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/commands.h"
#include "core/codec.h"

namespace corral::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr TimeMs kT0 = 1763791234000;  // 2025-11-22 06:00:34 UTC

// Answers each call from a handler; records what was sent.
class FakeTransport : public ApiTransport {
 public:
  struct Sent {
    std::string method, path, body;
  };
  Result<ApiReply> Call(const std::string& method, const std::string& path,
                        const std::string& body) override {
    sent.push_back({method, path, body});
    return handler(sent.back());
  }
  std::vector<Sent> sent;
  std::function<Result<ApiReply>(const Sent&)> handler = [](const Sent&) {
    return Result<ApiReply>(ApiReply{
        404, "application/json", R"({"error":{"code":"not_found","message":"nothing here"}})", {}});
  };
};

ApiReply JsonReply(int status, const Json& body) {
  return ApiReply{status, "application/json", body.dump(), {}};
}

struct Harness {
  std::shared_ptr<FakeTransport> fake = std::make_shared<FakeTransport>();
  std::ostringstream out, err;
  std::map<std::string, std::string> env = {{"USER", "ana"}};
  TimeMs now = kT0 + 10 * kMinute;
  std::vector<DurationMs> sleeps;
  CliContext ctx;

  Harness() {
    ctx.out = &out;
    ctx.err = &err;
    ctx.env = [this](const std::string& k) -> std::optional<std::string> {
      auto it = env.find(k);
      if (it == env.end()) return std::nullopt;
      return it->second;
    };
    ctx.addr = "http://head:7070";
    ctx.connect = [this]() -> Result<std::shared_ptr<ApiTransport>> {
      return std::shared_ptr<ApiTransport>(fake);
    };
    ctx.now = [this] { return now; };
    ctx.sleep = [this](DurationMs d) {
      sleeps.push_back(d);
      now += d;
    };
    ctx.cwd = "/home/ana/proj";
    ctx.utc_times = true;
  }
  int Run(const std::string& cmd, const std::vector<std::string>& args) {
    return RunCommand(cmd, args, ctx);
  }
};

// A job as the head would encode it.
Job MakeJob(JobId id, JobState state) {
  Job j;
  j.id = id;
  j.owner = "ana";
  j.state = state;
  j.submitted_at = kT0;
  j.spec.command = {"python", "train.py"};
  j.events.push_back({kT0, "submitted", ""});
  return j;
}

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("corral_cli_test_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// ---- submit ----

TEST(SubmitTest, FlagsMapToSpecFields) {
  Harness h;
  h.fake->handler = [](const FakeTransport::Sent&) {
    return Result<ApiReply>(JsonReply(201, {{"job", {{"id", 7}}}}));
  };
  int code = h.Run("submit", {"--gpus",
                              "4",
                              "--cpus",
                              "2.5",
                              "--memory",
                              "16G",
                              "--replicas",
                              "2",
                              "--name",
                              "t",
                              "--queue",
                              "org/team",
                              "--time-limit",
                              "2h",
                              "--priority",
                              "5",
                              "--preemptible",
                              "--max-restarts",
                              "3",
                              "--checkpoint-signal",
                              "SIGUSR1",
                              "--grace-period=30s",
                              "--env",
                              "A=1",
                              "--env",
                              "B=x=y",
                              "--workdir",
                              "sub",
                              "--gpu-model",
                              "H100",
                              "--label",
                              "zone=a",
                              "--user",
                              "ana",
                              "--",
                              "python",
                              "train.py",
                              "--lr",
                              "3"});
  ASSERT_EQ(code, 0) << h.err.str();
  EXPECT_EQ(h.out.str(), "Submitted job 7\n");
  ASSERT_EQ(h.fake->sent.size(), 1u);
  EXPECT_EQ(h.fake->sent[0].method, "POST");
  EXPECT_EQ(h.fake->sent[0].path, "/v1/jobs");
  Json body = Json::parse(h.fake->sent[0].body);
  EXPECT_EQ(body["user"], "ana");
  const Json& s = body["spec"];
  EXPECT_EQ(s["gpus"], 4);
  EXPECT_EQ(s["cpus"], 2.5);
  EXPECT_EQ(s["memory"], "16G");
  EXPECT_EQ(s["replicas"], 2);
  EXPECT_EQ(s["name"], "t");
  EXPECT_EQ(s["queue"], "org/team");
  EXPECT_EQ(s["time_limit"], "2h");
  EXPECT_EQ(s["priority"], 5);
  EXPECT_EQ(s["preemptible"], true);
  EXPECT_EQ(s["max_restarts"], 3);
  EXPECT_EQ(s["checkpoint_signal"], "SIGUSR1");
  EXPECT_EQ(s["grace_period"], "30s");
  EXPECT_EQ(s["env"], (Json{{"A", "1"}, {"B", "x=y"}}));
  EXPECT_EQ(s["workdir"], "/home/ana/proj/sub");
  EXPECT_EQ(s["gpu_model"], "H100");
  EXPECT_EQ(s["node_labels"], (Json{{"zone", "a"}}));
  EXPECT_EQ(s["command"], (Json{"python", "train.py", "--lr", "3"}));
}

TEST(SubmitTest, CommandWithoutDashDashParsableAndDefaultWorkdir) {
  Harness h;
  h.fake->handler = [](const FakeTransport::Sent&) {
    return Result<ApiReply>(JsonReply(201, {{"job", {{"id", 42}}}}));
  };
  ASSERT_EQ(h.Run("submit", {"--parsable", "--gpus", "1", "python", "t.py", "--gpus", "9"}), 0)
      << h.err.str();
  EXPECT_EQ(h.out.str(), "42\n");
  Json s = Json::parse(h.fake->sent.at(0).body)["spec"];
  EXPECT_EQ(s["gpus"], 1);
  EXPECT_EQ(s["workdir"], "/home/ana/proj");
  EXPECT_EQ(s["command"], (Json{"python", "t.py", "--gpus", "9"}));
}

TEST(SubmitTest, YamlFileWithOverridingFlags) {
  Harness h;
  const std::string path = TempPath("spec.yaml");
  {
    std::ofstream f(path);
    f << "name: from-file\n"
         "command: [python, a.py, --epochs, 10]\n"
         "gpus: 1\n"
         "queue: research\n"
         "preemptible: true\n"
         "env:\n  X: \"007\"\n  Z: 3\n  LR: 1e-3\n  V: 1.10\n"
         "time_limit: 1:30:00\n"
         "workdir: /data/run\n";
  }
  h.fake->handler = [](const FakeTransport::Sent&) {
    return Result<ApiReply>(JsonReply(201, {{"job", {{"id", 3}}}}));
  };
  ASSERT_EQ(h.Run("submit", {"-f", path, "--gpus", "8", "--env", "Y=2"}), 0) << h.err.str();
  std::filesystem::remove(path);
  Json s = Json::parse(h.fake->sent.at(0).body)["spec"];
  EXPECT_EQ(s["name"], "from-file");
  EXPECT_EQ(s["command"], (Json{"python", "a.py", "--epochs", "10"}));
  EXPECT_EQ(s["gpus"], 8);
  EXPECT_EQ(s["queue"], "research");
  EXPECT_EQ(s["preemptible"], true);
  EXPECT_EQ(s["env"], (Json{{"LR", "1e-3"}, {"V", "1.10"}, {"X", "007"}, {"Y", "2"}, {"Z", "3"}}));
  EXPECT_EQ(s["time_limit"], "1:30:00");
  EXPECT_EQ(s["workdir"], "/data/run");
}

TEST(SubmitTest, JsonFileAndCommandLineCommandWins) {
  Harness h;
  const std::string path = TempPath("spec.json");
  {
    std::ofstream f(path);
    f << R"({"command": "echo from file", "replicas": 2})";
  }
  h.fake->handler = [](const FakeTransport::Sent&) {
    return Result<ApiReply>(JsonReply(201, {{"job", {{"id", 4}}}}));
  };
  ASSERT_EQ(h.Run("submit", {"-f", path, "--", "echo", "cli"}), 0) << h.err.str();
  std::filesystem::remove(path);
  Json s = Json::parse(h.fake->sent.at(0).body)["spec"];
  EXPECT_EQ(s["command"], (Json{"echo", "cli"}));
  EXPECT_EQ(s["replicas"], 2);
}

TEST(SubmitTest, YamlAliasesThatCycleOrExplodeAreRefusedAndNothingIsSent) {
  // Found by fuzz_job_spec_yaml: an alias inside its own anchor made the walk recurse until
  // the stack overflowed; repeated aliases grow exponentially ("billion laughs").
  std::string laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'j'; ++c) {
    laughs += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) laughs += std::string(i ? ", " : "") + "*" + char(c - 1);
    laughs += "]\n";
  }
  laughs += "command: [echo, hi]\n";
  const struct {
    std::string text, want;
  } cases[] = {
      {"command: &a [echo, *a]\n", "nested deeper than 32 levels"},
      {"env: &e {X: *e}\ncommand: x\n", "nested deeper than 32 levels"},
      {laughs, "more than 100000 values"},
  };
  for (const auto& c : cases) {
    Harness h;
    const std::string path = TempPath("alias.yaml");
    {
      std::ofstream f(path);
      f << c.text;
    }
    EXPECT_EQ(h.Run("submit", {"-f", path}), 2) << c.text;
    std::filesystem::remove(path);
    EXPECT_THAT(h.err.str(), HasSubstr(path + ": " + c.want)) << c.text;
    EXPECT_TRUE(h.fake->sent.empty());
  }
  // An alias used as intended still works.
  const std::string path = TempPath("alias-ok.yaml");
  {
    std::ofstream f(path);
    f << "base: &b [python, t.py]\ncommand: *b\n";
  }
  auto spec = ReadSpecFile(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ((*spec)["command"], (Json{"python", "t.py"}));
}

TEST(SubmitTest, BadValuesAreRejectedLocallyNamingTheField) {
  struct Case {
    std::vector<std::string> args;
    std::string want;
  };
  const Case cases[] = {
      {{"--gpus", "-1", "--", "x"}, "gpus"},
      {{"--gpus", "lots", "--", "x"}, "gpus"},
      {{"--replicas", "0", "--", "x"}, "replicas"},
      {{"--time-limit", "5x", "--", "x"}, "time_limit"},
      {{"--memory", "16Q", "--", "x"}, "memory"},
      {{"--checkpoint-signal", "SIGFOO", "--", "x"}, "checkpoint_signal"},
      {{"--queue", "/bad", "--", "x"}, "queue"},
      {{"--env", "=v", "--", "x"}, "--env"},
      {{"--env", "UNSET_VAR_XYZ", "--", "x"}, "--env"},
      {{"--label", "novalue", "--", "x"}, "--label"},
      {{"--gpu", "1", "--", "x"}, "--gpu"},
      {{"--gpus"}, "--gpus"},
      {{"--gpus", "1"}, "no command"},
      {{"-f", "/nonexistent/spec.yaml"}, "/nonexistent/spec.yaml"},
  };
  for (const Case& c : cases) {
    Harness h;
    EXPECT_EQ(h.Run("submit", c.args), 2) << c.args[0];
    EXPECT_THAT(h.err.str(), HasSubstr(c.want)) << c.args[0];
    EXPECT_TRUE(h.fake->sent.empty()) << c.args[0];
  }
}

TEST(SubmitTest, ServerErrorIsPrintedAndExitsOne) {
  Harness h;
  h.fake->handler = [](const FakeTransport::Sent&) {
    return Result<ApiReply>(
        JsonReply(400, {{"error",
                         {{"code", "invalid_argument"},
                          {"message", "needs 16 GPUs per replica; the largest node has 8"}}}}));
  };
  EXPECT_EQ(h.Run("submit", {"--gpus", "16", "--", "x"}), 1);
  EXPECT_THAT(h.err.str(), HasSubstr("needs 16 GPUs per replica; the largest node has 8"));
  EXPECT_EQ(h.out.str(), "");
}

TEST(SubmitTest, ConnectionFailureNamesTheHead) {
  Harness h;
  h.fake->handler = [](const FakeTransport::Sent&) {
    return Result<ApiReply>(Unavailable("POST http://head:7070/v1/jobs: connection refused"));
  };
  EXPECT_EQ(h.Run("submit", {"--", "x"}), 1);
  EXPECT_THAT(h.err.str(), HasSubstr("cannot reach the head at http://head:7070: "));
  EXPECT_THAT(h.err.str(), HasSubstr("connection refused"));
}

TEST(SubmitTest, MissingConfigIsAClearError) {
  Harness h;
  h.ctx.connect = []() -> Result<std::shared_ptr<ApiTransport>> {
    return FailedPrecondition("no head address configured: set CORRAL_ADDR");
  };
  EXPECT_EQ(h.Run("submit", {"--", "x"}), 1);
  EXPECT_THAT(h.err.str(), HasSubstr("CORRAL_ADDR"));
}

// ---- jobs / show ----

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
  Json j1 = ToJson(n1);
  j1["gpus_used"] = 3;
  // What the API adds where an agent measured its GPUs.
  for (int i = 0; i < 4; ++i) j1["gpus"][i]["utilization_percent"] = i * 30;
  Node n2;
  n2.name = "cpu1";
  n2.drain = Drain::kDraining;
  n2.cpu_milli = 8500;
  n2.memory_mb = 1536;
  Json j2 = ToJson(n2);
  j2["gpus_used"] = 0;
  nodes = {j1, j2};
  h.fake->handler = [&](const FakeTransport::Sent& s) {
    EXPECT_EQ(s.path, "/v1/nodes");
    return Result<ApiReply>(JsonReply(200, {{"nodes", nodes}}));
  };
  ASSERT_EQ(h.Run("nodes", {}), 0) << h.err.str();
  EXPECT_EQ(h.out.str(),
            "NAME        STATE     GPUS  MODEL  GPU-UTIL        CPUS  MEMORY  LABELS\n"
            "gpu-node-1  ready     3/4   H100   0%,30%,60%,90%  64    512G    rack=r1,zone=a\n"
            "cpu1        draining  0/0   -      -               8.5   1.5G    -\n");
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
  EXPECT_EQ(Json::parse(h.fake->sent[1].body),
            (Json{{"quota_gpus", 20}, {"limit_gpus", 32}, {"weight", 2.5}}));
  h.fake->sent.clear();
  ASSERT_EQ(h.Run("queues", {"set", "org/team", "--max-grace", "5m"}), 0) << h.err.str();
  EXPECT_EQ(Json::parse(h.fake->sent[1].body)["max_grace_ms"], 300000);
  Harness bad;
  EXPECT_EQ(bad.Run("queues", {"set", "x", "--weight", "-2"}), 2);
  EXPECT_THAT(bad.err.str(), HasSubstr("--weight"));
  EXPECT_EQ(bad.Run("queues", {"set", "x", "--max-grace", "soon"}), 2);
  EXPECT_THAT(bad.err.str(), HasSubstr("--max-grace"));
}

// ---- wait ----

// Serves GET /v1/jobs/ID from a script of states per job (the last one repeats).
struct JobScript {
  std::map<JobId, std::deque<JobState>> states;
  Result<ApiReply> operator()(const FakeTransport::Sent& s) {
    JobId id = std::stoull(s.path.substr(std::string("/v1/jobs/").size()));
    auto& q = states.at(id);
    Job j = MakeJob(id, q.front());
    if (q.front() == JobState::kFailed) j.exit_code = 1;
    if (q.size() > 1) q.pop_front();
    return JsonReply(200, {{"job", ToJson(j)}});
  }
};

TEST(WaitTest, AllSucceededExitsZero) {
  Harness h;
  JobScript script;
  script.states[1] = {JobState::kRunning, JobState::kRunning, JobState::kSucceeded};
  script.states[2] = {JobState::kSucceeded};
  h.fake->handler = [&](const FakeTransport::Sent& s) { return script(s); };
  EXPECT_EQ(h.Run("wait", {"1", "2"}), 0) << h.err.str();
  EXPECT_EQ(h.out.str(), "job 2 succeeded\njob 1 succeeded\n");
  // The first state of each job is read once up front (is it an array?), then polled.
  EXPECT_EQ(h.sleeps.size(), 1u);
}

TEST(WaitTest, OneFailedExitsOne) {
  Harness h;
  JobScript script;
  script.states[1] = {JobState::kRunning, JobState::kSucceeded};
  script.states[2] = {JobState::kPending, JobState::kFailed};
  h.fake->handler = [&](const FakeTransport::Sent& s) { return script(s); };
  EXPECT_EQ(h.Run("wait", {"1", "2"}), 1);
  EXPECT_THAT(h.out.str(), HasSubstr("job 1 succeeded\n"));
  EXPECT_THAT(h.out.str(), HasSubstr("job 2 failed (exit code 1)\n"));
}

TEST(WaitTest, TimeoutExits124) {
  Harness h;
  JobScript script;
  script.states[1] = {JobState::kRunning};
  h.fake->handler = [&](const FakeTransport::Sent& s) { return script(s); };
  EXPECT_EQ(h.Run("wait", {"1", "--timeout", "5s"}), 124);
  EXPECT_THAT(h.err.str(), HasSubstr("timed out"));
  DurationMs slept = 0;
  for (DurationMs d : h.sleeps) slept += d;
  EXPECT_EQ(slept, 5 * kSecond);
}

// An array's elements are read with one listing a round, however many there are; each is
// reported as it ends, by its ARRAY_INDEX name.
// Each round lists only the array's elements that ended since the last ones seen (less a
// margin): O(elements ended), not O(array), a round.
TEST(WaitTest, AnArrayIsReadWithOneListingOfWhatEndedARound) {
  Harness h;
  int listings = 0, singles = 0;
  std::vector<std::string> since;  // each round's ended_since ("" when none)
  auto element = [](JobId id, int32_t index, JobState state, TimeMs ended_at) {
    Job j = MakeJob(id, state);
    j.array_id = 7;
    j.array_index = index;
    j.ended_at = ended_at;
    if (state == JobState::kFailed) j.exit_code = 3;
    return j;
  };
  h.fake->handler = [&](const FakeTransport::Sent& s) -> Result<ApiReply> {
    if (s.path == "/v1/jobs/7") {
      ++singles;
      return JsonReply(200, {{"job", ToJson(element(7, 0, JobState::kRunning, 0))}});
    }
    if (s.path == "/v1/jobs?limit=100000&array=7") {  // naming the array: every element
      return JsonReply(200,
                       {{"jobs", Json::array({ToJson(element(7, 0, JobState::kRunning, 0)),
                                              ToJson(element(8, 1, JobState::kRunning, 0)),
                                              ToJson(element(9, 2, JobState::kRunning, 0))})}});
    }
    const std::string round = "/v1/jobs?limit=100000&array=7&state=succeeded,failed,cancelled";
    if (s.path.rfind(round, 0) == 0) {
      ++listings;
      std::string rest = s.path.substr(round.size());
      since.push_back(rest.rfind("&ended_since=", 0) == 0 ? rest.substr(13) : rest);
      TimeMs from = since.back().empty() ? 0 : std::stoll(since.back());
      // 7_0 ended before the first round; 7_2 fails at 60 s, seen from the third round.
      std::vector<Job> ended = {element(7, 0, JobState::kSucceeded, 50'000)};
      if (listings >= 3) ended.push_back(element(9, 2, JobState::kFailed, 60'000));
      Json jobs = Json::array();
      for (const Job& j : ended) {
        if (j.ended_at >= from) jobs.push_back(ToJson(j));
      }
      return JsonReply(200, {{"jobs", jobs}});
    }
    ++singles;
    return JsonReply(404, {{"error", "unexpected " + s.path}});
  };
  EXPECT_EQ(h.Run("wait", {"7", "--timeout", "10s"}), 124);
  EXPECT_THAT(h.out.str(), HasSubstr("job 7_0 succeeded\n"));
  EXPECT_THAT(h.out.str(), HasSubstr("job 7_2 failed (exit code 3)\n"));
  EXPECT_THAT(h.err.str(), HasSubstr("still not finished: 8"));
  EXPECT_EQ(singles, 1) << "the array's own record once, to know it is one; no element alone";
  EXPECT_EQ(listings, static_cast<int>(h.sleeps.size()) + 1) << "one listing a round";
  ASSERT_GE(since.size(), 4u);
  EXPECT_EQ(since[0], "") << "nothing seen ended yet: every element that ended";
  EXPECT_EQ(since[1], "45000") << "the last end seen, less 5 s";
  EXPECT_EQ(since[2], "45000");
  EXPECT_EQ(since[3], "55000");
}

// ---- cancel ----

TEST(CheckpointDoneTest, ReportsForTheJobItRunsIn) {
  Harness h;
  h.env["CORRAL_JOB_ID"] = "42";
  h.fake->handler = [](const FakeTransport::Sent&) {
    return JsonReply(200, {{"job", ToJson(MakeJob(42, JobState::kRunning))}});
  };
  ASSERT_EQ(h.Run("checkpoint-done", {}), 0) << h.err.str();
  ASSERT_EQ(h.fake->sent.size(), 1u);
  EXPECT_EQ(h.fake->sent[0].method, "POST");
  EXPECT_EQ(h.fake->sent[0].path, "/v1/jobs/42/checkpoint");
  Harness outside;  // not in a job and no ID: a usage error, nothing sent
  EXPECT_EQ(outside.Run("checkpoint-done", {}), 2);
  EXPECT_THAT(outside.err.str(), HasSubstr("CORRAL_JOB_ID"));
  EXPECT_TRUE(outside.fake->sent.empty());
}

TEST(CancelTest, ReportsEachIdAndFailsIfAnyFailed) {
  Harness h;
  h.fake->handler = [](const FakeTransport::Sent& s) {
    if (s.path == "/v1/jobs/5/cancel")
      return Result<ApiReply>(JsonReply(200, {{"job", ToJson(MakeJob(5, JobState::kCancelled))}}));
    return Result<ApiReply>(JsonReply(
        409,
        {{"error", {{"code", "failed_precondition"}, {"message", "job 6 already succeeded"}}}}));
  };
  EXPECT_EQ(h.Run("cancel", {"5", "6"}), 1);
  EXPECT_EQ(h.out.str(), "Cancelled job 5\n");
  EXPECT_EQ(h.err.str(), "corral cancel: job 6: job 6 already succeeded\n");
  ASSERT_EQ(h.fake->sent.size(), 2u);
  EXPECT_EQ(h.fake->sent[0].method, "POST");
}

// ---- logs ----

TEST(LogsTest, FollowUsesNextOffsetUntilTerminalAndDrained) {
  Harness h;
  struct Chunk {
    int64_t offset;
    std::string body;
    int64_t next;
    std::string state;
  };
  std::deque<Chunk> script = {
      {0, "hello\n", 6, "running"},
      {6, "", 6, "running"},
      {6, "world\n", 12, "running"},
      {12, "", 12, "succeeded"},
  };
  h.fake->handler = [&](const FakeTransport::Sent& s) {
    EXPECT_FALSE(script.empty());
    Chunk c = script.front();
    script.pop_front();
    EXPECT_EQ(s.path, "/v1/jobs/9/logs?stream=stderr&replica=1&task=0&max=65536&offset=" +
                          std::to_string(c.offset));
    ApiReply r{200,
               "text/plain",
               c.body,
               {{"x-corral-next-offset", std::to_string(c.next)}, {"x-corral-job-state", c.state}}};
    return Result<ApiReply>(r);
  };
  ASSERT_EQ(h.Run("logs", {"9", "-f", "--stderr", "--replica", "1"}), 0) << h.err.str();
  EXPECT_EQ(h.out.str(), "hello\nworld\n");
  EXPECT_TRUE(script.empty());
  EXPECT_EQ(h.sleeps.size(), 1u);
}

// GET /v1/jobs/ID: a running job whose run has replicas of the given task counts.
Result<ApiReply> RunningJobReply(JobId id, const std::vector<int32_t>& tasks) {
  Job j = MakeJob(id, JobState::kRunning);
  Run run;
  run.attempt = 1;
  run.state = RunState::kRunning;
  for (size_t r = 0; r < tasks.size(); ++r) {
    ReplicaPlacement p;
    p.node = "n" + std::to_string(r);
    p.tasks = tasks[r];
    run.placement.push_back(p);
    run.exit_codes.push_back(kNotExited);
  }
  j.runs.push_back(run);
  return JsonReply(200, {{"job", ToJson(j)}});
}

TEST(LogsTest, WithoutFollowStopsWhenNoMoreData) {
  Harness h;
  h.fake->handler = [](const FakeTransport::Sent& s) {
    if (s.path == "/v1/jobs/9") return RunningJobReply(9, {1});
    bool first = s.path.ends_with("offset=0");
    ApiReply r{200,
               "text/plain",
               first ? "abc" : "",
               {{"x-corral-next-offset", first ? "3" : "3"}, {"x-corral-job-state", "running"}}};
    return Result<ApiReply>(r);
  };
  ASSERT_EQ(h.Run("logs", {"9"}), 0);
  EXPECT_EQ(h.out.str(), "abc");
  EXPECT_EQ(h.fake->sent.size(), 3u);
  EXPECT_TRUE(h.sleeps.empty());
}

// Every task of every replica, line by line with its prefix; a line split across two answers
// is printed whole.
TEST(LogsTest, InterleavesEveryTaskWithAPrefix) {
  Harness h;
  std::map<std::string, std::deque<std::string>> chunks = {
      {"replica=0&task=0", {"a1\na", "2\n"}},
      {"replica=0&task=1", {"b1\n"}},
      {"replica=1&task=0", {"c1\nc2"}},
  };
  std::map<std::string, int64_t> offsets;
  h.fake->handler = [&](const FakeTransport::Sent& s) {
    if (s.path == "/v1/jobs/9") return RunningJobReply(9, {2, 1});
    auto from = s.path.find("replica=");
    std::string key = s.path.substr(from, s.path.find("&max") - from);
    auto& q = chunks.at(key);
    std::string body = q.empty() ? "" : q.front();
    if (!q.empty()) q.pop_front();
    offsets[key] += static_cast<int64_t>(body.size());
    ApiReply r{200,
               "text/plain",
               body,
               {{"x-corral-next-offset", std::to_string(offsets[key])},
                {"x-corral-job-state", "succeeded"}}};
    return Result<ApiReply>(r);
  };
  ASSERT_EQ(h.Run("logs", {"9"}), 0) << h.err.str();
  EXPECT_EQ(h.out.str(), "[r0.t0] a1\n[r0.t0] a2\n[r0.t1] b1\n[r1.t0] c1\n[r1.t0] c2\n");
  Harness bad;
  EXPECT_EQ(bad.Run("logs", {"9", "--task", "x"}), 2);
  EXPECT_THAT(bad.err.str(), HasSubstr("--task"));
}

TEST(LogsTest, FollowRidesOutATransientOutage) {
  Harness h;
  int calls = 0;
  h.fake->handler = [&](const FakeTransport::Sent& s) {
    if (s.path == "/v1/jobs/4") return RunningJobReply(4, {1});
    ++calls;
    if (calls == 1) return Result<ApiReply>(Unavailable("connection reset"));
    if (calls == 2) {
      return Result<ApiReply>(JsonReply(
          503, {{"error", {{"code", "unavailable"}, {"message", "node n1 has no address"}}}}));
    }
    ApiReply r{200,
               "text/plain",
               calls == 3 ? "ok\n" : "",
               {{"x-corral-next-offset", "3"}, {"x-corral-job-state", "succeeded"}}};
    return Result<ApiReply>(r);
  };
  ASSERT_EQ(h.Run("logs", {"-f", "4"}), 0) << h.err.str();
  EXPECT_EQ(h.out.str(), "ok\n");
  EXPECT_EQ(h.sleeps.size(), 2u);
  Harness once;  // without -f an outage is an error at once
  once.fake->handler = [](const FakeTransport::Sent&) {
    return Result<ApiReply>(Unavailable("connection refused"));
  };
  EXPECT_EQ(once.Run("logs", {"4"}), 1);
  EXPECT_THAT(once.err.str(), HasSubstr("cannot reach the head at http://head:7070"));
}

// ---- usage ----

TEST(UsageTest, UnknownCommandAndFlag) {
  Harness h;
  EXPECT_EQ(h.Run("frobnicate", {}), 2);
  EXPECT_THAT(h.err.str(), HasSubstr("unknown command 'frobnicate'"));
  Harness h2;
  EXPECT_EQ(h2.Run("nodes", {"--bogus"}), 2);
  EXPECT_THAT(h2.err.str(), HasSubstr("unknown flag '--bogus'"));
  EXPECT_THAT(h2.err.str(), HasSubstr("usage: corral nodes"));
  EXPECT_TRUE(h2.fake->sent.empty());
}

// ---- config ----

TEST(ConfigTest, TheCaComesFromTheFileOrCorralCa) {
  const std::string dir = TempPath("cfg-ca");
  const std::string path = dir + "/config.json";
  ASSERT_TRUE(WriteClientConfig(path, "https://h:1", "t", "/state/tls/ca.pem").ok());
  std::map<std::string, std::string> env = {{"CORRAL_CONFIG", path}};
  EnvLookup lookup = [&](const std::string& k) -> std::optional<std::string> {
    auto it = env.find(k);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  auto cfg = LoadClientConfig(lookup);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->addr, "https://h:1");
  EXPECT_EQ(cfg->ca, "/state/tls/ca.pem");
  env["CORRAL_CA"] = "/elsewhere/ca.pem";
  cfg = LoadClientConfig(lookup);
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->ca, "/elsewhere/ca.pem");
  std::filesystem::remove_all(dir);
}

TEST(ConfigTest, EnvOverridesFileFieldByField) {
  const std::string dir = TempPath("cfg");
  const std::string path = dir + "/nested/config.json";
  ASSERT_TRUE(WriteClientConfig(path, "http://file:1", "file-token").ok());
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  std::map<std::string, std::string> env = {{"CORRAL_CONFIG", path}};
  EnvLookup lookup = [&](const std::string& k) -> std::optional<std::string> {
    auto it = env.find(k);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  auto cfg = LoadClientConfig(lookup);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->addr, "http://file:1");
  EXPECT_EQ(cfg->token, "file-token");

  env["CORRAL_ADDR"] = "http://env:2/";
  cfg = LoadClientConfig(lookup);
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->addr, "http://env:2");
  EXPECT_EQ(cfg->token, "file-token");

  env["CORRAL_TOKEN"] = "env-token";
  cfg = LoadClientConfig(lookup);
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->token, "env-token");

  // HOME's default path is used when CORRAL_CONFIG is unset.
  env = {{"HOME", dir + "/home"}};
  ASSERT_TRUE(
      WriteClientConfig(dir + "/home/.config/corral/config.json", "http://home:3", "t").ok());
  cfg = LoadClientConfig(lookup);
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->addr, "http://home:3");
  std::filesystem::remove_all(dir);
}

TEST(ConfigTest, MissingConfigSaysHowToSetIt) {
  EnvLookup empty = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  auto cfg = LoadClientConfig(empty);
  ASSERT_FALSE(cfg.ok());
  EXPECT_THAT(cfg.status().message(), HasSubstr("CORRAL_ADDR"));
  EXPECT_THAT(cfg.status().message(), HasSubstr("config.json"));

  const std::string path = TempPath("bad.json");
  {
    std::ofstream f(path);
    f << "not json";
  }
  EnvLookup bad = [&](const std::string& k) -> std::optional<std::string> {
    if (k == "CORRAL_CONFIG") return path;
    return std::nullopt;
  };
  cfg = LoadClientConfig(bad);
  std::filesystem::remove(path);
  ASSERT_FALSE(cfg.ok());
  EXPECT_THAT(cfg.status().message(), HasSubstr(path));
}

}  // namespace
}  // namespace corral::cli
