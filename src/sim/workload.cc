// A trace's load on a cluster: what a job holds, arrivals at a chosen load, quotas by demand.
#include <algorithm>
#include <cmath>
#include <random>
#include <tuple>

#include "sim/simulator.h"

namespace corral::sim {

int64_t HeldMilliGpus(const TraceJob& j, bool round_up) {
  bool share = j.gpu_milli > 0 || j.gpu_memory_mb > 0;
  if (!share || round_up) return int64_t{j.num_gpus} * kGpuMilli;
  return j.gpu_milli > 0 ? j.gpu_milli : kGpuMilli;  // memory alone: the GPU's compute unbounded
}

void PoissonArrivals(std::vector<TraceJob>* jobs, double load, int64_t capacity_milli,
                     uint64_t seed) {
  if (jobs->empty()) return;
  double work = 0;  // milli-GPU-ms
  for (const TraceJob& j : *jobs) {
    work += static_cast<double>(HeldMilliGpus(j)) * static_cast<double>(j.duration_ms);
  }
  double mean_work = work / static_cast<double>(jobs->size());
  // Mean gap between arrivals (ms) such that offered work per ms = load x capacity.
  double mean_gap = mean_work / (load * static_cast<double>(capacity_milli));
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(1.0);
  double t = 0;
  for (TraceJob& j : *jobs) {
    j.submit_ms = std::llround(t);
    t += gap(rng) * mean_gap;
  }
}

std::map<std::string, int32_t> QuotasByDemand(const std::vector<TraceJob>& jobs,
                                              int64_t total_gpus) {
  std::map<std::string, double> demand;
  double sum = 0;
  for (const TraceJob& j : jobs) {
    double d = static_cast<double>(j.duration_ms) * j.num_gpus;
    demand[j.queue] += d;
    sum += d;
  }
  std::map<std::string, int32_t> out;
  if (demand.empty()) return out;
  if (sum <= 0) {  // only zero-length jobs: split evenly
    for (auto& [q, d] : demand) d = 1, sum += 1;
  }
  int64_t given = 0;
  std::vector<std::tuple<double, std::string>> rest;  // (-remainder, name)
  for (const auto& [q, d] : demand) {
    double exact = d / sum * static_cast<double>(total_gpus);
    auto whole = static_cast<int32_t>(exact);
    out[q] = whole;
    given += whole;
    rest.emplace_back(-(exact - whole), q);
  }
  std::sort(rest.begin(), rest.end());
  for (size_t i = 0; given < total_gpus && i < rest.size(); ++i, ++given) {
    ++out[std::get<1>(rest[i])];
  }
  return out;
}

}  // namespace corral::sim
