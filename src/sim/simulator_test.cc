#include "sim/simulator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "sim/checker.h"
#include "sim/report.h"
#include "sim/simulate_command.h"
#include "sim/test_traces.h"

namespace corral::sim {
namespace {

using testing::Data;

using testing::Jobs;

std::map<std::string, double> Jcts(const std::vector<TraceJob>& jobs, const SimResult& r) {
  std::map<std::string, double> out;
  for (size_t i = 0; i < jobs.size(); ++i) {
    out[jobs[i].id] = static_cast<double>(r.jobs[i].end - jobs[i].submit_ms) / 1000.0;
  }
  return out;
}

SimResult Sim(const std::vector<TraceJob>& jobs, sched::OrderPolicy p, int32_t nodes,
              int32_t gpus_per_node) {
  SimConfig c;
  c.cluster = {nodes, gpus_per_node, 1};
  c.policy = p;
  Result<SimResult> r = Simulate(jobs, c);
  CORRAL_CHECK(r.ok(), r.status().message());
  return std::move(*r);
}

// One GPU, four jobs queued behind a long one. By hand:
//   FIFO: A 0-100, B 100-160, C 160-200, D 200-210 -> JCT A 100, B 159, C 198, D 207.
//   SJF:  A 0-100, D 100-110, C 110-150, B 150-210 -> JCT A 100, D 107, C 148, B 209.
const char* kOneGpu =
    "job_id,submit_time,duration,num_gpus\n"
    "A,0,100,1\n"
    "B,1,60,1\n"
    "C,2,40,1\n"
    "D,3,10,1\n";

TEST(SimulatorTest, FifoOneGpuByHand) {
  auto jobs = Jobs(kOneGpu);
  auto jct = Jcts(jobs, Sim(jobs, sched::OrderPolicy::kFifo, 1, 1));
  EXPECT_EQ(jct["A"], 100);
  EXPECT_EQ(jct["B"], 159);
  EXPECT_EQ(jct["C"], 198);
  EXPECT_EQ(jct["D"], 207);
}

TEST(SimulatorTest, SjfOneGpuByHand) {
  auto jobs = Jobs(kOneGpu);
  SimResult r = Sim(jobs, sched::OrderPolicy::kSjf, 1, 1);
  auto jct = Jcts(jobs, r);
  EXPECT_EQ(jct["A"], 100);
  EXPECT_EQ(jct["D"], 107);
  EXPECT_EQ(jct["C"], 148);
  EXPECT_EQ(jct["B"], 209);
  Summary s = Summarize("sjf", jobs, r);
  EXPECT_DOUBLE_EQ(s.avg_jct, (100 + 107 + 148 + 209) / 4.0);
  EXPECT_DOUBLE_EQ(s.makespan, 210);
  EXPECT_DOUBLE_EQ(s.utilization, 1.0);
}

// Two nodes of two GPUs; A and D are 4-GPU gangs (2 replicas of 2). By hand:
//   FIFO: A 0-50; at 50 B 50-80 and C 50-70; D is next and needs all 4: 80-90.
//         JCT A 50, B 70, C 60, D 70.
//   SJF:  A 0-50; at 50 D (10 s) is shortest and fits the idle cluster: 50-60; then
//         C 60-80 and B 60-90. JCT A 50, D 40, C 70, B 80.
const char* kGang =
    "job_id,submit_time,duration,num_gpus\n"
    "A,0,50,4\n"
    "B,10,30,2\n"
    "C,10,20,2\n"
    "D,20,10,4\n";

TEST(SimulatorTest, FifoGangByHand) {
  auto jobs = Jobs(kGang);
  SimResult r = Sim(jobs, sched::OrderPolicy::kFifo, 2, 2);
  auto jct = Jcts(jobs, r);
  EXPECT_EQ(jct["A"], 50);
  EXPECT_EQ(jct["B"], 70);
  EXPECT_EQ(jct["C"], 60);
  EXPECT_EQ(jct["D"], 70);
  // A runs as two replicas on both nodes.
  ASSERT_EQ(r.runs[0].placement.size(), 2u);
  EXPECT_NE(r.runs[0].placement[0].node, r.runs[0].placement[1].node);
}

TEST(SimulatorTest, SjfGangByHand) {
  auto jobs = Jobs(kGang);
  auto jct = Jcts(jobs, Sim(jobs, sched::OrderPolicy::kSjf, 2, 2));
  EXPECT_EQ(jct["A"], 50);
  EXPECT_EQ(jct["D"], 40);
  EXPECT_EQ(jct["C"], 70);
  EXPECT_EQ(jct["B"], 80);
}

TEST(SimulatorTest, JobTooBigIsRejected) {
  auto jobs = Jobs("job_id,submit_time,duration,num_gpus\nA,0,50,8\nB,0,5,1\n");
  SimResult r = Sim(jobs, sched::OrderPolicy::kFifo, 1, 4);
  EXPECT_TRUE(r.jobs[0].rejected);
  EXPECT_FALSE(r.jobs[1].rejected);
  EXPECT_EQ(r.jobs[1].end, 5000);
}

TEST(SimulatorTest, QuotasByDemandSumToTheCluster) {
  auto jobs = Jobs(
      "job_id,submit_time,duration,num_gpus,queue\n"
      "1,0,100,1,a\n2,0,200,1,b\n3,0,100,1,c\n");
  auto q = QuotasByDemand(jobs, 10);
  EXPECT_EQ(q["a"] + q["b"] + q["c"], 10);
  EXPECT_EQ(q["b"], 5);
}

struct CheckCase {
  const char* policy;
  DurationMs overhead_ms;
  DurationMs grace_ms;
  DurationMs checkpoint_ms;
};

class CheckerTest : public ::testing::TestWithParam<CheckCase> {};

// Every policy over the first 400 jobs of the Philly trace on a small cluster (so jobs
// queue and the preemptive policies preempt), validated by the independent checker.
TEST_P(CheckerTest, RunsAreConsistentWithThePhillySlice) {
  const CheckCase& c = GetParam();
  Result<Trace> t = ReadTraceFile(Data("philly_slice.csv"), {});
  ASSERT_TRUE(t.ok());
  SimConfig cfg;
  cfg.cluster = {4, 8, 2};
  ASSERT_TRUE(sched::ParseOrderPolicy(c.policy, &cfg.policy));
  cfg.restart_overhead_ms = c.overhead_ms;
  cfg.preempt_grace_ms = c.grace_ms;
  cfg.checkpoint_interval_ms = c.checkpoint_ms;
  cfg.tick_ms = 5 * kMinute;
  Result<SimResult> r = Simulate(t->jobs, cfg);
  ASSERT_TRUE(r.ok()) << r.status().message();
  CheckOptions co;
  co.nodes = 4;
  co.gpus_per_node = 8;
  co.restart_overhead_ms = c.overhead_ms;
  co.preempt_grace_ms = c.grace_ms;
  co.checkpoint_interval_ms = c.checkpoint_ms;
  int64_t preemptions = 0;
  for (size_t i = 0; i < t->jobs.size(); ++i) {
    if (r->jobs[i].rejected) co.rejected.insert(t->jobs[i].id);
    preemptions += r->jobs[i].preemptions;
    // Every job but the rejected finishes.
    EXPECT_TRUE(r->jobs[i].rejected || r->jobs[i].end >= t->jobs[i].submit_ms);
  }
  EXPECT_LE(co.rejected.size(), 2u);  // a 64-GPU job does not fit 32 GPUs
  std::string runs = RunsCsv(t->jobs, *r);
  Status st = CheckRuns(t->jobs, runs, co);
  EXPECT_TRUE(st.ok()) << st.message();
  RecordProperty("preemptions", std::to_string(preemptions));
}

INSTANTIATE_TEST_SUITE_P(Policies, CheckerTest,
                         ::testing::Values(CheckCase{"fifo", 0, 0, 0}, CheckCase{"sjf", 0, 0, 0},
                                           CheckCase{"srtf", 30 * kSecond, 10 * kSecond, 0},
                                           CheckCase{"las", 30 * kSecond, 0, 15 * kMinute},
                                           CheckCase{"corral", 60 * kSecond, 10 * kSecond, 0}),
                         [](const auto& info) { return std::string(info.param.policy); });

TEST(CheckerTest, CatchesBrokenRuns) {
  auto jobs = Jobs(kGang);
  CheckOptions co;
  co.nodes = 2;
  co.gpus_per_node = 2;
  const std::string header = "job_id,start,end,gpus,nodes\n";
  const std::string good =
      "A,0.000,50.000,4,n0:2;n1:2\nB,50.000,80.000,2,n0:2\nC,50.000,70.000,2,n1:2\n"
      "D,80.000,90.000,4,n0:2;n1:2\n";
  EXPECT_TRUE(CheckRuns(jobs, header + good, co).ok());
  // Over-committed node.
  EXPECT_FALSE(CheckRuns(jobs,
                         header + "A,0.000,50.000,4,n0:2;n1:2\nB,40.000,70.000,2,n0:2\n"
                                  "C,50.000,70.000,2,n1:2\nD,80.000,90.000,4,n0:2;n1:2\n",
                         co)
                   .ok());
  // Too little service.
  EXPECT_FALSE(CheckRuns(jobs,
                         header + "A,0.000,49.000,4,n0:2;n1:2\nB,50.000,80.000,2,n0:2\n"
                                  "C,50.000,70.000,2,n1:2\nD,80.000,90.000,4,n0:2;n1:2\n",
                         co)
                   .ok());
  // Before submit.
  EXPECT_FALSE(CheckRuns(jobs,
                         header + "A,0.000,50.000,4,n0:2;n1:2\nB,5.000,35.000,2,n0:2\n"
                                  "C,50.000,70.000,2,n1:2\nD,80.000,90.000,4,n0:2;n1:2\n",
                         co)
                   .ok());
  // A job missing.
  EXPECT_FALSE(CheckRuns(jobs,
                         header + "A,0.000,50.000,4,n0:2;n1:2\nB,50.000,80.000,2,n0:2\n"
                                  "C,50.000,70.000,2,n1:2\n",
                         co)
                   .ok());
}

std::string RunCommand(const std::vector<std::string>& args, int* rc) {
  std::ostringstream out, err;
  *rc = SimulateMain(args, out, err);
  return out.str() + err.str();
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(SimulateCommandTest, SameInputsGiveByteIdenticalOutputs) {
  std::string dir = ::testing::TempDir();
  std::vector<std::string> outputs;
  for (int k = 0; k < 2; ++k) {
    std::string runs = dir + "/runs" + std::to_string(k) + ".csv";
    std::string plot = dir + "/plot" + std::to_string(k) + ".svg";
    int rc = 0;
    std::string out = RunCommand({"--trace",
                                  Data("philly_slice.csv"),
                                  "--nodes",
                                  "4",
                                  "--racks",
                                  "2",
                                  "--compare",
                                  "fifo,sjf,srtf,las,corral",
                                  "-o",
                                  "json",
                                  "--no-timing",
                                  "--out-runs",
                                  runs,
                                  "--plot",
                                  plot,
                                  "--sample",
                                  "300",
                                  "--seed",
                                  "7",
                                  "--check",
                                  "--restart-overhead",
                                  "30s"},
                                 &rc);
    ASSERT_EQ(rc, 0) << out;
    std::string all = out;
    for (const char* p : {"fifo", "sjf", "srtf", "las", "corral"}) {
      all += Slurp(dir + "/runs" + std::to_string(k) + "." + p + ".csv");
    }
    all += Slurp(plot);
    outputs.push_back(all);
  }
  EXPECT_GT(outputs[0].size(), 1000u);
  EXPECT_EQ(outputs[0], outputs[1]);
  EXPECT_EQ(outputs[0].find("sim_wall_time_s"), std::string::npos);
}

TEST(SimulateCommandTest, ClearErrors) {
  int rc = 0;
  std::string out = RunCommand({"--trace", Data("philly_slice.csv")}, &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("--nodes"), std::string::npos) << out;
  out = RunCommand({"--trace", Data("philly_slice.csv"), "--gpus", "30"}, &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("multiple"), std::string::npos) << out;
  out = RunCommand({"--trace", Data("philly_slice.csv"), "--gpus", "64", "--policy", "drf"}, &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("drf"), std::string::npos) << out;
  out = RunCommand({"--trace", Data("tiresias_60_job.csv"), "--gpus", "64", "-o", "json",
                    "--no-timing", "--policy", "fifo"},
                   &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("\"jobs\": 60"), std::string::npos) << out;
}

TEST(SimulateCommandTest, PreemptionBudgetsAndHysteresisReachTheScheduler) {
  int rc = 0;
  std::string out = RunCommand(
      {"--trace", Data("philly_slice.csv"), "--gpus", "64", "--cluster-budget", "5"}, &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("RUNS,GPU_SECONDS"), std::string::npos) << out;
  out = RunCommand({"--trace", Data("philly_slice.csv"), "--gpus", "64", "--las-hysteresis", "0.5"},
                   &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("--las-hysteresis"), std::string::npos) << out;
  // A budget of one run per minute and no lost work at all preempts no more than unlimited.
  auto preemptions = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"--trace",     Data("philly_slice.csv"),
                                     "--nodes",     "4",
                                     "-o",          "json",
                                     "--no-timing", "--policy",
                                     "corral"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::string o = RunCommand(args, &rc);
    EXPECT_EQ(rc, 0) << o;
    size_t at = o.find("\"preemptions\": ");
    return at == std::string::npos ? -1L : std::stol(o.substr(at + 15));
  };
  long unlimited = preemptions(
      {"--cluster-budget", "-1,-1", "--queue-budget", "-1,-1", "--las-hysteresis", "1"});
  long tight = preemptions({"--cluster-budget", "1,1", "--queue-budget", "1,1"});
  EXPECT_GT(unlimited, 0);
  EXPECT_LT(tight, unlimited);
}

TEST(SimulateCommandTest, IssueElevenOptionsReachTheSchedulerAndPassTheChecker) {
  // Each option changes the decisions on this slice (so it reaches the scheduler), and the
  // runs stay valid (--check fails the command otherwise).
  auto summary = [](std::vector<std::string> extra) {
    int rc = 0;
    std::vector<std::string> args = {"--trace",     Data("philly_slice.csv"),
                                     "--nodes",     "2",
                                     "-o",          "json",
                                     "--no-timing", "--check",
                                     "--policy",    "corral"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::string o = RunCommand(args, &rc);
    EXPECT_EQ(rc, 0) << o;
    size_t at = o.find("\"avg_jct\": ");
    return at == std::string::npos ? std::string() : o.substr(at, 40);
  };
  std::string plain = summary({});
  EXPECT_FALSE(plain.empty());
  EXPECT_NE(summary({"--no-borrowing-queues-by-level"}), plain);
  // The options measured and left off are gone, not silently ignored.
  for (std::vector<std::string> gone : {std::vector<std::string>{"--backfill-predictions"},
                                        {"--starvation-factor", "1"},
                                        {"--gittins", "for-level"}}) {
    std::vector<std::string> args = {"--trace", Data("philly_slice.csv"), "--nodes", "2"};
    args.insert(args.end(), gone.begin(), gone.end());
    int rc = 0;
    RunCommand(args, &rc);
    EXPECT_NE(rc, 0) << gone[0];
  }
}

TEST(SimulateCommandTest, MalformedRowsAreReportedAndCapped) {
  std::string path = ::testing::TempDir() + "/bad_rows.csv";
  {
    std::ofstream o(path);
    o << "job_id,submit_time,duration,num_gpus\n";
    for (int i = 0; i < 49; ++i) o << i << "," << i << ",10,1\n";
    o << "bad,7,ten,1\n";  // line 51
  }
  int rc = 0;
  std::string out = RunCommand({"--trace", path, "--gpus", "8", "--policy", "fifo"}, &rc);
  EXPECT_EQ(rc, 1);  // 1 of 50 rows is 2% > 1%
  EXPECT_NE(out.find("line 51"), std::string::npos) << out;
  out = RunCommand({"--trace", path, "--gpus", "8", "--policy", "fifo", "--max-bad-rows", "5%",
                    "-o", "json", "--no-timing"},
                   &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("line 51"), std::string::npos) << out;
  EXPECT_NE(out.find("\"bad_rows\": 1"), std::string::npos) << out;
  EXPECT_NE(out.find("\"jobs\": 49"), std::string::npos) << out;
}

}  // namespace
}  // namespace corral::sim

namespace corral::sim {
namespace {

TEST(SimElasticModelTest, ShapesAndRates) {
  ElasticModel m;
  m.on = true;
  ElasticShape s;
  auto job = [](int32_t gpus) {
    TraceJob t;
    t.num_gpus = gpus;
    return t;
  };
  EXPECT_FALSE(ElasticShapeOf(job(1), 8, m, &s)) << "one GPU cannot shrink";
  ASSERT_TRUE(ElasticShapeOf(job(4), 8, m, &s));
  EXPECT_EQ(s.min, 2);
  EXPECT_EQ(s.max, 4);
  EXPECT_EQ(s.per_replica, 1);
  ASSERT_TRUE(ElasticShapeOf(job(32), 8, m, &s));  // whole-node replicas, as the rigid gang's
  EXPECT_EQ(s.per_replica, 8);
  EXPECT_EQ(s.max, 4);
  EXPECT_EQ(s.min, 2);
  EXPECT_FALSE(ElasticShapeOf(job(2), 8, ElasticModel{}, &s)) << "the model is off";
  ASSERT_TRUE(ElasticShapeOf(job(4), 8, m, &s));
  EXPECT_DOUBLE_EQ(ElasticRate(s, 4, 0.8), 1.0);
  EXPECT_DOUBLE_EQ(ElasticRate(s, 2, 0.8), std::pow(0.5, 0.8));
  EXPECT_DOUBLE_EQ(ElasticRate(s, 2, 1.0), 0.5);
  EXPECT_EQ(ElasticRate(s, 0, 0.8), 0);
}

// One node of four GPUs. B holds one GPU for 100 s; A wants all four for 100 s from t = 1 s.
// Rigid, A waits for B: 100-200. Elastic (2:4 replicas of one GPU), A starts at once on the
// three free GPUs at (3/4)^0.8 of its rate, grows to four when B ends (a 30 s pause), and ends
// when the rest of its work is done at the full rate.
TEST(SimulatorTest, AnElasticJobStartsSmallGrowsAndEndsSooner) {
  auto jobs = testing::Jobs(
      "job_id,submit_time,duration,num_gpus\n"
      "B,0,100,1\n"
      "A,1,100,4\n");
  SimConfig c;
  c.cluster = {1, 4, 1};
  c.policy = sched::OrderPolicy::kCorral;
  Result<SimResult> rigid = Simulate(jobs, c);
  ASSERT_TRUE(rigid.ok()) << rigid.status().message();
  EXPECT_EQ(rigid->jobs[1].first_start, 100000);
  EXPECT_EQ(rigid->jobs[1].end, 200000);

  c.elastic.on = true;
  Result<SimResult> elastic = Simulate(jobs, c);
  ASSERT_TRUE(elastic.ok()) << elastic.status().message();
  const JobOutcome& a = elastic->jobs[1];
  EXPECT_EQ(a.first_start, 1000);
  const auto done_on_three = std::llround(99000 * std::pow(0.75, 0.8));
  EXPECT_EQ(a.end, 100000 + 30000 + (100000 - done_on_three));
  EXPECT_EQ(elastic->jobs[0].end, 100000) << "B is untouched";
  // A's runs as the report counts GPUs: three GPUs until the grow, then four.
  std::vector<std::pair<int32_t, TimeMs>> stretches;
  for (const RunRecord& r : elastic->runs) {
    if (r.job == 1) stretches.emplace_back(r.gpus, r.start);
  }
  EXPECT_EQ(stretches, (std::vector<std::pair<int32_t, TimeMs>>{{3, 1000}, {4, 100000}}));
  // The 30 s pause of the grow, on four GPUs, is all the GPU time it lost.
  EXPECT_EQ(elastic->lost_gpu_ms, 4 * 30000);
  Summary s = Summarize("corral", jobs, *elastic);
  EXPECT_LT(s.avg_jct, Summarize("corral", jobs, *rigid).avg_jct);
}

TEST(SimulateCommandTest, ElasticFlags) {
  int rc = 0;
  const std::vector<std::string> base = {"--trace", Data("philly_slice.csv"), "--nodes", "4",
                                         "--no-timing"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> args = base;
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  std::string out = RunCommand(with({"--elastic", "--elastic-alpha", "1.5"}), &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("field '--elastic-alpha'"), std::string::npos) << out;
  out = RunCommand(with({"--elastic", "--elastic-min", "0"}), &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("field '--elastic-min'"), std::string::npos) << out;
  out = RunCommand(with({"--elastic", "--check"}), &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("field '--check'"), std::string::npos) << out;
  const std::string first = RunCommand(with({"--elastic"}), &rc);
  EXPECT_EQ(rc, 0) << first;
  EXPECT_EQ(RunCommand(with({"--elastic"}), &rc), first) << "the same inputs, the same output";
}

}  // namespace
}  // namespace corral::sim
