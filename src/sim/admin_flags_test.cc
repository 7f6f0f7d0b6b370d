// Unit tests of what an admin sets up before a simulated trace (admin_flags.h): maintenance
// windows that no simulated run overlaps, and a queue tree that the trace's queues map into.
#include "sim/admin_flags.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "sim/simulate_command.h"
#include "sim/test_traces.h"

namespace corral::sim {
namespace {

// Four one-GPU jobs of 100 s at t=0 on two one-GPU nodes; no time limits.
const char* kFour =
    "job_id,submit_time,duration,num_gpus,queue\n"
    "A,0,100,1,vcA\n"
    "B,0,100,1,vcB\n"
    "C,1,100,1,vcC\n"
    "D,2,100,1,vcA\n";

std::string SimulateCommand(const std::vector<std::string>& args, int* rc) {
  std::ostringstream out, err;
  *rc = SimulateMain(args, out, err);
  return out.str() + err.str();
}

std::string Write(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(SimMaintenance, NoRunOverlapsTheWindowAndJobsStartAroundIt) {
  std::vector<TraceJob> jobs = testing::Jobs(kFour);
  for (sched::OrderPolicy p : {sched::OrderPolicy::kFifo, sched::OrderPolicy::kCorral}) {
    SimConfig c;
    c.cluster = {2, 1, 1};
    c.policy = p;
    std::vector<std::string> nodes = {"n00000", "n00001"};
    Result<NodeReservationSpec> w = ParseMaintenance("n00000:50s:200s", nodes);
    ASSERT_TRUE(w.ok()) << w.status().message();
    w->name = "maint-1";
    c.reservations = {*w};
    Result<SimResult> r = Simulate(jobs, c);
    ASSERT_TRUE(r.ok()) << r.status().message();
    int on_n0 = 0;
    for (const RunRecord& run : r->runs) {
      for (const ReplicaPlacement& p : run.placement) {
        if (p.node != "n00000") continue;
        ++on_n0;
        EXPECT_TRUE(run.end <= 50 * kSecond || run.start >= 250 * kSecond)
            << "run of job " << run.job << " on n00000 from " << run.start << " to " << run.end;
      }
    }
    // Without limits nothing may start on n00000 before the window: it takes jobs after it.
    EXPECT_GT(on_n0, 0);
    for (const JobOutcome& o : r->jobs) EXPECT_GE(o.end, 0);  // every job finished
  }
}

TEST(SimMaintenance, TheFlagIsCheckedAndReachesTheScheduler) {
  std::string trace = Write("maint_four.csv", kFour);
  auto avg = [&](std::vector<std::string> extra, int* rc) {
    std::vector<std::string> args = {"--trace", trace, "--nodes", "2",           "--gpus-per-node",
                                     "1",       "-o",  "json",    "--no-timing", "--check"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::string o = SimulateCommand(args, rc);
    size_t at = o.find("\"avg_jct\": ");
    return at == std::string::npos ? o : o.substr(at, 30);
  };
  int rc = 0;
  std::string plain = avg({}, &rc);
  EXPECT_EQ(rc, 0) << plain;
  std::string held = avg({"--maintenance", "n00000,n00001:0s:1h"}, &rc);
  EXPECT_EQ(rc, 0) << held;
  EXPECT_NE(held, plain);  // both nodes down for an hour: every job waits for it
  std::string bad = avg({"--maintenance", "n00007:0s:1h"}, &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(bad.find("--maintenance 'n00007:0s:1h': no node 'n00007'"), std::string::npos) << bad;
  bad = avg({"--maintenance", "n00000:1h"}, &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(bad.find("NODE[,NODE..]:START:DURATION"), std::string::npos) << bad;
  bad = avg({"--maintenance", "n00000:0s:0s"}, &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(bad.find("duration must be > 0"), std::string::npos) << bad;
}

TEST(SimQueueTree, TraceQueuesMapIntoTheTreeAndReportByLeaf) {
  std::string trace = Write("tree_four.csv", kFour);
  std::string tree = Write("tree.csv",
                           "queue,quota_gpus,takes\n"
                           "org,1\n"
                           "org/teamA,1,vcA\n"
                           "org/teamB,0,vcB\n"
                           "other,1,*\n");
  int rc = 0;
  std::string o = SimulateCommand({"--trace", trace, "--nodes", "2", "--gpus-per-node", "1", "-o",
                                   "json", "--no-timing", "--check", "--queue-tree", tree},
                                  &rc);
  ASSERT_EQ(rc, 0) << o;
  size_t at = o.find("\"queue_slowdown\"");
  ASSERT_NE(at, std::string::npos) << o;
  std::string slow = o.substr(at, o.find('}', at) - at);
  EXPECT_NE(slow.find("\"org/teamA\""), std::string::npos) << slow;
  EXPECT_NE(slow.find("\"org/teamB\""), std::string::npos) << slow;
  EXPECT_NE(slow.find("\"other\""), std::string::npos) << slow;  // vcC, by "*"
  EXPECT_EQ(slow.find("vcA"), std::string::npos) << slow;
}

TEST(SimQueueTree, ABadTreeNamesTheLineAndTheReason) {
  std::string trace = Write("tree_bad.csv", kFour);
  auto error = [&](const std::string& text) {
    int rc = 0;
    std::string o = SimulateCommand(
        {"--trace", trace, "--nodes", "2", "--queue-tree", Write("bad_tree.csv", text)}, &rc);
    EXPECT_NE(rc, 0) << o;
    return o;
  };
  EXPECT_NE(error("org/a,1\norg,2\n").find("line 1: queue 'org/a' comes before its parent 'org'"),
            std::string::npos);
  EXPECT_NE(error("org,2\norg,1\n").find("line 2: queue 'org' is also on line 1"),
            std::string::npos);
  EXPECT_NE(error("org,2\nx,lots\n").find("line 2: quota_gpus 'lots'"), std::string::npos);
  EXPECT_NE(error("a,1,vcA\nb,1,vcA\n").find("trace queue 'vcA' is taken by both 'a' and 'b'"),
            std::string::npos);
}

}  // namespace
}  // namespace corral::sim
