// `seff JOB` (through the Slurm shims) and `corral eff JOB` against golden outputs, for a
// finished one-node job and a running job of two replicas, each with a known usage series.
// Debian ships no seff (it is a contrib of Slurm's source that slurm-client leaves out), so
// these goldens are ours, laid out as seff's lines are; the live cluster's efficiency_test
// checks the same commands against a real agent's samples.
// After an intended change: CORRAL_UPDATE_GOLDEN=1 ./cli_efficiency_test.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "cli_test_harness.h"
#include "core/usage_series.h"

namespace corral::cli::test {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// `samples` one-a-minute samples from `from`, numbered from `seq`, at fixed figures.
std::vector<UsagePoint> Minutes(int64_t seq, TimeMs from, int samples, int32_t gpu_util,
                                int64_t gpu_mem, int32_t cpu_milli, int64_t mem) {
  std::vector<UsagePoint> out;
  for (int i = 0; i < samples; ++i) {
    out.push_back(
        RawUsagePoint(seq + i, from + (i + 1) * kMinute, gpu_util, gpu_mem, cpu_milli, mem));
  }
  return out;
}

// Job 12 "train": 2 GPUs, 4 CPUs and 8 GiB asked, ran 30 minutes on n1 and succeeded; its GPUs
// busy 85% then 15%, its cgroup at 3.5 then 1.2 CPUs.
Job FinishedJob() {
  Job j = MakeJob(12, JobState::kSucceeded);
  j.spec.name = "train";
  j.spec.per_replica = {.gpu_milli = 2000, .cpu_milli = 4000, .memory_mb = 8192};
  Run r;
  r.attempt = 1;
  r.placement = {{.node = "n1", .gpus = {0, 1}}};
  r.started_at = kT0 + kMinute;
  r.ended_at = r.started_at + 30 * kMinute;
  r.exit_codes = {0};
  r.cpu_ms = 20 * kMinute * 3500 / 1000 + 10 * kMinute * 1200 / 1000;
  ReplicaUsage u{.replica = 0};
  AppendUsage(&u, Minutes(1, r.started_at, 20, 85, 30 * 1024 * kMiB, 3500, 2 * 1024 * kMiB));
  AppendUsage(
      &u, Minutes(21, r.started_at + 20 * kMinute, 10, 15, 12 * 1024 * kMiB, 1200, 1536 * kMiB));
  r.usage = {u};
  j.runs = {r};
  j.exit_code = 0;
  return j;
}

// Job 13: two replicas of one GPU each, running 10 minutes; replica 1's GPU idle.
Job RunningJob() {
  Job j = MakeJob(13, JobState::kRunning);
  j.spec.replicas = 2;
  j.spec.per_replica = {.gpu_milli = 1000, .cpu_milli = 2000, .memory_mb = 4096};
  Run r;
  r.attempt = 1;
  r.placement = {{.node = "n1", .gpus = {2}}, {.node = "n2", .gpus = {0}}};
  r.started_at = kT0;
  r.exit_codes = {kNotExited, kNotExited};
  ReplicaUsage a{.replica = 0}, b{.replica = 1};
  AppendUsage(&a, Minutes(1, kT0, 10, 70, 20 * 1024 * kMiB, 1800, 3 * 1024 * kMiB));
  AppendUsage(&b, Minutes(1, kT0, 10, 0, 512 * kMiB, 100, 256 * kMiB));
  r.usage = {a, b};
  j.runs = {r};
  return j;
}

Node NodeWithGpus(const std::string& name) {
  Node n;
  n.name = name;
  for (int32_t i = 0; i < 4; ++i)
    n.gpus.push_back({.index = i, .model = "H100", .memory_mb = 81920});
  return n;
}

class EffGolden : public ::testing::Test {
 protected:
  void SetUp() override {
    h_.fake->OnPath([](const std::string& path) -> Result<ApiReply> {
      if (path == "/v1/jobs/12") return JsonReply(200, Json{{"job", ToJson(FinishedJob())}});
      if (path == "/v1/jobs/13") return JsonReply(200, Json{{"job", ToJson(RunningJob())}});
      if (path.rfind("/v1/nodes/", 0) == 0) {
        return JsonReply(200, Json{{"node", ToJson(NodeWithGpus(path.substr(10)))}});
      }
      return JsonReply(404, Json{{"error", {{"code", "not_found"}, {"message", "no job"}}}});
    });
  }
  // The output of `command args...`, checked against testdata/NAME (or written there).
  void ExpectGolden(const std::string& name, const std::string& command,
                    const std::vector<std::string>& args) {
    h_.out.str("");
    ASSERT_EQ(h_.Run(command, args), 0) << h_.err.str();
    const std::string path = std::string(CORRAL_CLI_TESTDATA) + "/" + name;
    if (std::getenv("CORRAL_UPDATE_GOLDEN")) {
      std::ofstream(path) << h_.out.str();
      return;
    }
    std::ifstream in(path);
    ASSERT_TRUE(in.good()) << path << " is missing; run with CORRAL_UPDATE_GOLDEN=1";
    std::stringstream want;
    want << in.rdbuf();
    EXPECT_EQ(h_.out.str(), want.str()) << "differs from " << path;
  }
  Harness h_;
};

TEST_F(EffGolden, SeffOfAFinishedJob) { ExpectGolden("seff_finished.txt", "seff", {"12"}); }

TEST_F(EffGolden, SeffOfARunningJobOfTwoReplicas) {
  h_.now = kT0 + 10 * kMinute;
  ExpectGolden("seff_running_replicas.txt", "seff", {"13"});
}

TEST_F(EffGolden, CorralEffOfBoth) {
  ExpectGolden("eff_finished.txt", "eff", {"12"});
  h_.now = kT0 + 10 * kMinute;
  ExpectGolden("eff_running_replicas.txt", "eff", {"13"});
  ExpectGolden("eff_running_replicas.json", "eff", {"13", "-o", "json"});
}

}  // namespace
}  // namespace corral::cli::test
