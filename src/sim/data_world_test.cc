// The simulator's datasets: the node cache's eviction, the shared source's processor sharing,
// the staging of replicas, the assignment of datasets to a trace, and whole simulations where
// cached data starts a job at once and cache-blind placement fetches more.
#include "sim/data_world.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "sim/dataset_assign.h"
#include "sim/simulator.h"
#include "sim/test_traces.h"

namespace corral::sim {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

TEST(SimNodeCacheTest, EvictsWholeUnpinnedDatasetsLeastRecentlyUsedFirst) {
  SimNodeCache cache(100);
  EXPECT_EQ(cache.Publish("a", 30, 0, 10), 0);
  EXPECT_EQ(cache.Publish("b", 30, 0, 20), 0);
  cache.Pin("a", 30);  // a used last, and in use
  cache.Unpin("a", 40);
  EXPECT_EQ(cache.Publish("c", 30, 1, 50), 0) << "90 of 100: under the high watermark";
  // 120 > 95: b (least recently used) goes, then a, down to 70 or less; c is pinned.
  EXPECT_EQ(cache.Publish("d", 30, 0, 60), 2);
  EXPECT_EQ(cache.Digests(), (std::vector<std::string>{"c", "d"}));
  EXPECT_EQ(cache.bytes(), 60);
}

TEST(SimNodeCacheTest, APinnedDatasetIsNeverEvictedEvenOverTheLimit) {
  SimNodeCache cache(100);
  EXPECT_EQ(cache.Publish("a", 60, 1, 0), 0);
  EXPECT_EQ(cache.Publish("b", 60, 1, 0), 0);
  EXPECT_EQ(cache.bytes(), 120);
  cache.Unpin("a", 5);
  EXPECT_EQ(cache.Publish("c", 1, 1, 10), 1) << "a, unpinned now, goes";
  EXPECT_FALSE(cache.Holds("a"));
  EXPECT_TRUE(cache.Holds("b"));
  SimNodeCache unlimited(0);
  EXPECT_EQ(unlimited.Publish("x", int64_t{1} << 50, 0, 0), 0);
}

TEST(SharedSourceTest, FetchesUnderWayShareTheBandwidthEqually) {
  SharedSource source(1000);  // 1 byte per ms
  source.Start(1, 1000, 0);
  EXPECT_EQ(source.NextEnd(), 1000);
  source.Start(2, 1000, 500);  // 1 has 500 left; from now each reads 0.5 byte per ms
  EXPECT_EQ(source.NextEnd(), 1500);
  EXPECT_TRUE(source.Finish(1499).empty());
  EXPECT_EQ(source.Finish(1500), std::vector<uint64_t>{1});
  EXPECT_EQ(source.NextEnd(), 2000) << "2 had 500 left at 1500, alone again";
  EXPECT_EQ(source.Finish(2000), std::vector<uint64_t>{2});
  EXPECT_EQ(source.NextEnd(), -1);
  source.Start(3, 1000, 3000);
  source.Cancel(3, 3100);
  EXPECT_EQ(source.NextEnd(), -1);
}

DatasetRef Ref(const std::string& name, const std::string& digest, int64_t bytes) {
  DatasetRef r;
  r.name = name;
  r.digest = digest;
  r.bytes = bytes;
  return r;
}

TEST(DataWorldTest, OneFetchPerNodeAndDatasetAndEachNodeItsOwn) {
  DataConfig c;
  c.source_bytes_per_s = 1000;
  DataWorld world(c, 2);
  const std::vector<DatasetRef> x = {Ref("x", "dx", 1000)};
  EXPECT_FALSE(world.Stage(0, 1, x, 0));
  EXPECT_FALSE(world.Stage(0, 2, x, 0)) << "waits for the same fetch";
  EXPECT_FALSE(world.Stage(1, 3, x, 0)) << "another node fetches its own copy";
  EXPECT_EQ(world.Awaited(0, 1), "x");
  EXPECT_EQ(world.NextFetchEnd(), 2000) << "two fetches under way, half the bandwidth each";
  std::set<size_t> changed;
  EXPECT_EQ(world.FetchesDone(2000, &changed),
            (std::vector<std::pair<size_t, uint64_t>>{{0, 1}, {0, 2}, {1, 3}}));
  EXPECT_EQ(changed, (std::set<size_t>{0, 1}));
  EXPECT_EQ(world.stats().fetches, 2);
  EXPECT_EQ(world.stats().fetched_bytes, 2000);
  EXPECT_EQ(world.stats().hits, 1);
  EXPECT_EQ(world.stats().staged_replicas, 3);
  EXPECT_EQ(world.stats().staging_ms, 6000);
  EXPECT_TRUE(world.Stage(1, 4, x, 2500)) << "cached: in place at once";
  EXPECT_EQ(world.Held(1), std::vector<std::string>{"dx"});
}

TEST(DataWorldTest, AFailedNodeStopsItsFetchesAndKeepsItsCache) {
  DataConfig c;
  c.source_bytes_per_s = 1000;
  DataWorld world(c, 2);
  EXPECT_TRUE(!world.Stage(0, 1, {Ref("x", "dx", 1000)}, 0));
  std::set<size_t> changed;
  world.FetchesDone(1000, &changed);
  EXPECT_FALSE(world.Stage(0, 2, {Ref("y", "dy", 1000)}, 1000));
  world.NodeFailed(0, 1200);
  EXPECT_EQ(world.NextFetchEnd(), -1);
  EXPECT_EQ(world.Held(0), std::vector<std::string>{"dx"});
}

TEST(DatasetAssignTest, FamiliesReadOneDatasetOfTheirQueueByAFixedRule) {
  // Queue a: a burst of three (one family), then one much later; queue b: one job.
  auto jobs = testing::Jobs(
      "job_id,submit_time,duration,num_gpus,queue\n"
      "1,0,10,1,a\n2,30,10,1,a\n3,60,10,1,a\n4,90000,10,1,a\n5,0,10,1,b\n");
  DatasetRule rule;
  rule.per_queue = 4;
  rule.median_bytes = 100 * kMiB;
  auto again = jobs;
  std::vector<SimDataset> ds = AssignDatasets(&jobs, rule);
  EXPECT_EQ(AssignDatasets(&again, rule).size(), ds.size());
  std::map<std::string, std::string> of;
  for (size_t i = 0; i < jobs.size(); ++i) {
    of[jobs[i].id] = jobs[i].dataset;
    EXPECT_EQ(jobs[i].dataset, again[i].dataset) << "the same rule and seed, the same datasets";
    EXPECT_EQ(jobs[i].dataset.rfind(jobs[i].queue + "-data-", 0), 0u) << jobs[i].dataset;
    EXPECT_TRUE(jobs[i].name.empty()) << "names are left as the trace has them";
  }
  EXPECT_EQ(of["1"], of["2"]);
  EXPECT_EQ(of["2"], of["3"]);
  std::set<std::string> digests;
  for (const SimDataset& d : ds) {
    EXPECT_GE(d.bytes, 100 * kMiB / 64);
    EXPECT_LE(d.bytes, 100 * kMiB * 64);
    EXPECT_EQ(d.bytes % kMiB, 0);
    EXPECT_EQ(d.digest.size(), 7u + 64u);
    digests.insert(d.digest);
  }
  EXPECT_EQ(digests.size(), ds.size());
  rule.per_queue = 0;
  auto none = testing::Jobs("job_id,submit_time,duration,num_gpus\n1,0,10,1\n");
  EXPECT_TRUE(AssignDatasets(&none, rule).empty());
  EXPECT_TRUE(none[0].dataset.empty());
}

// Datasets x and y of 60 MiB each from a source of 1 MiB/s: a lone fetch takes 60 s.
SimConfig DataSim(int32_t nodes, int32_t gpus_per_node, int64_t cache_bytes, bool aware) {
  SimConfig c;
  c.cluster = {nodes, gpus_per_node, 1};
  c.policy = sched::OrderPolicy::kFifo;
  c.data.datasets = {{"x", "sha256:" + std::string(63, '0') + "1", 60 * kMiB},
                     {"y", "sha256:" + std::string(63, '0') + "2", 60 * kMiB}};
  c.data.node_cache_bytes = cache_bytes;
  c.data.source_bytes_per_s = kMiB;
  c.data.placement_aware = aware;
  return c;
}

std::vector<TraceJob> WithData(const std::string& csv, const std::vector<std::string>& data) {
  std::vector<TraceJob> jobs = testing::Jobs(csv);
  for (size_t i = 0; i < jobs.size(); ++i) jobs[i].dataset = data.at(i);
  return jobs;
}

SimResult MustSimulate(const std::vector<TraceJob>& jobs, const SimConfig& c) {
  Result<SimResult> r = Simulate(jobs, c);
  CORRAL_CHECK(r.ok(), r.status().message());
  return std::move(*r);
}

double JctS(const std::vector<TraceJob>& jobs, const SimResult& r, size_t i) {
  return static_cast<double>(r.jobs[i].end - jobs[i].submit_ms) / 1000.0;
}

// Two nodes of two GPUs. Q (no data) takes a GPU of n00000; A (2 GPUs, x) fits n00001 only
// and fetches x there: its work begins after the 60 s stage-in. B (1 GPU, x) comes once A is
// over: cache-aware placement puts it on n00001, which holds x, and it starts at once;
// cache-blind placement takes the best fit, n00000's free GPU, and fetches x again.
const char* kLocality =
    "job_id,submit_time,duration,num_gpus\n"
    "Q,0,10000,1\n"
    "A,1,100,2\n"
    "B,1000,100,1\n";

TEST(SimDataTest, AJobWhoseDataIsCachedStartsWithoutTheStageIn) {
  auto jobs = WithData(kLocality, {"", "x", "x"});
  SimResult r = MustSimulate(jobs, DataSim(2, 2, 0, /*aware=*/true));
  EXPECT_EQ(JctS(jobs, r, 1), 160) << "A: 60 s of stage-in, then its 100 s";
  EXPECT_EQ(JctS(jobs, r, 2), 100) << "B: its data was on the node it went to";
  EXPECT_EQ(r.runs.back().placement[0].node, "n00001");
  EXPECT_EQ(r.data.fetches, 1);
  EXPECT_EQ(r.data.stage_ins, 2);
  EXPECT_EQ(r.data.hits, 1);
  EXPECT_EQ(r.staging_gpu_ms, 2 * 60000) << "A's two GPUs waited 60 s";
  EXPECT_EQ(r.lost_gpu_ms, 0) << "a wait for data is not lost work";
}

TEST(SimDataTest, CacheBlindPlacementFetchesMoreBytes) {
  auto jobs = WithData(kLocality, {"", "x", "x"});
  SimResult aware = MustSimulate(jobs, DataSim(2, 2, 0, true));
  SimResult blind = MustSimulate(jobs, DataSim(2, 2, 0, false));
  EXPECT_EQ(blind.runs.back().placement[0].node, "n00000") << "best fit, away from its data";
  EXPECT_EQ(JctS(jobs, blind, 2), 160);
  EXPECT_EQ(blind.data.fetches, 2);
  EXPECT_GT(blind.data.fetched_bytes, aware.data.fetched_bytes);
  EXPECT_EQ(blind.data.fetched_bytes, 2 * 60 * kMiB);
}

TEST(SimDataTest, WithoutDatasetsTheJobsRunAsBefore) {
  auto jobs = testing::Jobs(kLocality);
  SimConfig plain = DataSim(2, 2, 0, true);
  plain.data = {};
  SimResult r = MustSimulate(jobs, plain);
  EXPECT_EQ(JctS(jobs, r, 1), 100);
  EXPECT_EQ(r.data.stage_ins, 0);
  // Datasets given, but no job reads one: the same runs.
  SimResult unused = MustSimulate(jobs, DataSim(2, 2, 0, true));
  ASSERT_EQ(unused.runs.size(), r.runs.size());
  for (size_t i = 0; i < r.runs.size(); ++i) {
    EXPECT_EQ(unused.runs[i].start, r.runs[i].start);
    EXPECT_EQ(unused.runs[i].end, r.runs[i].end);
    EXPECT_EQ(unused.runs[i].placement, r.runs[i].placement);
  }
}

// One node, one GPU, a cache of 100 MiB: y's arrival puts it over 95 MiB, so x, unpinned,
// is evicted, and the next job reading x fetches it again (and evicts y).
TEST(SimDataTest, AFullCacheEvictsWhatNoRunPins) {
  auto jobs =
      WithData("job_id,submit_time,duration,num_gpus\nA,0,100,1\nB,1000,100,1\nC,2000,100,1\n",
               {"x", "y", "x"});
  SimResult r = MustSimulate(jobs, DataSim(1, 1, 100 * kMiB, true));
  EXPECT_EQ(r.data.evictions, 2);
  EXPECT_EQ(r.data.fetches, 3);
  EXPECT_EQ(JctS(jobs, r, 2), 160) << "x was evicted: C stages it again";
  // Two GPUs: A (x) still runs when y lands, so x is pinned and stays; C then finds it.
  auto pinned =
      WithData("job_id,submit_time,duration,num_gpus\nA,0,10000,1\nB,0,100,1\nC,1000,100,1\n",
               {"x", "y", "x"});
  SimResult p = MustSimulate(pinned, DataSim(1, 2, 100 * kMiB, true));
  EXPECT_EQ(p.data.evictions, 0);
  EXPECT_EQ(p.data.fetches, 2);
  EXPECT_EQ(JctS(pinned, p, 2), 100);
}

// A gang over two nodes: each replica's node fetches the data (two fetches sharing the
// source: 120 s), and the run's work begins once both have it.
TEST(SimDataTest, AGangBeginsOnceEveryReplicaHasItsData) {
  auto jobs = WithData("job_id,submit_time,duration,num_gpus\nG,0,100,2\n", {"x"});
  SimResult r = MustSimulate(jobs, DataSim(2, 1, 0, true));
  ASSERT_EQ(r.runs.size(), 1u);
  ASSERT_EQ(r.runs[0].placement.size(), 2u);
  EXPECT_EQ(JctS(jobs, r, 0), 220);
  EXPECT_EQ(r.data.fetches, 2);
  EXPECT_EQ(r.data.staged_replicas, 2);
}

TEST(SimDataTest, BadSettingsAreRefused) {
  auto jobs = WithData("job_id,submit_time,duration,num_gpus\nG,0,100,1\n", {"x"});
  SimConfig c = DataSim(1, 1, 0, true);
  c.data.source_bytes_per_s = 0;
  Result<SimResult> r = Simulate(jobs, c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("source_bytes_per_s"), std::string::npos);
}

}  // namespace
}  // namespace corral::sim
