// What `corral simulate` says against what a real cluster does: one trace of two users (queues
// a and b, quota 4 each), bursts submitted in the same instant, gangs over both nodes, quota
// reclaim, run live on a head and two agents of 4 simulated GPUs (real processes, `sleep` jobs
// submitted at the trace's times) and through `corral simulate` with the head's settings. The
// start order, each job's start and the average JCT must agree within what real timing allows.
//
// CORRAL_SIM_LIVE_JOBS (default 28) and CORRAL_SIM_LIVE_SEED (default 1) change the trace, for
// bench/sim_vs_live.sh; the figures go to stdout and to the test's properties.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "cluster_fixture.h"

namespace corral::testing {
namespace {

using Json = nlohmann::json;

struct TraceJob {
  std::string id;  // "j<index>"
  double submit_s = 0;
  double duration_s = 0;
  int gpus = 1;
  std::string user;  // ana: queue a; bob: queue b
};

// Bob's burst fills the cluster, Ana's follows in one instant and reclaims her queue's quota;
// then arrivals 0.5-2.5 s apart (to the millisecond), a third of them in the instant of the one
// before, of 1 to 4 GPUs and gangs of 6 (two replicas of 3), each running 2 to 6 s.
std::vector<TraceJob> MakeTrace(int n, uint64_t seed) {
  std::vector<TraceJob> jobs = {
      {"", 0, 9, 2, "bob"},   {"", 0, 10, 2, "bob"},  {"", 0, 7, 2, "bob"},
      {"", 0, 8, 2, "bob"},   {"", 1.5, 6, 4, "ana"}, {"", 1.5, 3, 1, "ana"},
      {"", 1.5, 5, 1, "ana"}, {"", 1.5, 2, 1, "ana"},
  };
  std::mt19937_64 rng(seed);
  auto pick = [&](uint64_t k) { return static_cast<int>(rng() % k); };
  const int kGpus[] = {1, 1, 1, 1, 2, 2, 3, 4, 6};
  double t = 1.5;
  std::string user = "ana";
  while (static_cast<int>(jobs.size()) < n) {
    // Not on a grid: a job's end in the simulator (a start plus whole seconds) would otherwise
    // fall in the very instant of an arrival, where the simulator applies the exit first and
    // the head, whose processes end a little later, the submission.
    if (pick(3) != 0) t += 0.5 + pick(2001) * 0.001;
    if (pick(3) == 0) user = user == "ana" ? "bob" : "ana";
    jobs.push_back({"", t, 2.0 + pick(5), kGpus[pick(9)], user});
  }
  for (size_t i = 0; i < jobs.size(); ++i) jobs[i].id = "j" + std::to_string(i);
  return jobs;
}

// What a `sleep` holds its GPUs for beyond its seconds on a head and agents here: the process's
// start and exit and the agent's report of each (0.07-0.15 s measured, runs' scheduled_at to
// ended_at); the simulator's jobs last that much longer.
constexpr double kProcessOverheadS = 0.1;

std::string TraceCsv(const std::vector<TraceJob>& jobs) {
  std::ostringstream csv;
  csv << "job_id,submit_time,duration,num_gpus,queue,user,name\n";
  for (const TraceJob& j : jobs) {
    csv << j.id << "," << j.submit_s << "," << j.duration_s + kProcessOverheadS << "," << j.gpus
        << "," << (j.user == "ana" ? "a" : "b") << "," << j.user << ",sleep\n";
  }
  return csv.str();
}

// One job as it went: its first start and its end, seconds from the trace's 0; preemptions.
struct Outcome {
  double first_start = -1;
  double end = -1;
  int runs = 0;
};

// Ranks with ties averaged.
std::vector<double> Ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  for (size_t i = 0; i < v.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> rank(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t k = i;
    while (k + 1 < order.size() && v[order[k + 1]] == v[order[i]]) ++k;
    for (size_t m = i; m <= k; ++m) rank[order[m]] = (static_cast<double>(i + k) / 2.0) + 1;
    i = k + 1;
  }
  return rank;
}

double Spearman(const std::vector<double>& x, const std::vector<double>& y) {
  std::vector<double> rx = Ranks(x), ry = Ranks(y);
  double mx = 0, my = 0;
  for (size_t i = 0; i < rx.size(); ++i) mx += rx[i], my += ry[i];
  mx /= static_cast<double>(rx.size());
  my /= static_cast<double>(ry.size());
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < rx.size(); ++i) {
    sxy += (rx[i] - mx) * (ry[i] - my);
    sxx += (rx[i] - mx) * (rx[i] - mx);
    syy += (ry[i] - my) * (ry[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 1.0;
}

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

// Submits the trace at its times (each burst one job after the other, as a script does) and
// waits for every job to succeed; the outcomes by trace index, times from the trace's 0.
std::vector<Outcome> RunLive(const LocalCluster& c, const std::vector<TraceJob>& jobs) {
  std::vector<std::string> ids;
  const auto t0 = std::chrono::steady_clock::now();
  for (const TraceJob& j : jobs) {
    std::this_thread::sleep_until(t0 + std::chrono::milliseconds(std::llround(j.submit_s * 1000)));
    const int replicas = j.gpus > 4 ? 2 : 1;
    ids.push_back(
        c.Submit({"--user", j.user, "--queue", j.user == "ana" ? "a" : "b", "--name", "sleep",
                  "--gpus", std::to_string(j.gpus / replicas), "--replicas",
                  std::to_string(replicas), "--cpus", "0.1", "--preemptible", "--grace-period",
                  "1s", "--", "sleep", std::to_string(static_cast<int>(j.duration_s))}));
  }
  std::map<std::string, std::string> state;
  EXPECT_TRUE(WaitAllSucceeded([&](const auto& args) { return c.Corral(args); }, ids,
                               120000 + 4000 * static_cast<int>(jobs.size()), &state))
      << "the jobs did not all succeed";
  const std::string listed = c.Corral({"jobs", "--all", "-o", "json"}).out;
  std::ofstream(c.dir() + "/live.json") << listed;
  Json all = Json::parse(listed, nullptr, false);
  std::map<std::string, Json> by_id;
  for (const Json& j : all) by_id[std::to_string(j["id"].get<uint64_t>())] = j;
  // The trace's 0: the first submission as the head recorded it.
  const double zero = by_id[ids[0]]["submitted_at"].get<double>() / 1000.0 - jobs[0].submit_s;
  std::vector<Outcome> out(jobs.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const Json& j = by_id[ids[i]];
    if (!j.is_object() || j["runs"].empty()) continue;
    out[i].first_start = j["runs"][0]["scheduled_at"].get<double>() / 1000.0 - zero;
    out[i].end = j["ended_at"].get<double>() / 1000.0 - zero;
    out[i].runs = static_cast<int>(j["runs"].size());
  }
  return out;
}

// The same trace through `corral simulate`, with the settings of the live head.
std::vector<Outcome> RunSimulated(const LocalCluster& c, const std::vector<TraceJob>& jobs) {
  const std::string trace = c.dir() + "/trace.csv", tree = c.dir() + "/queues.csv",
                    runs = c.dir() + "/runs.csv";
  std::ofstream(trace) << TraceCsv(jobs);
  std::ofstream(tree) << "a,4,a\nb,4,b\n";
  CommandResult r =
      RunCommand({CorralBin(), "simulate", "--trace", trace, "--nodes", "2", "--gpus-per-node", "4",
                  "--policy", "corral", "--queue-tree", tree, "--min-preempt-runtime", "0",
                  // a `sleep` keeps nothing when it is stopped; the head ticks every 500 ms
                  "--checkpoint-interval", "1000h", "--preempt-grace", "0", "--tick", "500ms",
                  "--no-timing", "-o", "json", "--out-runs", runs});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < jobs.size(); ++i) index[jobs[i].id] = i;
  std::vector<Outcome> out(jobs.size());
  std::ifstream in(runs);
  std::string line;
  std::getline(in, line);  // job_id,start,end,gpus,nodes
  while (std::getline(in, line)) {
    std::istringstream row(line);
    std::string id, start, end;
    std::getline(row, id, ',');
    std::getline(row, start, ',');
    std::getline(row, end, ',');
    Outcome& o = out[index.at(id)];
    if (o.first_start < 0) o.first_start = std::stod(start);
    o.end = std::max(o.end, std::stod(end));
    ++o.runs;
  }
  return out;
}

TEST(SimLive, TheSimulatorDecidesAsTheLiveClusterDoes) {
  const int n = EnvInt("CORRAL_SIM_LIVE_JOBS", 28);
  const std::vector<TraceJob> jobs =
      MakeTrace(n, static_cast<uint64_t>(EnvInt("CORRAL_SIM_LIVE_SEED", 1)));
  LocalCluster c("simlive", 2, 4, {"--min-runtime-before-preempt", "0"});
  for (const char* q : {"a", "b"}) {
    CommandResult r = c.Corral({"queues", "set", q, "--quota", "4"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  std::vector<Outcome> live = RunLive(c, jobs);
  std::vector<Outcome> sim = RunSimulated(c, jobs);
  if (const char* keep = std::getenv("CORRAL_SIM_LIVE_OUT"); keep && *keep) {
    // For bench/sim_vs_live.sh and a look at a difference: the trace, the queues, the
    // simulated runs and the live jobs as `corral jobs --all -o json` gives them.
    for (const char* f : {"trace.csv", "queues.csv", "runs.csv", "live.json"}) {
      std::ifstream in(c.dir() + "/" + f, std::ios::binary);
      std::ofstream(std::string(keep) + "/" + f, std::ios::binary) << in.rdbuf();
    }
  }

  std::vector<double> live_start, sim_start;
  double live_jct = 0, sim_jct = 0, start_error = 0, max_start_error = 0;
  int live_preempted = 0, sim_preempted = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    ASSERT_GE(live[i].first_start, 0) << jobs[i].id << " never started live";
    ASSERT_GE(sim[i].first_start, 0) << jobs[i].id << " never started in simulation";
    live_start.push_back(live[i].first_start);
    sim_start.push_back(sim[i].first_start);
    live_jct += live[i].end - jobs[i].submit_s;
    sim_jct += sim[i].end - jobs[i].submit_s;
    const double e = std::fabs(live[i].first_start - sim[i].first_start);
    start_error += e;
    max_start_error = std::max(max_start_error, e);
    live_preempted += live[i].runs > 1;
    sim_preempted += sim[i].runs > 1;
  }
  const double count = static_cast<double>(jobs.size());
  live_jct /= count;
  sim_jct /= count;
  start_error /= count;
  const double rho = Spearman(live_start, sim_start);
  const double jct_gap = std::fabs(live_jct - sim_jct) / sim_jct;
  std::cout << "jobs " << jobs.size() << " spearman " << rho << " avg_jct_live " << live_jct
            << " avg_jct_sim " << sim_jct << " jct_gap " << jct_gap << " start_error_mean "
            << start_error << " start_error_max " << max_start_error << " preempted_live "
            << live_preempted << " preempted_sim " << sim_preempted << "\n";
  for (size_t i = 0; i < jobs.size(); ++i) {
    std::cout << jobs[i].id << " " << jobs[i].user << " " << jobs[i].gpus << " gpus submit "
              << jobs[i].submit_s << " start live " << live[i].first_start << " sim "
              << sim[i].first_start << " runs " << live[i].runs << "/" << sim[i].runs << "\n";
  }
  ::testing::Test::RecordProperty("spearman", std::to_string(rho));
  ::testing::Test::RecordProperty("jct_gap", std::to_string(jct_gap));
  ::testing::Test::RecordProperty("start_error_mean_s", std::to_string(start_error));

  // The trace tries what it should: quota reclaim preempts, live and simulated.
  EXPECT_GT(live_preempted, 0);
  EXPECT_GT(sim_preempted, 0);
  // Measured on a 2-core machine compiling beside it: Spearman 0.998, JCT 3.3% longer live,
  // starts 0.43 s apart on average (docs/simulation.md). Real time adds the processes' start
  // and exit and the agents' reports to every job (more when the machine is loaded: the
  // simulator's jobs get 0.1 s), and a loaded machine may turn a near tie the other way; the
  // bounds leave room for that, and fail where the simulator decides otherwise than the head
  // (before the trace left the whole-second grid: Spearman 0.96, JCT 27% apart).
  EXPECT_GE(rho, 0.97);
  EXPECT_LE(jct_gap, 0.08);
  EXPECT_LE(start_error, 1.5);
}

}  // namespace
}  // namespace corral::testing
