#include "sim/oracle_bounds.h"

#include <utility>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <numbers>
#include <string>

namespace corral::sim {

namespace {

// n ascending samples read through `at`, each weighing 1.
template <typename At>
sched::RunTimeQuantiles Points(size_t n, At at) {
  return sched::QuantilesOfAscending(n, static_cast<double>(n), at, [](size_t) { return 1.0; });
}

// The jobs' groups (rows in submission order) and each row's place in its own.
struct Groups {
  std::map<std::pair<std::string, int32_t>, std::vector<size_t>> by_user_gpus;
  std::map<std::string, std::vector<size_t>> by_user;
  std::vector<size_t> all;
  std::vector<size_t> at_user_gpus, at_user;  // by row
};

Groups GroupsOf(const std::vector<TraceJob>& jobs) {
  Groups g;
  for (size_t r = 0; r < jobs.size(); ++r) {
    std::vector<size_t>& ug = g.by_user_gpus[{jobs[r].user, jobs[r].num_gpus}];
    std::vector<size_t>& u = g.by_user[jobs[r].user];
    g.at_user_gpus.push_back(ug.size());
    g.at_user.push_back(u.size());
    ug.push_back(r);
    u.push_back(r);
    g.all.push_back(r);
  }
  return g;
}

// The most specific group of row r with at least kBoundMinOthers other jobs (else every job),
// and r's position in it.
std::pair<const std::vector<size_t>*, size_t> GroupOf(const Groups& g,
                                                      const std::vector<TraceJob>& jobs, size_t r) {
  const std::vector<size_t>& ug = g.by_user_gpus.at({jobs[r].user, jobs[r].num_gpus});
  if (ug.size() > kBoundMinOthers) return {&ug, g.at_user_gpus[r]};
  const std::vector<size_t>& u = g.by_user.at(jobs[r].user);
  if (u.size() > kBoundMinOthers) return {&u, g.at_user[r]};
  return {&g.all, r};
}

// Every other job of the group: its sorted run times less one copy of the job's own.
sched::RunTimeQuantiles AllOthers(const std::vector<DurationMs>& sorted, DurationMs own) {
  const size_t skip =
      static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), own) - sorted.begin());
  return Points(sorted.size() - 1, [&](size_t k) { return sorted[k < skip ? k : k + 1]; });
}

// The `window` others nearest position p of the group, the earlier first at equal distance; a
// side that runs out leaves its share to the other.
sched::RunTimeQuantiles Nearest(const std::vector<TraceJob>& jobs, const std::vector<size_t>& group,
                                size_t p, size_t window) {
  std::vector<DurationMs> v;
  size_t before = p, after = p + 1;  // next to take: group[before - 1], group[after]
  while (v.size() < window && (before > 0 || after < group.size())) {
    if (before > 0) v.push_back(jobs[group[--before]].duration_ms);
    if (v.size() < window && after < group.size()) {
      v.push_back(jobs[group[after++]].duration_ms);
    }
  }
  std::sort(v.begin(), v.end());
  return QuantilesOfSorted(v);
}

// A standard normal from the row alone: splitmix64 for two uniforms, then Box-Muller
// (std::normal_distribution differs between standard libraries).
double NormalOfRow(size_t row) {
  auto mix = [](uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  const uint64_t a = mix(2 * static_cast<uint64_t>(row) + 1);
  const uint64_t b = mix(a);
  const double u1 = (static_cast<double>(a >> 11) + 0.5) / 9007199254740992.0;  // (0, 1)
  const double u2 = static_cast<double>(b >> 11) / 9007199254740992.0;          // [0, 1)
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace

sched::RunTimeQuantiles QuantilesOfSorted(const std::vector<DurationMs>& sorted) {
  return Points(sorted.size(), [&](size_t k) { return sorted[k]; });
}

std::vector<sched::RunTimeQuantiles> BoundDistributions(const std::vector<TraceJob>& jobs,
                                                        OracleBound bound, size_t window) {
  std::vector<sched::RunTimeQuantiles> out(jobs.size());
  if (jobs.size() < 2) return out;
  const Groups g = GroupsOf(jobs);
  std::map<const std::vector<size_t>*, std::vector<DurationMs>> sorted;  // by group
  for (size_t r = 0; r < jobs.size(); ++r) {
    const auto [group, at] = GroupOf(g, jobs, r);
    if (bound == OracleBound::kUserGpus) {
      auto [it, fresh] = sorted.try_emplace(group);
      if (fresh) {
        for (size_t row : *group) it->second.push_back(jobs[row].duration_ms);
        std::sort(it->second.begin(), it->second.end());
      }
      out[r] = AllOthers(it->second, jobs[r].duration_ms);
    } else if (bound == OracleBound::kWindow) {
      out[r] = Nearest(jobs, *group, at, window);
    }
  }
  return out;
}

DurationMs NoisyDuration(DurationMs duration_ms, size_t row, double sigma) {
  if (sigma <= 0) return std::max<DurationMs>(1, duration_ms);
  const double noisy = static_cast<double>(duration_ms) * std::exp(sigma * NormalOfRow(row));
  return std::max<DurationMs>(1, std::llround(std::min(noisy, 9.0e15)));
}

}  // namespace corral::sim
