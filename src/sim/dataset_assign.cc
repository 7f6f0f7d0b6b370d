#include "sim/dataset_assign.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <numbers>
#include <string>

namespace corral::sim {
namespace {

// splitmix64 over FNV-1a: the same numbers on every platform (std::hash is not specified).
uint64_t AssignHash(uint64_t seed, const std::string& text) {
  uint64_t h = 1469598103934665603ULL ^ seed;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  h += 0x9e3779b97f4a7c15ULL;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

// A uniform double in [0, 1) from a hash.
double AssignUniform(uint64_t seed, const std::string& text) {
  return static_cast<double>(AssignHash(seed, text) >> 11) * 0x1.0p-53;
}

// The dataset (0..n-1) a family reads: Zipf with exponent 1.
int32_t ZipfPick(double u, int32_t n) {
  double total = 0;
  for (int32_t k = 0; k < n; ++k) total += 1.0 / (k + 1);
  double acc = 0;
  for (int32_t k = 0; k < n; ++k) {
    acc += 1.0 / (k + 1) / total;
    if (u < acc) return k;
  }
  return n - 1;
}

int64_t LogNormalBytes(const DatasetRule& rule, const std::string& key) {
  // Box-Muller from two hashed uniforms (u1 in (0, 1]).
  const double u1 = 1.0 - AssignUniform(rule.seed, key + "/size/1");
  const double u2 = AssignUniform(rule.seed, key + "/size/2");
  const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  const double median = static_cast<double>(rule.median_bytes);
  double bytes = median * std::exp(rule.sigma * z);
  bytes = std::clamp(bytes, median / 64, median * 64);
  constexpr int64_t kMiB = int64_t{1} << 20;
  return std::max<int64_t>(kMiB, static_cast<int64_t>(bytes) / kMiB * kMiB);
}

// A registered name: the queue's letters, digits, '-', '_' and '.', others as '_'.
std::string DatasetNameOf(const std::string& queue, int32_t k) {
  std::string q = queue.empty() ? "default" : queue.substr(0, 48);
  for (char& c : q) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  }
  return q + "-data-" + std::to_string(k);
}

std::string DigestOf(size_t index) {
  char buf[80];
  std::snprintf(buf, sizeof buf, "sha256:%064zx", index + 1);
  return buf;
}

}  // namespace

std::vector<SimDataset> AssignDatasets(std::vector<TraceJob>* jobs, const DatasetRule& rule) {
  if (rule.per_queue <= 0) return {};
  // The bursts of the jobs without a name, on a copy: the jobs keep their names and users.
  std::vector<TraceJob> named = *jobs;
  InferJobNames(&named, rule.family_window);
  std::map<std::string, SimDataset> by_name;
  for (size_t i = 0; i < jobs->size(); ++i) {
    TraceJob& j = (*jobs)[i];
    if (!j.dataset.empty()) continue;
    const std::string family = named[i].user + "\x1f" + named[i].name;
    const int32_t k = ZipfPick(AssignUniform(rule.seed, "pick/" + family), rule.per_queue);
    j.dataset = DatasetNameOf(j.queue, k);
    if (by_name.count(j.dataset)) continue;
    SimDataset d;
    d.name = j.dataset;
    d.bytes = LogNormalBytes(rule, j.queue + "\x1f" + std::to_string(k));
    by_name[d.name] = d;
  }
  std::vector<SimDataset> out;
  for (auto& [name, d] : by_name) {
    d.digest = DigestOf(out.size());
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace corral::sim
