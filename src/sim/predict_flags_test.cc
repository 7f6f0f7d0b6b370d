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

std::string RunSimulate(const std::vector<std::string>& args, int* rc) {
  std::ostringstream out, err;
  *rc = SimulateMain(args, out, err);
  return out.str() + err.str();
}

// One GPU. History, one job at a time: "flaky" ran 30, 30, 30, 20,000 and 20,000 s, "steady"
// five 300-s jobs. Then both submit while another user's job holds the GPU: flaky's running
// mean (about an hour, the newest weighing half) puts steady's job first, its distribution
// (the median: 30 s) flaky's.
std::string TwoUsersTraceFile() {
  // One file a test: ctest runs this binary's tests as processes side by side.
  std::string path = ::testing::TempDir() + "/two_users." +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".csv";
  std::ofstream o(path);
  o << "job_id,submit_time,duration,num_gpus,queue,user\n";
  const int flaky[] = {30, 30, 30, 20000, 20000};
  long t = 0;
  for (int k = 0; k < 5; ++k, t += 60000) {
    o << "f" << k << "," << t << "," << flaky[k] << ",1,q,flaky\n";
    o << "s" << k << "," << t + 30000 << ",300,1,q,steady\n";
  }
  o << "blocker," << t << ",1000,1,q,other\n";
  o << "s," << t + 1 << ",300,1,q,steady\n";
  o << "f," << t + 2 << ",30,1,q,flaky\n";
  return path;
}

std::string Field(const std::string& out, const std::string& key) {
  size_t at = out.find("\"" + key + "\": ");
  return at == std::string::npos ? "" : out.substr(at, out.find(',', at) - at);
}

TEST(PredictFlagsTest, DistributionsReachTheSchedulerAndRunsStayValid) {
  const std::string trace = TwoUsersTraceFile();
  auto sim = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {
        "--trace",     trace, "--nodes", "1",       "--gpus-per-node", "1",
        "--no-timing", "-o",  "json",    "--check", "--policy",        "corral"};
    args.insert(args.end(), extra.begin(), extra.end());
    int rc = 0;
    std::string out = RunSimulate(args, &rc);
    EXPECT_EQ(rc, 0) << out;
    const std::string f = Field(out, "avg_jct");
    return f.empty() ? -1.0 : std::stod(f.substr(f.find(": ") + 2));
  };
  const double dist = sim({});
  ASSERT_GT(dist, 0);
  // Flaky's 30-s job first saves steady's 300 s wait the 30 s and flaky's the 300 s: 270 s
  // less JCT over 13 jobs.
  EXPECT_NEAR(sim({"--predict-rule", "running-mean"}) - dist, 270.0 / 13, 0.01);
  EXPECT_GT(sim({"--predict", "none"}), dist);
  EXPECT_EQ(sim({"--predict-rule", "quantile", "--predict-quantile", "0.5"}), dist);
  EXPECT_GT(sim({"--predict-rule", "quantile", "--predict-quantile", "1"}), dist);
  // The bounds (oracle_bounds_test.cc) run through the command, and a sigma of 0 is the oracle.
  EXPECT_EQ(sim({"--predict", "oracle-noisy:0"}), sim({"--predict", "oracle"}));
  EXPECT_GT(sim({"--predict", "oracle-noisy:0.5"}), 0);
  EXPECT_GT(sim({"--predict", "oracle-user-gpus"}), 0);
  EXPECT_GT(sim({"--predict", "oracle-window"}), 0);
  EXPECT_GT(sim({"--predict", "oracle-window:4"}), 0);
}

TEST(PredictFlagsTest, ReportFromCountsOnlyTheJobsAfterTheSplit) {
  const std::string trace = TwoUsersTraceFile();
  auto jobs = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"--trace", trace,         "--nodes", "1",    "--gpus-per-node",
                                     "1",       "--no-timing", "-o",      "json", "--policy",
                                     "fifo"};
    args.insert(args.end(), extra.begin(), extra.end());
    int rc = 0;
    std::string out = RunSimulate(args, &rc);
    EXPECT_EQ(rc, 0) << out;
    return Field(out, "jobs");
  };
  EXPECT_EQ(jobs({}), "\"jobs\": 13");
  EXPECT_EQ(jobs({"--report-from", "50%"}), "\"jobs\": 7");  // from the 7th of 13
  EXPECT_EQ(jobs({"--report-from", "300000s"}), "\"jobs\": 3");
}

TEST(PredictFlagsTest, HistoryLevelsTakeNoneOrAscendingTimesAboveTheLasThresholds) {
  const std::string trace = TwoUsersTraceFile();
  for (std::vector<std::string> good : std::vector<std::vector<std::string>>{
           {"--predict-levels", "none"},
           {"--predict-levels", "50h,500h"},
           {"--las-thresholds", "1h", "--predict-levels", "5h"}}) {
    std::vector<std::string> args = {"--trace", trace, "--nodes", "1", "--policy", "corral"};
    args.insert(args.end(), good.begin(), good.end());
    int rc = 0;
    std::string out = RunSimulate(args, &rc);
    EXPECT_EQ(rc, 0) << good.back() << ": " << out;
  }
}

TEST(PredictFlagsTest, BadValuesNameTheirFlag) {
  const std::string trace = TwoUsersTraceFile();
  for (std::vector<std::string> bad :
       std::vector<std::vector<std::string>>{{"--report-from", "150%"},
                                             {"--report-from", "soon"},
                                             {"--predict-rule", "median"},
                                             {"--predict-quantile", "0"},
                                             {"--predict-window", "-3"},
                                             {"--predict-global-window", "-3"},
                                             {"--predict-requeue-window", "-3"},
                                             {"--predict-recency", "1"},
                                             {"--predict-done-weight", "2"},
                                             {"--predict-levels", "5h"},
                                             {"--predict-levels", "200h,100h"},
                                             {"--predict-levels", "soon"},
                                             {"--predict", "user,team"},
                                             {"--predict", "oracle-noisy:"},
                                             {"--predict", "oracle-noisy:-1"},
                                             {"--predict", "oracle-noisy:lots"},
                                             {"--predict", "oracle-window:0"},
                                             {"--predict", "oracle-window:2.5"},
                                             {"--predict", "user,oracle-window"}}) {
    std::vector<std::string> args = {"--trace", trace, "--nodes", "1", "--policy", "corral"};
    args.insert(args.end(), bad.begin(), bad.end());
    int rc = 0;
    std::string out = RunSimulate(args, &rc);
    EXPECT_EQ(rc, 1) << bad[0] << " " << bad[1] << ": " << out;
    const std::string flag = bad[0] == "--predict" ? "--predict '" : bad[0];
    EXPECT_NE(out.find(flag), std::string::npos) << out;
  }
}

}  // namespace
}  // namespace corral::sim
