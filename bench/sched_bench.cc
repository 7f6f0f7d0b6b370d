// Scheduler benchmarks (docs/benchmarks.md, "Scheduler"): 10,000 nodes x 8 GPUs in racks of
// 40, 100,000 pending jobs (1-8 GPUs on one node, or gangs of 2-16 nodes x 8 GPUs), 50 queues
// with quotas, several users each.
//  - BM_FullPass: one pass over the whole pending set on an idle cluster; reports
//    placements_per_s.
//  - BM_Incremental: after the cluster is full, 1% of the runs end, then one pass; reports
//    the median pass time (median_ms).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "sched/scheduler.h"

namespace corral::sched {
namespace {

constexpr int kNodes = 10'000;
constexpr int kGpusPerNode = 8;
constexpr int kPending = 100'000;
constexpr int kQueues = 50;

void AddCluster(Scheduler& s) {
  for (int q = 0; q < kQueues; ++q) {
    QueueConfig c;
    c.name = "org" + std::to_string(q % 5) + "/team" + std::to_string(q);
    c.quota_gpus = kNodes * kGpusPerNode / kQueues * 3 / 4;
    c.weight = 1.0 + q % 3;
    s.SetQueue(c);
  }
  for (int n = 0; n < kNodes; ++n) {
    NodeInfo node;
    node.name = "node" + std::to_string(n);
    node.labels["rack"] = "rack" + std::to_string(n / 40);
    node.cpu_milli = 128'000;
    node.memory_mb = 1024 * 1024;
    for (int g = 0; g < kGpusPerNode; ++g) {
      Gpu gpu;
      gpu.index = g;
      gpu.model = "H100";
      gpu.group = g / 4;
      node.gpus.push_back(gpu);
    }
    s.UpsertNode(node);
  }
}

PendingJob RandomJob(std::mt19937_64& rng, JobId id) {
  PendingJob j;
  j.id = id;
  j.queue = "org" + std::to_string(id % kQueues % 5) + "/team" + std::to_string(id % kQueues);
  j.user = "user" + std::to_string(rng() % 8);
  j.priority = 0;  // one class: a priority mix would measure a preemption storm
  j.submitted_at = static_cast<TimeMs>(id);
  if (rng() % 100 < 85) {
    j.replicas = 1;
    j.per_replica.gpu_milli = static_cast<int32_t>(1 + rng() % 8) * kGpuMilli;
  } else {
    j.replicas = static_cast<int32_t>(2 + rng() % 15);
    j.per_replica.gpu_milli = 8 * kGpuMilli;
  }
  j.per_replica.cpu_milli = j.per_replica.gpu_milli / kGpuMilli * 8'000;
  j.per_replica.memory_mb = j.per_replica.gpu_milli / kGpuMilli * 64 * 1024;
  static const DurationMs kLimits[] = {0, 0, kHour, 4 * kHour, 24 * kHour};
  j.time_limit_ms = kLimits[rng() % 5];
  j.preemptible = rng() % 2 == 0;
  return j;
}

SchedulerConfig BenchConfig() {
  SchedulerConfig c;
  c.max_work_per_pass = 50'000'000;
  return c;
}

void BM_FullPass(benchmark::State& state) {
  int64_t placements = 0;
  for (auto _ : state) {
    state.PauseTiming();
    Scheduler s(BenchConfig());
    AddCluster(s);
    std::mt19937_64 rng(42);
    for (JobId id = 1; id <= kPending; ++id) s.AddPending(RandomJob(rng, id));
    state.ResumeTiming();
    Decisions d = s.Schedule(kHour);
    benchmark::DoNotOptimize(d);
    placements += static_cast<int64_t>(d.place.size());
    state.PauseTiming();
    state.counters["placed"] = static_cast<double>(d.place.size());
    state.counters["free_gpus_after"] = static_cast<double>(s.GetStats().free_gpus);
    {
      Decisions drop = std::move(d);  // destroy outside the timed region
    }
    state.ResumeTiming();
  }
  state.counters["placements_per_s"] =
      benchmark::Counter(static_cast<double>(placements), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_FullPass)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_Incremental(benchmark::State& state) {
  Scheduler s(BenchConfig());
  AddCluster(s);
  std::mt19937_64 rng(42);
  for (JobId id = 1; id <= kPending; ++id) s.AddPending(RandomJob(rng, id));
  TimeMs now = kHour;
  std::vector<JobId> running;
  {
    Decisions d = s.Schedule(now);
    for (const PlaceDecision& p : d.place) running.push_back(p.job);
  }
  JobId next_id = kPending + 1;
  std::vector<double> times_ms;
  int64_t placed = 0, preempted = 0, attempts = 0, work = 0;
  for (auto _ : state) {
    // 1% of the runs end (and the driver replaces ended victims of the previous pass).
    size_t ends = std::max<size_t>(1, running.size() / 100);
    for (size_t k = 0; k < ends && !running.empty(); ++k) {
      size_t i = rng() % running.size();
      s.RemoveRunning(running[i]);
      running[i] = running.back();
      running.pop_back();
    }
    for (int k = 0; k < 100; ++k) s.AddPending(RandomJob(rng, next_id++));  // new arrivals
    now += kMinute;
    auto t0 = std::chrono::steady_clock::now();
    Decisions d = s.Schedule(now);
    auto t1 = std::chrono::steady_clock::now();
    double secs = std::chrono::duration<double>(t1 - t0).count();
    state.SetIterationTime(secs);
    times_ms.push_back(secs * 1e3);
    for (const PlaceDecision& p : d.place) running.push_back(p.job);
    for (const PreemptDecision& p : d.preempt) {
      s.RemoveRunning(p.job);
      std::erase(running, p.job);
      ++preempted;
    }
    placed += static_cast<int64_t>(d.place.size());
    attempts += s.GetStats().last_pass_attempts;
    work += s.GetStats().last_pass_work;
  }
  state.counters["attempts_per_pass"] =
      static_cast<double>(attempts) / std::max<size_t>(1, times_ms.size());
  state.counters["work_per_pass"] =
      static_cast<double>(work) / std::max<size_t>(1, times_ms.size());
  std::sort(times_ms.begin(), times_ms.end());
  state.counters["median_ms"] = times_ms.empty() ? 0 : times_ms[times_ms.size() / 2];
  state.counters["p99_ms"] = times_ms.empty() ? 0 : times_ms[times_ms.size() * 99 / 100];
  state.counters["placed_per_pass"] =
      static_cast<double>(placed) / std::max<size_t>(1, times_ms.size());
  state.counters["preempted_per_pass"] =
      static_cast<double>(preempted) / std::max<size_t>(1, times_ms.size());
  state.counters["running"] = static_cast<double>(running.size());
  state.counters["pending"] = static_cast<double>(s.GetStats().pending);
}
BENCHMARK(BM_Incremental)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(50);

}  // namespace
}  // namespace corral::sched

BENCHMARK_MAIN();
