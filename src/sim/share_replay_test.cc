// The simulator replays shares of a GPU through the head's own placement: shares pack onto one
// GPU within its compute and memory, whole-GPU jobs never land on a shared GPU, and the report
// counts GPU time x share. Whole-GPU traces replay byte for byte as before shares existed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "sim/checker.h"
#include "sim/report.h"
#include "sim/simulate_command.h"
#include "sim/simulator.h"
#include "sim/test_traces.h"

namespace corral::sim {
namespace {

using testing::Data;

TraceJob Share(const std::string& id, TimeMs submit_s, DurationMs duration_s, int32_t milli,
               int64_t memory_mb = 0) {
  TraceJob j;
  j.id = id;
  j.submit_ms = submit_s * 1000;
  j.duration_ms = duration_s * 1000;
  j.num_gpus = 1;
  j.gpu_milli = milli;
  j.gpu_memory_mb = memory_mb;
  j.queue = "default";
  return j;
}

TraceJob Whole(const std::string& id, TimeMs submit_s, DurationMs duration_s, int32_t gpus) {
  TraceJob j = Share(id, submit_s, duration_s, 0);
  j.num_gpus = gpus;
  return j;
}

SimResult Sim(const std::vector<TraceJob>& jobs, int32_t gpus, bool round_up = false) {
  SimConfig c;
  c.cluster = {1, gpus, 1};
  c.policy = sched::OrderPolicy::kFifo;
  c.round_shares_up = round_up;
  Result<SimResult> r = Simulate(jobs, c);
  CORRAL_CHECK(r.ok(), r.status().message());
  // Every replay must also pass the independent check of its runs.
  CheckOptions co;
  co.nodes = 1;
  co.gpus_per_node = gpus;
  co.round_shares_up = round_up;
  Status st = CheckRuns(jobs, RunsCsv(jobs, *r), co);
  CORRAL_CHECK(st.ok(), st.message());
  return std::move(*r);
}

TimeMs StartOf(const SimResult& r, size_t job) { return r.jobs[job].first_start; }

// The single GPU (index and milli share) a job's first run holds.
std::pair<int32_t, int32_t> GpuOf(const SimResult& r, size_t job) {
  for (const RunRecord& run : r.runs) {
    if (run.job != job) continue;
    const ReplicaPlacement& p = run.placement.at(0);
    EXPECT_EQ(p.gpus.size(), 1u);
    return {p.gpus.at(0), p.gpu_milli.empty() ? kGpuMilli : p.gpu_milli.at(0)};
  }
  ADD_FAILURE() << "job " << job << " never ran";
  return {-1, 0};
}

TEST(ShareReplayTest, TwoHalvesShareOneGpuAtOnce) {
  std::vector<TraceJob> jobs = {Share("a", 0, 100, 500), Share("b", 1, 100, 500)};
  SimResult r = Sim(jobs, 1);
  EXPECT_EQ(StartOf(r, 0), 0);
  EXPECT_EQ(StartOf(r, 1), 1000);  // at its submit: no wait
  EXPECT_EQ(GpuOf(r, 0), std::make_pair(0, 500));
  EXPECT_EQ(GpuOf(r, 1), std::make_pair(0, 500));
  EXPECT_EQ(RunsCsv(jobs, r),
            "job_id,start,end,gpus,nodes\n"
            "a,0.000,100.000,0.500,n00000:0.500\n"
            "b,1.000,101.000,0.500,n00000:0.500\n");
}

TEST(ShareReplayTest, SharesOverOneGpuWait) {
  std::vector<TraceJob> jobs = {Share("a", 0, 100, 600), Share("b", 1, 100, 500)};
  SimResult r = Sim(jobs, 1);
  EXPECT_EQ(StartOf(r, 0), 0);
  EXPECT_EQ(StartOf(r, 1), 100 * 1000);  // 600 + 500 > 1000: after a ends
  // With a second GPU it goes there at once.
  r = Sim(jobs, 2);
  EXPECT_EQ(StartOf(r, 1), 1000);
  EXPECT_NE(GpuOf(r, 0).first, GpuOf(r, 1).first);
}

TEST(ShareReplayTest, MemoryShareIsRespected) {
  // Little compute each, but 20 GiB of a 32 GiB GPU each: they cannot run together.
  std::vector<TraceJob> jobs = {Share("a", 0, 100, 100, 20 * 1024),
                                Share("b", 1, 100, 100, 20 * 1024)};
  SimResult r = Sim(jobs, 1);
  EXPECT_EQ(StartOf(r, 1), 100 * 1000);
  // 12 GiB each fit together.
  jobs = {Share("a", 0, 100, 100, 12 * 1024), Share("b", 1, 100, 100, 12 * 1024)};
  r = Sim(jobs, 1);
  EXPECT_EQ(StartOf(r, 1), 1000);
}

TEST(ShareReplayTest, WholeGpuJobNeverLandsOnASharedGpu) {
  // One GPU with a small share on it: the whole-GPU job waits for the share to end, although
  // 700 milli-GPUs are free.
  std::vector<TraceJob> jobs = {Share("s", 0, 100, 300), Whole("w", 1, 50, 1)};
  SimResult r = Sim(jobs, 1);
  EXPECT_EQ(StartOf(r, 1), 100 * 1000);
  EXPECT_EQ(GpuOf(r, 1), std::make_pair(0, kGpuMilli));
  // On two GPUs it takes the free one at once, and a later share packs beside the first.
  jobs = {Share("s", 0, 100, 300), Whole("w", 1, 50, 1), Share("t", 2, 100, 300)};
  r = Sim(jobs, 2);
  EXPECT_EQ(StartOf(r, 1), 1000);
  EXPECT_NE(GpuOf(r, 1).first, GpuOf(r, 0).first);
  EXPECT_EQ(GpuOf(r, 2).first, GpuOf(r, 0).first);
}

TEST(ShareReplayTest, UsageCountsGpuTimeTimesShare) {
  // A quarter of the one GPU for 100 s: 25 GPU-seconds of the 100 the cluster had.
  std::vector<TraceJob> jobs = {Share("a", 0, 100, 250)};
  SimResult r = Sim(jobs, 1);
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_EQ(r.runs[0].gpu_milli, 250);
  Summary s = Summarize("fifo", jobs, r);
  EXPECT_DOUBLE_EQ(s.utilization, 0.25);
  EXPECT_DOUBLE_EQ(s.fragmented, 0.75);  // the rest of the shared GPU
  // Rounded up to a whole GPU: all of it held, nothing left beside a share.
  r = Sim(jobs, 1, /*round_up=*/true);
  EXPECT_EQ(r.runs[0].gpu_milli, kGpuMilli);
  s = Summarize("fifo", jobs, r);
  EXPECT_DOUBLE_EQ(s.utilization, 1.0);
  EXPECT_DOUBLE_EQ(s.fragmented, 0.0);
  // ... and then two shares wait for each other.
  jobs = {Share("a", 0, 100, 500), Share("b", 1, 100, 500)};
  r = Sim(jobs, 1, /*round_up=*/true);
  EXPECT_EQ(StartOf(r, 1), 100 * 1000);
}

TEST(ShareReplayTest, CheckerRefusesAShareOverItsNode) {
  std::vector<TraceJob> jobs = {Share("a", 0, 100, 600), Share("b", 0, 100, 500)};
  CheckOptions co;
  co.nodes = 1;
  co.gpus_per_node = 1;
  co.exact_service = false;
  Status st = CheckRuns(jobs,
                        "job_id,start,end,gpus,nodes\n"
                        "a,0.000,100.000,0.600,n00000:0.600\n"
                        "b,0.000,100.000,0.500,n00000:0.500\n",
                        co);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("holds 1.100 GPUs"), std::string::npos) << st.message();
  st = CheckRuns(jobs,
                 "job_id,start,end,gpus,nodes\n"
                 "a,0.000,100.000,1,n00000:1\n",
                 co);
  EXPECT_NE(st.message().find("the trace asks for 0.600"), std::string::npos) << st.message();
}

TEST(ShareReplayTest, ReadsTheOpenbPodList) {
  const std::string csv =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
      "deletion_time,scheduled_time\n"
      "p0,12000,16384,1,1000,,LS,Running,10,1010,10\n"
      "p1,6000,12288,1,460,,LS,Running,20,520,30\n"
      "p2,6000,12288,0,0,,LS,Running,25,100,25\n"  // CPU only: left out
      "p3,6000,12288,1,500,,LS,Pending,26,100,\n"  // never scheduled: left out
      "p4,88000,327680,8,1000,V100M32,LS,Running,40,140,50\n";
  Result<Trace> t = ParseTrace(csv, "pods.csv", {});
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->format, TraceFormat::kOpenb);
  EXPECT_EQ(t->rows, 5);
  EXPECT_EQ(t->skipped, 2);
  ASSERT_EQ(t->jobs.size(), 3u);
  EXPECT_EQ(t->jobs[0].id, "p0");
  EXPECT_EQ(t->jobs[0].gpu_milli, 0);
  EXPECT_EQ(t->jobs[0].duration_ms, 1000 * 1000);
  EXPECT_EQ(t->jobs[1].id, "p1");
  EXPECT_EQ(t->jobs[1].submit_ms, 10 * 1000);     // creation time, from the first
  EXPECT_EQ(t->jobs[1].duration_ms, 490 * 1000);  // scheduled to deleted
  EXPECT_EQ(t->jobs[1].gpu_milli, 460);
  EXPECT_EQ(t->jobs[2].num_gpus, 8);

  Result<Trace> bad = ParseTrace(csv + "p5,1,1,2,500,,LS,Running,1,2,1\n", "pods.csv",
                                 TraceOptions{TraceFormat::kAuto, 0.0, 1.0});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 7: gpu_milli 500 is a share, but num_gpu is 2"),
            std::string::npos)
      << bad.status().message();
}

TEST(ShareReplayTest, PoissonArrivalsAreSeededAndOfferTheLoad) {
  std::vector<TraceJob> jobs;
  for (int i = 0; i < 4000; ++i) jobs.push_back(Share("j" + std::to_string(i), i, 100, 500));
  std::vector<TraceJob> a = jobs, b = jobs;
  PoissonArrivals(&a, 0.5, 10 * kGpuMilli, 7);
  PoissonArrivals(&b, 0.5, 10 * kGpuMilli, 7);
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i].submit_ms, b[i].submit_ms);
  EXPECT_EQ(a.front().submit_ms, 0);
  // Each job offers 0.5 GPU x 100 s; half of 10 GPUs takes one every 10 s on average.
  double mean_gap = static_cast<double>(a.back().submit_ms) / 3999.0 / 1000.0;
  EXPECT_NEAR(mean_gap, 10.0, 0.5);
  PoissonArrivals(&b, 0.5, 10 * kGpuMilli, 8);
  EXPECT_NE(a[5].submit_ms, b[5].submit_ms);
}

// Whole-GPU traces replay exactly as before shares existed: the runs files of the Philly slice
// are byte-identical to the ones recorded before (testdata/golden).
TEST(ShareReplayTest, WholeGpuRunsFilesAreUnchanged) {
  for (const std::string policy : {"fifo", "corral"}) {
    std::string runs =
        ::testing::TempDir() + "/golden." + std::to_string(::getpid()) + "." + policy + ".csv";
    std::ostringstream out, err;
    int rc = SimulateMain({"--trace", Data("philly_slice.csv"), "--gpus", "64", "--policy", policy,
                           "--out-runs", runs},
                          out, err);
    ASSERT_EQ(rc, 0) << err.str();
    std::ifstream got(runs, std::ios::binary),
        want(Data("golden/philly_slice_64gpus." + policy + ".runs.csv"), std::ios::binary);
    std::ostringstream g, w;
    g << got.rdbuf();
    w << want.rdbuf();
    ASSERT_FALSE(w.str().empty());
    EXPECT_TRUE(g.str() == w.str()) << policy << ": the runs file changed";
  }
}

}  // namespace
}  // namespace corral::sim
