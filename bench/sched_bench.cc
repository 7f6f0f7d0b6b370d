// Scheduler benchmarks (docs/benchmarks.md, "Scheduler"): 10,000 nodes x 8 GPUs in racks of
// 40, 100,000 pending jobs (1-8 GPUs on one node, or gangs of 2-16 nodes x 8 GPUs), 50 queues
// with quotas, several users each.
//  - BM_FullPass: one pass over the whole pending set on an idle cluster; reports
//    placements_per_s.
//  - BM_Incremental: after the cluster is full, 1% of the runs end, then one pass; reports
//    the median pass time (median_ms) and preemptions per pass beside placements.
//  - BM_IncrementalPriorityMix: the same with a priority mix (10% priority 1, 2% priority 2):
//    higher classes preempt lower ones, and LAS levels inside queues.
//  - BM_EstimateStarts/N/A: the cluster full after one pass, 100,000 jobs still pending: one
//    start-time estimate of every pending job (Scheduler::EstimateStarts); N = 0: the sweep,
//    else the pass run forward on a fork with at most N passes (the rest from the sweep), with
//    (A = 1) or without (A = 0) the expected arrivals;
//    reports how many got an estimate and the median time (median_ms).
// All with the default SchedulerConfig (las_within_queue, hysteresis, preemption budgets,
// run-time predictions: jobs carry PendingJob::predicted_ms as ToPendingJob gives it). The
// driver behaves like the head: a preempted run is requeued with the service it attained.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
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

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

PendingJob RandomJob(std::mt19937_64& rng, JobId id, bool priority_mix) {
  PendingJob j;
  j.id = id;
  j.queue = "org" + std::to_string(id % kQueues % 5) + "/team" + std::to_string(id % kQueues);
  j.user = "user" + std::to_string(rng() % 8);
  j.priority = 0;
  if (priority_mix) {
    uint64_t r = rng() % 100;
    j.priority = r < 2 ? 2 : r < 12 ? 1 : 0;
  }
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
  // Run-time predictions as ToPendingJob makes them: half the jobs have a history (a log-
  // uniform guess between a minute and a day), bounded by the time limit; the others only
  // their time limit. Drawn from the id, not rng, so the jobs' shapes are those of the runs
  // before predictions existed.
  uint64_t h = SplitMix(id);
  if (h % 2 == 0) {
    double u = static_cast<double>(h >> 11) * 0x1.0p-53;
    auto guess = static_cast<DurationMs>(kMinute * std::exp(u * std::log(1440.0)));
    j.predicted_ms = j.time_limit_ms > 0 ? std::min(guess, j.time_limit_ms) : guess;
  } else {
    j.predicted_ms = j.time_limit_ms;
  }
  return j;
}

int64_t TotalGpusOf(const PendingJob& j) {
  return int64_t{j.replicas} * (j.per_replica.gpu_milli / kGpuMilli);
}

SchedulerConfig BenchConfig() { return SchedulerConfig{}; }  // the defaults

void BM_FullPass(benchmark::State& state) {
  int64_t placements = 0;
  for (auto _ : state) {
    state.PauseTiming();
    Scheduler s(BenchConfig());
    AddCluster(s);
    std::mt19937_64 rng(42);
    for (JobId id = 1; id <= kPending; ++id) s.AddPending(RandomJob(rng, id, false));
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

void Incremental(benchmark::State& state, bool priority_mix, bool predictions = true) {
  SchedulerConfig config = BenchConfig();
  config.corral.predict.on = predictions;
  Scheduler s(config);
  AddCluster(s);
  std::mt19937_64 rng(42);
  std::map<JobId, PendingJob> jobs;  // every job, as submitted
  for (JobId id = 1; id <= kPending; ++id) {
    PendingJob j = RandomJob(rng, id, priority_mix);
    jobs[id] = j;
    s.AddPending(j);
  }
  TimeMs now = kHour;
  struct Live {
    JobId id;
    TimeMs started;
  };
  std::vector<Live> running;
  auto place = [&](const Decisions& d) {
    for (const PlaceDecision& p : d.place) running.push_back({p.job, now});
  };
  place(s.Schedule(now));
  JobId next_id = kPending + 1;
  std::vector<double> times_ms;
  int64_t placed = 0, preempted = 0, attempts = 0, work = 0, denied = 0;
  for (auto _ : state) {
    // 1% of the runs end.
    size_t ends = std::max<size_t>(1, running.size() / 100);
    for (size_t k = 0; k < ends && !running.empty(); ++k) {
      size_t i = rng() % running.size();
      s.RemoveRunning(running[i].id);
      jobs.erase(running[i].id);
      running[i] = running.back();
      running.pop_back();
    }
    for (int k = 0; k < 100; ++k) {  // new arrivals
      PendingJob j = RandomJob(rng, next_id++, priority_mix);
      j.submitted_at = now;
      jobs[j.id] = j;
      s.AddPending(j);
    }
    now += kMinute;
    auto t0 = std::chrono::steady_clock::now();
    Decisions d = s.Schedule(now);
    auto t1 = std::chrono::steady_clock::now();
    double secs = std::chrono::duration<double>(t1 - t0).count();
    state.SetIterationTime(secs);
    times_ms.push_back(secs * 1e3);
    place(d);
    // The driver stops each victim and requeues it with the service it attained (the next
    // pass places the job it made room for).
    for (const PreemptDecision& p : d.preempt) {
      auto it = std::find_if(running.begin(), running.end(),
                             [&](const Live& l) { return l.id == p.job; });
      PendingJob& j = jobs.at(p.job);
      j.attained_ms += TotalGpusOf(j) * (now - it->started);
      s.RemoveRunning(p.job);
      s.AddPending(j);
      *it = running.back();
      running.pop_back();
      ++preempted;
    }
    placed += static_cast<int64_t>(d.place.size());
    attempts += s.GetStats().last_pass_attempts;
    work += s.GetStats().last_pass_work;
    denied += s.GetStats().last_pass_budget_denied;
  }
  double passes = static_cast<double>(std::max<size_t>(1, times_ms.size()));
  state.counters["attempts_per_pass"] = static_cast<double>(attempts) / passes;
  state.counters["work_per_pass"] = static_cast<double>(work) / passes;
  std::sort(times_ms.begin(), times_ms.end());
  state.counters["median_ms"] = times_ms.empty() ? 0 : times_ms[times_ms.size() / 2];
  state.counters["p99_ms"] = times_ms.empty() ? 0 : times_ms[times_ms.size() * 99 / 100];
  state.counters["placed_per_pass"] = static_cast<double>(placed) / passes;
  state.counters["preempted_per_pass"] = static_cast<double>(preempted) / passes;
  state.counters["preempted_per_placed"] =
      static_cast<double>(preempted) / static_cast<double>(std::max<int64_t>(1, placed));
  state.counters["budget_denied_per_pass"] = static_cast<double>(denied) / passes;
  state.counters["running"] = static_cast<double>(running.size());
  state.counters["pending"] = static_cast<double>(s.GetStats().pending);
}

void BM_Incremental(benchmark::State& state) { Incremental(state, false); }
BENCHMARK(BM_Incremental)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(100);

// The same as BM_Incremental with PredictionConfig::on off: what predictions
// cost or save, side by side in one run.
void BM_IncrementalNoPredictions(benchmark::State& state) { Incremental(state, false, false); }
BENCHMARK(BM_IncrementalNoPredictions)
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime()
    ->Iterations(100);

void BM_IncrementalPriorityMix(benchmark::State& state) { Incremental(state, true); }
BENCHMARK(BM_IncrementalPriorityMix)
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime()
    ->Iterations(100);

void BM_IncrementalPriorityMixNoPredictions(benchmark::State& state) {
  Incremental(state, true, false);
}
BENCHMARK(BM_IncrementalPriorityMixNoPredictions)
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime()
    ->Iterations(100);

// The jobs of the other benchmarks, but every one with a time limit (a cluster's default of
// three days where it had none): without one, the runs the first pass places never end in the
// model and no pending job could get an estimate.
PendingJob LimitedJob(std::mt19937_64& rng, JobId id) {
  PendingJob j = RandomJob(rng, id, false);
  if (j.time_limit_ms == 0) j.time_limit_ms = 72 * kHour;
  return j;
}

// arg 0: the sweep (EstimateMethod::kSweep); > 0: the pass run forward with that many passes
// at most (kForward's max_passes). Second arg: 1, with the expected arrivals of the default
// window (every job was submitted within it: the 10,000 kept arrive again, some 83 a minute);
// 0: none arrive.
void BM_EstimateStarts(benchmark::State& state) {
  EstimateOptions options;
  if (state.range(0) == 0) {
    options.method = EstimateMethod::kSweep;
  } else {
    options.max_passes = state.range(0);
  }
  if (state.range(1) == 0) options.arrival_window_ms = 0;
  Scheduler s(BenchConfig());
  AddCluster(s);
  std::mt19937_64 rng(42);
  JobId id = 1;
  for (; id <= kPending; ++id) s.AddPending(LimitedJob(rng, id));
  TimeMs now = kHour;
  benchmark::DoNotOptimize(s.Schedule(now));
  while (s.GetStats().pending < kPending) s.AddPending(LimitedJob(rng, id++));
  now += kMinute;
  std::vector<double> times_ms;
  int64_t estimated = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<StartEstimate> e = s.EstimateStarts(now, options);
    auto t1 = std::chrono::steady_clock::now();
    double secs = std::chrono::duration<double>(t1 - t0).count();
    state.SetIterationTime(secs);
    times_ms.push_back(secs * 1e3);
    estimated = std::count_if(e.begin(), e.end(),
                              [](const StartEstimate& x) { return x.start != kUnknownTime; });
  }
  std::sort(times_ms.begin(), times_ms.end());
  state.counters["median_ms"] = times_ms.empty() ? 0 : times_ms[times_ms.size() / 2];
  state.counters["pending"] = static_cast<double>(s.GetStats().pending);
  state.counters["running"] = static_cast<double>(s.GetStats().running);
  state.counters["estimated"] = static_cast<double>(estimated);
}
BENCHMARK(BM_EstimateStarts)
    ->Args({0, 0})
    ->Args({16, 1})
    ->Args({64, 1})
    ->Args({256, 1})
    ->Args({256, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime()
    ->Iterations(5);

}  // namespace
}  // namespace corral::sched

BENCHMARK_MAIN();
