// The simulator's prediction flags and --report-from, end to end through `corral simulate`:
// the distributions reach the scheduler (decisions change, runs stay valid), a split reports
// only the jobs after it, and bad values are errors naming their flag.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/simulate_command.h"

namespace corral::sim {
namespace {

std::string Run(std::vector<std::string> args, int* rc) {
  std::ostringstream out, err;
  *rc = SimulateMain(args, out, err);
  return out.str() + err.str();
}

// Two users on one GPU. "flaky": three of five jobs fail in 30 s, two run 20 h; "steady":
// 5-minute jobs. Their running means (flaky's about 11 min) and medians (30 s) disagree.
std::string Trace() {
  std::string path = ::testing::TempDir() + "/two_users.csv";
  std::ofstream o(path);
  o << "job_id,submit_time,duration,num_gpus,queue,user\n";
  int id = 0;
  long t = 0;
  for (int round = 0; round < 12; ++round) {
    for (int k = 0; k < 5; ++k) {
      o << "f" << id++ << "," << t << "," << (k < 3 ? 30 : 72000) << ",1,q,flaky\n";
      o << "s" << id++ << "," << t + 1 << ",300,1,q,steady\n";
      t += 600;
    }
  }
  return path;
}

std::string Field(const std::string& out, const std::string& key) {
  size_t at = out.find("\"" + key + "\": ");
  return at == std::string::npos ? "" : out.substr(at, out.find(',', at) - at);
}

TEST(PredictFlagsTest, DistributionsReachTheSchedulerAndRunsStayValid) {
  const std::string trace = Trace();
  auto sim = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {
        "--trace",     trace, "--nodes", "1",       "--gpus-per-node", "1",
        "--no-timing", "-o",  "json",    "--check", "--policy",        "corral"};
    args.insert(args.end(), extra.begin(), extra.end());
    int rc = 0;
    std::string out = Run(args, &rc);
    EXPECT_EQ(rc, 0) << out;
    return Field(out, "avg_jct");
  };
  const std::string dist = sim({});
  ASSERT_FALSE(dist.empty());
  EXPECT_NE(sim({"--predict-rule", "running-mean"}), dist);
  EXPECT_NE(sim({"--predict", "none"}), dist);
  EXPECT_NE(sim({"--predict-rule", "mean"}), dist);
  EXPECT_EQ(sim({"--predict-rule", "quantile", "--predict-quantile", "0.5"}), dist);
}

TEST(PredictFlagsTest, ReportFromCountsOnlyTheJobsAfterTheSplit) {
  const std::string trace = Trace();
  auto jobs = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"--trace", trace,         "--nodes", "1",    "--gpus-per-node",
                                     "1",       "--no-timing", "-o",      "json", "--policy",
                                     "fifo"};
    args.insert(args.end(), extra.begin(), extra.end());
    int rc = 0;
    std::string out = Run(args, &rc);
    EXPECT_EQ(rc, 0) << out;
    return Field(out, "jobs");
  };
  EXPECT_EQ(jobs({}), "\"jobs\": 120");
  EXPECT_EQ(jobs({"--report-from", "50%"}), "\"jobs\": 60");
  // Submits every 600 s from 0 to 35,400 s, two jobs each: 10 times from 30,000 s.
  EXPECT_EQ(jobs({"--report-from", "30000s"}), "\"jobs\": 20");
}

TEST(PredictFlagsTest, BadValuesNameTheirFlag) {
  const std::string trace = Trace();
  for (std::vector<std::string> bad :
       std::vector<std::vector<std::string>>{{"--report-from", "150%"},
                                             {"--report-from", "soon"},
                                             {"--predict-rule", "median"},
                                             {"--predict-quantile", "0"},
                                             {"--predict-window", "-3"},
                                             {"--predict-recency", "1"},
                                             {"--predict-done-weight", "2"},
                                             {"--predict", "user,team"}}) {
    std::vector<std::string> args = {"--trace", trace, "--nodes", "1", "--policy", "corral"};
    args.insert(args.end(), bad.begin(), bad.end());
    int rc = 0;
    std::string out = Run(args, &rc);
    EXPECT_EQ(rc, 1) << bad[0] << " " << bad[1] << ": " << out;
    const std::string flag = bad[0] == "--predict" ? "--predict '" : bad[0];
    EXPECT_NE(out.find(flag), std::string::npos) << out;
  }
}

}  // namespace
}  // namespace corral::sim
