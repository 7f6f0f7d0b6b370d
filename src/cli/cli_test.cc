// Client commands against a fake transport: wait, cancel, logs, usage errors and the config.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <deque>
#include <fstream>

#include "cli/cli_test_harness.h"

namespace corral::cli {
namespace {

using namespace corral::cli::test;  // NOLINT: the shared harness
using ::testing::HasSubstr;
using ::testing::Not;

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

// Inside its job, checkpoint-done reports to the job's own head with the job's own credential,
// not to the head the user's config names (another cluster's, perhaps).
TEST(CheckpointDoneTest, InsideItsJobItUsesTheJobsHeadAndCredential) {
  // The head and token a run of checkpoint-done ARGS connected with.
  auto connected_with = [](const std::vector<std::string>& args) {
    Harness h;
    h.env = {{"CORRAL_JOB_ID", "42"},
             {"CORRAL_STEP_HEAD", "http://own-head:7070"},
             {"CORRAL_STEP_TOKEN", "cstep_42_1_x"},
             {"CORRAL_ADDR", "http://other-cluster:7070"},
             {"CORRAL_TOKEN", "users-token"}};
    std::string used;
    h.ctx.connect = [&]() -> Result<std::shared_ptr<ApiTransport>> {
      auto cfg = LoadClientConfig(h.ctx.env);
      if (!cfg.ok()) return cfg.status();
      used = cfg->addr + " " + cfg->token;
      return std::shared_ptr<ApiTransport>(h.fake);
    };
    h.fake->handler = [](const FakeTransport::Sent&) {
      return JsonReply(200, {{"job", ToJson(MakeJob(42, JobState::kRunning))}});
    };
    EXPECT_EQ(h.Run("checkpoint-done", args), 0) << h.err.str();
    return used;
  };
  EXPECT_EQ(connected_with({}), "http://own-head:7070 cstep_42_1_x");
  EXPECT_EQ(connected_with({"42"}), "http://own-head:7070 cstep_42_1_x");
  // Another job's report is the user's: their config.
  EXPECT_EQ(connected_with({"7"}), "http://other-cluster:7070 users-token");
}

// Inside a job and without a config of the user's, commands reach the job's own head.
TEST(ConfigTest, InsideAJobWithoutAConfigTheJobsHeadAndCredentialAreUsed) {
  std::map<std::string, std::string> env = {{"CORRAL_STEP_HEAD", "http://own-head:7070"},
                                            {"CORRAL_STEP_TOKEN", "cstep_1_1_x"}};
  auto cfg = LoadClientConfig([&](const std::string& k) -> std::optional<std::string> {
    auto it = env.find(k);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  });
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->addr, "http://own-head:7070");
  EXPECT_EQ(cfg->token, "cstep_1_1_x");
}

TEST(CancelTest, ReportsEachIdAndFailsIfAnyFailed) {
  Harness h;
  h.fake->handler = [](const FakeTransport::Sent& s) {
    if (s.path == "/v1/jobs/5/cancel")
      return Result<ApiReply>(JsonReply(200, {{"job", ToJson(MakeJob(5, JobState::kCancelled))}}));
    if (s.method == "GET")
      return Result<ApiReply>(JsonReply(200, {{"job", ToJson(MakeJob(6, JobState::kSucceeded))}}));
    return Result<ApiReply>(JsonReply(
        409,
        {{"error", {{"code", "failed_precondition"}, {"message", "job 6 already succeeded"}}}}));
  };
  EXPECT_EQ(h.Run("cancel", {"5", "6"}), 1);
  EXPECT_EQ(h.out.str(), "Cancelled job 5\n");
  EXPECT_EQ(h.err.str(), "corral cancel: job 6: job 6 already succeeded\n");
  ASSERT_EQ(h.fake->sent.size(), 3u);
  EXPECT_EQ(h.fake->sent[0].method, "POST");
}

// Cancelling a job that was already cancelled is what was asked: no error (the Python client's
// cancel is idempotent too).
TEST(CancelTest, AnAlreadyCancelledJobIsNoError) {
  Harness h;
  h.fake->handler = [](const FakeTransport::Sent& s) {
    if (s.method == "GET")
      return Result<ApiReply>(JsonReply(200, {{"job", ToJson(MakeJob(7, JobState::kCancelled))}}));
    return Result<ApiReply>(JsonReply(
        409,
        {{"error", {{"code", "failed_precondition"}, {"message", "job 7 already cancelled"}}}}));
  };
  EXPECT_EQ(h.Run("cancel", {"7"}), 0) << h.err.str();
  EXPECT_EQ(h.out.str(), "Job 7 already cancelled\n");
  EXPECT_EQ(h.err.str(), "");
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
    if (calls == 3) {  // the head reached no agent (its relay's gateway error)
      return Result<ApiReply>(JsonReply(
          502, {{"error", {{"code", "unavailable"}, {"message", "node n1: connection refused"}}}}));
    }
    ApiReply r{200,
               "text/plain",
               calls == 4 ? "ok\n" : "",
               {{"x-corral-next-offset", "3"}, {"x-corral-job-state", "succeeded"}}};
    return Result<ApiReply>(r);
  };
  ASSERT_EQ(h.Run("logs", {"-f", "4"}), 0) << h.err.str();
  EXPECT_EQ(h.out.str(), "ok\n");
  EXPECT_EQ(h.sleeps.size(), 3u);
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

TEST(ConfigTest, WithoutATokenTheHeadsLocalSocketIsUsed) {
  const std::string dir = TempPath("cfg-socket");
  std::filesystem::create_directories(dir);
  const std::string socket = dir + "/corral.sock";
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", socket.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  std::map<std::string, std::string> env = {{"CORRAL_SOCKET", socket}, {"HOME", dir}};
  EnvLookup lookup = [&](const std::string& k) -> std::optional<std::string> {
    auto it = env.find(k);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  auto cfg = LoadClientConfig(lookup);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->addr, "unix://" + socket);
  EXPECT_EQ(cfg->token, "");

  // A token means TCP as before; so does an address given in CORRAL_ADDR.
  env["CORRAL_TOKEN"] = "t";
  env["CORRAL_ADDR"] = "http://h:1";
  cfg = LoadClientConfig(lookup);
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->addr, "http://h:1");
  EXPECT_EQ(cfg->token, "t");
  env.erase("CORRAL_TOKEN");
  cfg = LoadClientConfig(lookup);
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->addr, "http://h:1");
  // Asked for by address, the socket gets no token, whatever is configured.
  env["CORRAL_ADDR"] = "unix://" + socket;
  env["CORRAL_TOKEN"] = "t";
  cfg = LoadClientConfig(lookup);
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->addr, "unix://" + socket);
  EXPECT_EQ(cfg->token, "");
  // No socket there: the usual message.
  env = {{"CORRAL_SOCKET", dir + "/absent.sock"}, {"HOME", dir}};
  cfg = LoadClientConfig(lookup);
  ASSERT_FALSE(cfg.ok());
  EXPECT_THAT(cfg.status().message(), HasSubstr("local socket"));
  ::close(fd);
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
