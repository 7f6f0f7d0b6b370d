// Job efficiency over time on a live cluster: a real agent samples a real job's simulated GPUs
// and cgroup once a second; the series reaches the head and stays with the job; an agent
// SIGKILLed and restarted mid-run neither loses nor doubles a sample (the head's series is
// exactly the samples the agent's record holds, numbered 1..N once each); `corral eff`, `seff`
// through the Slurm shims and `corral show` report means, peaks and the verdict; bad input is
// refused naming what is wrong.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cluster_fixture.h"

namespace corral::testing {
namespace {

using Json = nlohmann::json;

void SetGpuUse(const LocalCluster& c, const std::string& lines) {
  std::string path = c.dir() + "/agents/node1/simulated-gpu-use";
  std::ofstream(path + ".tmp") << lines;
  std::filesystem::rename(path + ".tmp", path);
}

Json JobJson(const LocalCluster& c, const std::string& id) {
  auto r = c.Corral({"show", id, "-o", "json"});
  Json j = Json::parse(r.out, nullptr, false);
  return j.is_object() ? j : Json::object();
}

// Replica 0's series of the job's first run (empty before its first sample).
Json Series(const Json& job) {
  if (!job.contains("runs") || job["runs"].empty()) return Json::object();
  const Json& run = job["runs"][0];
  if (!run.contains("usage") || run["usage"].empty()) return Json::object();
  return run["usage"][0];
}

size_t Points(const LocalCluster& c, const std::string& id) {
  Json s = Series(JobJson(c, id));
  return s.contains("points") ? s["points"].size() : 0;
}

int RecordedSamples(const std::string& record_path) {
  std::ifstream in(record_path);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += line.rfind("sample ", 0) == 0;
  return n;
}

TEST(Efficiency, SeriesSurvivesAnAgentKillAndFeedsEffSeffAndShow) {
  LocalCluster c("eff", 1, 2, {}, {"--run-as", "agent", "--usage-interval", "1"});
  SetGpuUse(c, "0 80 4096\n1 60 2048\n");
  std::string id =
      c.Submit({"--gpus", "2", "--cpus", "2", "--memory", "512M", "--", "sleep", "14"});
  ASSERT_TRUE(WaitUntil(30000, [&] { return Points(c, id) >= 3; })) << JobJson(c, id).dump();

  c.KillAgent(1, 9);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  c.StartAgent(1);
  const size_t before = Points(c, id);
  ASSERT_TRUE(WaitUntil(30000, [&] { return Points(c, id) >= before + 3; }))
      << "sampling goes on after the restart: " << JobJson(c, id).dump();
  auto waited = c.Corral({"wait", id, "--timeout", "60s"});
  ASSERT_EQ(waited.exit_code, 0) << waited.out << waited.err;

  const std::string record = c.dir() + "/agents/node1/runs/" + id + ".1.0/record";
  // The last samples arrive with the exit; the record is what the agent took.
  Json series;
  ASSERT_TRUE(WaitUntil(10000,
                        [&] {
                          series = Series(JobJson(c, id));
                          return series.contains("points") &&
                                 static_cast<int>(series["points"].size()) ==
                                     RecordedSamples(record);
                        }))
      << series.dump() << " vs " << RecordedSamples(record) << " samples in " << record;
  const Json& points = series["points"];
  ASSERT_GE(points.size(), 6u);
  int64_t last_at = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    const Json& p = points[i];
    EXPECT_EQ(p[0].get<int64_t>(), static_cast<int64_t>(i + 1)) << "each sample once, in order";
    // No stamp twice (a sample sent again under a new number after the restart) or out of
    // order; the only gap is the agent's downtime (1.5 s and its restart), nothing lost.
    EXPECT_GT(p[1].get<int64_t>(), last_at) << "stamps strictly increase: " << series.dump();
    if (last_at > 0) {
      EXPECT_LE(p[1].get<int64_t>() - last_at, 15000) << series.dump();
    }
    last_at = p[1].get<int64_t>();
    EXPECT_EQ(p[2].get<int>(), 1) << "raw: nothing merged";
    EXPECT_EQ(p[3].get<int>(), 70) << "the mean of its two GPUs";
    EXPECT_EQ(p[5].get<int64_t>(), int64_t{6144} << 20) << "their memory together";
  }
  EXPECT_EQ(series["last_seq"].get<size_t>(), points.size());

  auto eff = c.Corral({"eff", id});
  ASSERT_EQ(eff.exit_code, 0) << eff.err;
  EXPECT_NE(eff.out.find("GPU util:"), std::string::npos) << eff.out;
  EXPECT_NE(eff.out.find("mean 70%, peak 70%"), std::string::npos) << eff.out;
  EXPECT_NE(eff.out.find("verdict:"), std::string::npos) << eff.out;
  EXPECT_NE(eff.out.find("memory peak "), std::string::npos) << eff.out;
  auto effj = c.Corral({"eff", id, "-o", "json"});
  ASSERT_EQ(effj.exit_code, 0) << effj.err;
  Json e = Json::parse(effj.out);
  EXPECT_EQ(e["samples"].get<size_t>(), points.size());
  EXPECT_DOUBLE_EQ(e["gpu_util"]["mean"].get<double>(), 70.0);
  EXPECT_EQ(e["gpu_memory_bytes"]["peak"].get<int64_t>(), int64_t{6144} << 20);
  EXPECT_GT(e["memory_bytes"]["peak"].get<int64_t>(), 0) << "the replica's cgroup was sampled";
  // sleep holds next to none of its 512M: a headroom finding, and no idle-GPU one.
  bool headroom = false, idle = false;
  for (const Json& v : e["verdict"]) {
    headroom = headroom || v["finding"] == "memory_headroom";
    idle = idle || v["finding"] == "idle_gpus";
  }
  EXPECT_TRUE(headroom) << effj.out;
  EXPECT_FALSE(idle) << effj.out;

  auto usage = c.Corral({"usage", "--by", "queue", "-o", "json"});
  ASSERT_EQ(usage.exit_code, 0) << usage.err;
  Json u = Json::parse(usage.out);
  ASSERT_EQ(u["rows"].size(), 1u) << usage.out;
  EXPECT_DOUBLE_EQ(u["rows"][0]["efficiency"]["gpu_util"].get<double>(), 70.0) << usage.out;
  EXPECT_EQ(u["rows"][0]["efficiency"]["idle_gpu_jobs"].get<int>(), 0) << usage.out;

  auto show = c.Corral({"show", id});
  EXPECT_NE(show.out.find("use (mean):"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("GPU 70% (peak 70%)"), std::string::npos) << show.out;

  const std::string shims = c.dir() + "/shims";
  ASSERT_EQ(c.Corral({"slurm", "install-shims", shims}).exit_code, 0);
  std::map<std::string, std::string> env = {{"CORRAL_ADDR", c.addr()},
                                            {"CORRAL_TOKEN", c.token()},
                                            {"CORRAL_CONFIG", c.dir() + "/no-such-config.json"}};
  auto seff = RunCommand({shims + "/seff", id}, env);
  ASSERT_EQ(seff.exit_code, 0) << seff.err;
  for (const std::string& want :
       {"Job ID: " + id + "\n", std::string("State: COMPLETED (exit code 0)\n"),
        std::string("Cores: 2\n"), std::string("CPU Efficiency: "),
        std::string("Memory Efficiency: "), std::string(" of 512.00 MB\n"),
        std::string("GPUs: 2\n"), std::string("GPU Utilization: 70.00% (peak 70%)\n")}) {
    EXPECT_NE(seff.out.find(want), std::string::npos) << want << "\n" << seff.out;
  }

  // Bad input: named, refused, nothing changed.
  auto bad = c.Corral({"eff", "abc"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("not a job ID: 'abc'"), std::string::npos) << bad.err;
  auto missing = c.Corral({"eff", "9999"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("9999"), std::string::npos) << missing.err;
  auto seff_bad = RunCommand({shims + "/seff", "x1"}, env);
  EXPECT_EQ(seff_bad.exit_code, 1);
  EXPECT_NE(seff_bad.err.find("seff: error: job ID: got 'x1'"), std::string::npos) << seff_bad.err;
}

TEST(Efficiency, IdleGpusAreTheVerdict) {
  LocalCluster c("effidle", 1, 1, {}, {"--run-as", "agent", "--usage-interval", "1"});
  SetGpuUse(c, "0 1 100\n");
  std::string id = c.Submit({"--gpus", "1", "--", "sleep", "4"});
  ASSERT_EQ(c.Corral({"wait", id, "--timeout", "60s"}).exit_code, 0);
  ASSERT_TRUE(WaitUntil(10000, [&] { return Points(c, id) >= 2; }));
  auto r = c.Corral({"eff", id, "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json e = Json::parse(r.out);
  ASSERT_FALSE(e["verdict"].empty()) << r.out;
  EXPECT_EQ(e["verdict"][0]["finding"], "idle_gpus") << r.out;
  EXPECT_NE(e["verdict"][0]["text"].get<std::string>().find("mean utilisation 1%"),
            std::string::npos)
      << r.out;
  auto usage = c.Corral({"usage", "--by", "user"});
  ASSERT_EQ(usage.exit_code, 0) << usage.err;
  EXPECT_NE(usage.out.find("IDLE-GPU-JOBS"), std::string::npos) << usage.out;
  EXPECT_NE(usage.out.find(" 1% "), std::string::npos) << "GPU-UTIL of the one job" << usage.out;
  auto usage_json = c.Corral({"usage", "--by", "user", "-o", "json"});
  Json u = Json::parse(usage_json.out);
  EXPECT_EQ(u["total"]["efficiency"]["idle_gpu_jobs"].get<int>(), 1) << usage_json.out;
}

// A job that ends before the agent's first interval (10 s) still has a point: the last look
// at it (a second or less before its end) makes its one sample, which reaches the head with
// its exit; `corral eff` reports it.
TEST(Efficiency, AJobShorterThanTheIntervalHasOneSampleFromItsEnd) {
  LocalCluster c("effshort", 1, 1, {}, {"--run-as", "agent", "--usage-interval", "10"});
  SetGpuUse(c, "0 70 1000\n");
  std::string id = c.Submit({"--gpus", "1", "--", "sleep", "3"});
  ASSERT_EQ(c.Corral({"wait", id, "--timeout", "60s"}).exit_code, 0);
  ASSERT_TRUE(WaitUntil(10000, [&] { return Points(c, id) >= 1; })) << JobJson(c, id).dump();
  const Json point = Series(JobJson(c, id))["points"][0];
  EXPECT_EQ(Points(c, id), 1u);
  EXPECT_EQ(point[0].get<int64_t>(), 1);   // seq
  EXPECT_EQ(point[3].get<int64_t>(), 70);  // GPU utilisation
  auto r = c.Corral({"eff", id, "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out).value("samples", -1), 1) << r.out;
}

}  // namespace
}  // namespace corral::testing
