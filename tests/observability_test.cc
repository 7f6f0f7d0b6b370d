// The head's and an agent's /metrics on a live cluster: Prometheus' own linter accepts them,
// and the figures follow what the cluster did; simulated GPU use reaches `corral nodes`, and
// the DCGM job mapping files follow the runs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cluster_fixture.h"

namespace corral::testing {
namespace {

using Json = nlohmann::json;

std::string Metrics(const LocalCluster& c) {
  return RunCommand({"/usr/bin/curl", "-sf", c.addr() + "/metrics"}).out;
}

TEST(Observability, HeadMetricsPassPromtoolAndCountWhatHappened) {
  if (access("/usr/bin/promtool", X_OK) != 0) {
    GTEST_SKIP()
        << "promtool not installed (Debian package prometheus; scripts/setup.sh installs it)";
  }
  LocalCluster c("metrics", 1, 2);
  std::string id = c.Submit({"--gpus", "1", "--", "true"});
  ASSERT_EQ(c.Corral({"wait", id, "--timeout", "30s"}).exit_code, 0);
  c.Corral({"jobs"});
  std::string text = Metrics(c);
  ASSERT_FALSE(text.empty());
  std::string file = c.dir() + "/metrics.txt";
  std::ofstream(file) << text;
  auto lint = RunCommand({"/bin/sh", "-c", "/usr/bin/promtool check metrics < " + file});
  EXPECT_EQ(lint.exit_code, 0) << lint.out << lint.err << "\n" << text;
  for (const char* want :
       {"corral_jobs{state=\"succeeded\"} 1", "corral_jobs_submitted_total 1",
        "corral_jobs_finished_total{state=\"succeeded\"} 1",
        "corral_job_wait_seconds_count{queue=\"default\"} 1", "corral_nodes{state=\"ready\"} 1",
        "corral_gpus{state=\"idle\"} 2", "corral_build_info{version=",
        "corral_api_request_duration_seconds_bucket{route=\"POST /v1/jobs\",code=\"201\",le=",
        "corral_store_commit_duration_seconds_count",
        "corral_schedule_pass_duration_seconds_count"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  }
  EXPECT_EQ(text.find("job=\""), std::string::npos) << "no job-id labels";
}

Json NodesJson(const LocalCluster& c) {
  auto r = c.Corral({"nodes", "-o", "json"});
  Json j = Json::parse(r.out, nullptr, false);
  if (j.is_object() && j.contains("nodes")) j = j["nodes"];
  return j.is_array() ? j : Json::array();
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The simulated GPUs' use, set through the file the agent's probe reads at each sample.
void SetGpuUse(const LocalCluster& c, const std::string& lines) {
  std::string path = c.dir() + "/agents/node1/simulated-gpu-use";
  std::ofstream(path + ".tmp") << lines;
  std::filesystem::rename(path + ".tmp", path);
}

TEST(Observability, AgentMetricsPassPromtoolAndGpuUseReachesNodes) {
  LocalCluster c("agentmetrics", 1, 2);
  SetGpuUse(c, "0 37 2048\n1 3\n");
  // The head learns it with the agent's next sync.
  ASSERT_TRUE(WaitUntil(15000, [&] {
    Json nodes = NodesJson(c);
    return nodes.size() == 1 && nodes[0]["gpus"][0].value("utilization_percent", -1) == 37;
  }));
  Json node = NodesJson(c)[0];
  EXPECT_EQ(node["gpus"][0]["memory_used_bytes"], 2048LL * 1024 * 1024);
  EXPECT_EQ(node["gpus"][1]["utilization_percent"], 3);
  auto table = c.Corral({"nodes"});
  EXPECT_NE(table.out.find("37%,3%"), std::string::npos) << table.out;
  // `corral top` draws the same from a snapshot: 0 of 2 GPUs allocated, (37 + 3) / 2 busy.
  auto top = c.Corral({"top", "--once"});
  EXPECT_EQ(top.exit_code, 0) << top.err;
  EXPECT_NE(top.out.find("0/2 GPUs allocated  20% busy"), std::string::npos) << top.out;
  EXPECT_NE(top.out.find("node1"), std::string::npos) << top.out;

  std::string text = RunCommand({"/usr/bin/curl", "-sf",
                                 "http://" + node["address"].get<std::string>() + "/metrics"})
                         .out;
  ASSERT_FALSE(text.empty());
  for (const char* want :
       {"corral_gpu_utilization_ratio{gpu=\"0\",uuid=\"GPU-node1-0\"} 0.37",
        "corral_gpu_utilization_ratio{gpu=\"1\",uuid=\"GPU-node1-1\"} 0.03",
        "corral_gpu_memory_used_bytes{gpu=\"0\",uuid=\"GPU-node1-0\"} 2147483648",
        "corral_gpu_memory_total_bytes{gpu=\"1\",uuid=\"GPU-node1-1\"}"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  }
  if (access("/usr/bin/promtool", X_OK) != 0) {
    GTEST_SKIP() << "promtool not installed (Debian package prometheus)";
  }
  std::string file = c.dir() + "/agent-metrics.txt";
  std::ofstream(file) << text;
  auto lint = RunCommand({"/bin/sh", "-c", "/usr/bin/promtool check metrics < " + file});
  EXPECT_EQ(lint.exit_code, 0) << lint.out << lint.err << "\n" << text;
}

// Node health (DESIGN §9): a GPU that fails its probe makes its node unhealthy, with the
// reason, in `corral nodes`, the metrics and the event stream; no job starts there until every
// GPU passes again.
TEST(Observability, AGpuThatFailsItsProbeMakesItsNodeUnhealthyUntilItPasses) {
  LocalCluster c("health", 1, 2);
  SetGpuUse(c, "1 fault Xid 79: GPU has fallen off the bus\n");
  ASSERT_TRUE(WaitUntil(15000, [&] {
    Json nodes = NodesJson(c);
    return nodes.size() == 1 && nodes[0].value("unhealthy", "") != "";
  })) << NodesJson(c).dump();
  Json node = NodesJson(c)[0];
  EXPECT_EQ(node["unhealthy"], "GPU 1: Xid 79: GPU has fallen off the bus");
  EXPECT_EQ(node["gpus"][1]["healthy"], false);
  EXPECT_EQ(node["gpus"][0]["healthy"], true);
  auto table = c.Corral({"nodes"});
  EXPECT_NE(table.out.find("unhealthy"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("FAIL"), std::string::npos) << table.out;
  EXPECT_NE(Metrics(c).find("corral_nodes{state=\"unhealthy\"} 1"), std::string::npos);
  std::string agent_metrics =
      RunCommand(
          {"/usr/bin/curl", "-sf", "http://" + node["address"].get<std::string>() + "/metrics"})
          .out;
  EXPECT_NE(agent_metrics.find("corral_gpu_healthy{gpu=\"1\",uuid=\"GPU-node1-1\"} 0"),
            std::string::npos)
      << agent_metrics;

  std::string id = c.Submit({"--gpus", "1", "--", "true"});
  std::this_thread::sleep_for(std::chrono::seconds(2));
  auto show = c.Corral({"show", id, "-o", "json"});
  EXPECT_EQ(Json::parse(show.out, nullptr, false).value("state", ""), "pending")
      << "no new runs on an unhealthy node, not even on its healthy GPU: " << show.out;

  SetGpuUse(c, "");  // the GPU passes again
  ASSERT_EQ(c.Corral({"wait", id, "--timeout", "30s"}).exit_code, 0);
  EXPECT_EQ(NodesJson(c)[0].value("unhealthy", ""), "");
  auto events = c.Corral({"events"});
  EXPECT_NE(events.out.find("unhealthy GPU 1: Xid 79"), std::string::npos) << events.out;
  EXPECT_NE(events.out.find("healthy"), std::string::npos) << events.out;
}

TEST(Observability, JobMapFilesNameTheJobWhileItRunsAndVanishAfter) {
  LocalCluster c("jobmap", 1, 2);
  std::string id = c.Submit({"--gpus", "1", "--", "sleep", "300"});
  std::string map_dir = c.dir() + "/agents/node1/hpc-job-map";
  ASSERT_TRUE(WaitUntil(
      20000,
      [&] { return ReadAll(map_dir + "/0") == id + "\n" || ReadAll(map_dir + "/1") == id + "\n"; }))
      << "no mapping file names job " << id;
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(map_dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1) << "only the GPU the job holds has a file";
  ASSERT_EQ(c.Corral({"cancel", id}).exit_code, 0);
  EXPECT_TRUE(WaitUntil(20000, [&] {
    return !std::filesystem::exists(map_dir + "/0") && !std::filesystem::exists(map_dir + "/1");
  }));
}

TEST(Observability, IdleRunIsFlaggedInJobsAndCountedInMetrics) {
  LocalCluster c("idle", 1, 2, {"--idle-threshold", "5", "--idle-after", "2s"});
  SetGpuUse(c, "0 90\n1 90\n");
  std::string id = c.Submit({"--gpus", "2", "--", "sleep", "300"});
  ASSERT_TRUE(WaitUntil(20000, [&] {
    auto r = c.Corral({"show", id, "-o", "json"});
    return Json::parse(r.out, nullptr, false).value("state", "") == "running";
  }));
  // Busy GPUs: never idle, however long.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  EXPECT_EQ(Json::parse(c.Corral({"show", id, "-o", "json"}).out).value("idle_since", 0), 0);
  EXPECT_NE(Metrics(c).find("corral_idle_runs 0"), std::string::npos);
  // Under the threshold on both of its GPUs: flagged after --idle-after.
  SetGpuUse(c, "0 4\n1 0\n");
  ASSERT_TRUE(WaitUntil(20000, [&] {
    auto r = c.Corral({"jobs"});
    return r.out.find("idle") != std::string::npos;
  })) << c.Corral({"jobs"}).out;
  EXPECT_NE(c.Corral({"show", id}).out.find("idle:"), std::string::npos);
  EXPECT_NE(Metrics(c).find("corral_idle_runs 1"), std::string::npos) << Metrics(c);
  // One GPU busy again: the flag goes.
  SetGpuUse(c, "0 4\n1 50\n");
  EXPECT_TRUE(WaitUntil(20000, [&] {
    return Json::parse(c.Corral({"show", id, "-o", "json"}).out).value("idle_since", 0) == 0;
  }));
  EXPECT_NE(Metrics(c).find("corral_idle_runs 0"), std::string::npos);
}

// The second half of the idle rule through the real binaries: queue lab opts in, so its
// preemptible idle run is warned (an event) and then cancelled; a run of another queue is not.
TEST(Observability, IdleRunOfAQueueThatStopsThemIsWarnedThenCancelled) {
  LocalCluster c("idlestop", 1, 2,
                 {"--idle-after", "1s", "--idle-stop-queues", "lab", "--idle-stop-warning", "2s"});
  SetGpuUse(c, "");  // every GPU idle
  ASSERT_EQ(c.Corral({"queues", "set", "lab", "--quota", "0"}).exit_code, 0);
  std::string lab =
      c.Submit({"--queue", "lab", "--preemptible", "--gpus", "1", "--", "sleep", "300"});
  std::string other = c.Submit({"--preemptible", "--gpus", "1", "--", "sleep", "300"});
  auto job = [&](const std::string& id) {
    return Json::parse(c.Corral({"show", id, "-o", "json"}).out, nullptr, false);
  };
  ASSERT_TRUE(WaitUntil(30000, [&] { return job(lab).value("state", "") == "cancelled"; }))
      << c.Corral({"show", lab}).out;
  Json j = job(lab);
  bool warned = false;
  for (const Json& e : j["events"]) warned |= e.value("what", "") == "idle warning";
  EXPECT_TRUE(warned) << j.dump(1);
  EXPECT_EQ(
      j["runs"].back().value("reason", "").rfind("cancelled: its GPUs stayed under 1% use", 0), 0u)
      << j.dump(1);
  EXPECT_EQ(job(other).value("state", ""), "running") << "its queue does not stop idle runs";
  EXPECT_GT(job(other).value("idle_since", 0), 0) << "but it is flagged";
}

}  // namespace
}  // namespace corral::testing
