// corral submit against a fake transport: the spec it sends from flags and files, the errors it
// prints.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "cli/cli_test_harness.h"
#include "core/spec.h"

namespace corral::cli {
namespace {

using namespace corral::cli::test;  // NOLINT: the shared harness
using ::testing::HasSubstr;
using ::testing::Not;

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

TEST(SubmitTest, AReplicaRangeIsAnElasticJob) {
  Harness h;
  h.fake->handler = [](const FakeTransport::Sent&) {
    return Result<ApiReply>(JsonReply(201, {{"job", {{"id", 43}}}}));
  };
  ASSERT_EQ(h.Run("submit", {"--parsable", "--replicas", "2:4", "--spread", "--", "x"}), 0)
      << h.err.str();
  Json s = Json::parse(h.fake->sent.at(0).body)["spec"];
  EXPECT_EQ(s["replicas"], "2:4");
  auto spec = ParseJobSpec(s);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->min_replicas, 2);
  EXPECT_EQ(spec->replicas, 4);
}

TEST(SubmitTest, HotSparesGoWithAReplicaRange) {
  Harness h;
  h.fake->handler = [](const FakeTransport::Sent&) {
    return Result<ApiReply>(JsonReply(201, {{"job", {{"id", 44}}}}));
  };
  ASSERT_EQ(h.Run("submit",
                  {"--parsable", "--replicas", "1:3", "--hot-spares", "2", "--spread", "--", "x"}),
            0)
      << h.err.str();
  Json s = Json::parse(h.fake->sent.at(0).body)["spec"];
  EXPECT_EQ(s["hot_spares"], 2);
  auto spec = ParseJobSpec(s);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->hot_spares, 2);
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

TEST(SubmitTest, DatasetsFromYamlAndFlags) {
  Harness h;
  const std::string path = TempPath("data.yaml");
  std::ofstream(path) << "command: [train]\n"
                         "datasets: [imagenet, {name: cifar, version: 2, mount: /data/c}]\n";
  h.fake->handler = [](const FakeTransport::Sent&) {
    return Result<ApiReply>(JsonReply(201, {{"job", {{"id", 3}}}}));
  };
  ASSERT_EQ(h.Run("submit", {"-f", path, "--dataset", "coco@v1:/coco"}), 0) << h.err.str();
  std::filesystem::remove(path);
  Json s = Json::parse(h.fake->sent.at(0).body)["spec"];
  auto spec = ParseJobSpec(s);
  ASSERT_TRUE(spec.ok()) << spec.status().message() << s.dump();
  ASSERT_EQ(spec->datasets.size(), 3u);
  EXPECT_EQ(spec->datasets[0].name, "imagenet");
  EXPECT_EQ(spec->datasets[1].version, "2");
  EXPECT_EQ(spec->datasets[1].mount, "/data/c");
  EXPECT_EQ(spec->datasets[2].name, "coco");
  EXPECT_EQ(spec->datasets[2].mount, "/coco");
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
      {{"--replicas", "4:2", "--", "x"}, "field 'replicas'"},
      {{"--replicas", "1:x", "--", "x"}, "field 'replicas.max'"},
      {{"--replicas", "1:3", "--hot-spares", "3", "--", "x"}, "field 'hot_spares'"},
      {{"--replicas", "2", "--hot-spares", "1", "--", "x"}, "field 'hot_spares'"},
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

}  // namespace
}  // namespace corral::cli
