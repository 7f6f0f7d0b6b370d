#include "core/usage_series.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace corral {
namespace {

// a's and b's means weighted by their samples.
template <typename T>
T WeightedMean(T a, int32_t wa, T b, int32_t wb) {
  const double total = static_cast<double>(wa) + wb;
  if (total <= 0) return T{};
  return static_cast<T>(
      std::llround((static_cast<double>(a) * wa + static_cast<double>(b) * wb) / total));
}

std::string SeriesMiB(double bytes) {
  char buf[32];
  const double mib = bytes / (1024.0 * 1024.0);
  if (mib >= 1024) {
    std::snprintf(buf, sizeof buf, "%.1f GiB", mib / 1024);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f MiB", mib);
  }
  return buf;
}

std::string SeriesPercent(double v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0f%%", v);
  return buf;
}

}  // namespace

UsagePoint RawUsagePoint(int64_t seq, TimeMs at, int32_t gpu_util, int64_t gpu_mem,
                         int32_t cpu_milli, int64_t mem) {
  return UsagePoint{seq,     at,        1,         gpu_util, gpu_util, gpu_mem,
                    gpu_mem, cpu_milli, cpu_milli, mem,      mem};
}

UsagePoint MergeUsage(const UsagePoint& a, const UsagePoint& b) {
  UsagePoint m;
  m.seq = std::max(a.seq, b.seq);
  m.at = std::max(a.at, b.at);
  m.samples = a.samples + b.samples;
  m.gpu_util = WeightedMean(a.gpu_util, a.samples, b.gpu_util, b.samples);
  m.gpu_util_max = std::max(a.gpu_util_max, b.gpu_util_max);
  m.gpu_mem = WeightedMean(a.gpu_mem, a.samples, b.gpu_mem, b.samples);
  m.gpu_mem_max = std::max(a.gpu_mem_max, b.gpu_mem_max);
  m.cpu_milli = WeightedMean(a.cpu_milli, a.samples, b.cpu_milli, b.samples);
  m.cpu_milli_max = std::max(a.cpu_milli_max, b.cpu_milli_max);
  m.mem = WeightedMean(a.mem, a.samples, b.mem, b.samples);
  m.mem_max = std::max(a.mem_max, b.mem_max);
  return m;
}

std::vector<UsagePoint> DownsampleUsage(const std::vector<UsagePoint>& points) {
  std::vector<UsagePoint> out;
  out.reserve((points.size() + 1) / 2);
  for (size_t i = 0; i < points.size(); i += 2) {
    out.push_back(i + 1 < points.size() ? MergeUsage(points[i], points[i + 1]) : points[i]);
  }
  return out;
}

size_t AppendUsage(ReplicaUsage* series, const std::vector<UsagePoint>& in, size_t max_points) {
  size_t taken = 0;
  for (const UsagePoint& p : in) {
    if (p.seq <= series->last_seq) continue;
    series->points.push_back(p);
    series->last_seq = p.seq;
    ++taken;
  }
  while (max_points >= 2 && series->points.size() > max_points) {
    series->points = DownsampleUsage(series->points);
  }
  return taken;
}

std::vector<UsagePoint> UsageAfter(const std::vector<UsagePoint>& points, int64_t after) {
  std::vector<UsagePoint> out;
  for (const UsagePoint& p : points) {
    if (p.seq > after) out.push_back(p);
  }
  return out;
}

UsageSummary SummarizeUsage(const std::vector<ReplicaUsage>& series) {
  UsageSummary s;
  double util = 0, gpu_mem = 0, cpu = 0, mem = 0;
  for (const ReplicaUsage& r : series) {
    for (const UsagePoint& p : r.points) {
      s.samples += p.samples;
      util += static_cast<double>(p.gpu_util) * p.samples;
      gpu_mem += static_cast<double>(p.gpu_mem) * p.samples;
      cpu += static_cast<double>(p.cpu_milli) * p.samples;
      mem += static_cast<double>(p.mem) * p.samples;
      s.gpu_util_max = std::max(s.gpu_util_max, p.gpu_util_max);
      s.gpu_mem_max = std::max(s.gpu_mem_max, p.gpu_mem_max);
      s.cpu_milli_max = std::max(s.cpu_milli_max, p.cpu_milli_max);
      s.mem_max = std::max(s.mem_max, p.mem_max);
    }
  }
  if (s.samples > 0) {
    const double n = static_cast<double>(s.samples);
    s.gpu_util = util / n;
    s.gpu_mem = gpu_mem / n;
    s.cpu_milli = cpu / n;
    s.mem = mem / n;
  }
  return s;
}

UsageSummary CombineUsage(const std::vector<UsageSummary>& parts) {
  UsageSummary s;
  for (const UsageSummary& p : parts) {
    if (p.samples == 0) continue;
    const double n = static_cast<double>(p.samples);
    s.gpu_util += p.gpu_util * n;
    s.gpu_mem += p.gpu_mem * n;
    s.cpu_milli += p.cpu_milli * n;
    s.mem += p.mem * n;
    s.samples += p.samples;
    s.gpu_util_max = std::max(s.gpu_util_max, p.gpu_util_max);
    s.gpu_mem_max = std::max(s.gpu_mem_max, p.gpu_mem_max);
    s.cpu_milli_max = std::max(s.cpu_milli_max, p.cpu_milli_max);
    s.mem_max = std::max(s.mem_max, p.mem_max);
  }
  if (s.samples > 0) {
    const double n = static_cast<double>(s.samples);
    s.gpu_util /= n;
    s.gpu_mem /= n;
    s.cpu_milli /= n;
    s.mem /= n;
  }
  return s;
}

const char* EfficiencyFindingName(EfficiencyFinding f) {
  switch (f) {
    case EfficiencyFinding::kUnmeasured:
      return "unmeasured";
    case EfficiencyFinding::kIdleGpus:
      return "idle_gpus";
    case EfficiencyFinding::kLowGpu:
      return "low_gpu";
    case EfficiencyFinding::kGpuMemoryHeadroom:
      return "gpu_memory_headroom";
    case EfficiencyFinding::kMemoryHeadroom:
      return "memory_headroom";
    case EfficiencyFinding::kLowCpu:
      return "low_cpu";
    case EfficiencyFinding::kGood:
      return "good";
  }
  return "good";
}

std::vector<EfficiencyNote> JudgeUsage(const UsageSummary& use, const UsageRequest& asked) {
  std::vector<EfficiencyNote> out;
  if (use.samples == 0) {
    return {{EfficiencyFinding::kUnmeasured, "no sample of its use yet"}};
  }
  if (asked.gpus > 0 && use.gpu_util < kIdleGpuPercent) {
    out.push_back({EfficiencyFinding::kIdleGpus, "GPUs idle: mean utilisation " +
                                                     SeriesPercent(use.gpu_util) + ", peak " +
                                                     SeriesPercent(use.gpu_util_max) +
                                                     "; release them or check the job uses "
                                                     "CUDA"});
  } else if (asked.gpus > 0 && use.gpu_util < 50) {
    out.push_back({EfficiencyFinding::kLowGpu,
                   "GPUs busy " + SeriesPercent(use.gpu_util) +
                       " of the time; the input pipeline or fewer GPUs may help"});
  }
  const double gpu_memory = asked.gpu_memory * std::max(1.0, std::ceil(asked.gpus));
  if (asked.gpus > 0 && gpu_memory > 0 && use.gpu_mem_max > 0 && use.gpu_mem_max < gpu_memory / 4) {
    out.push_back({EfficiencyFinding::kGpuMemoryHeadroom,
                   "GPU memory peak " + SeriesMiB(static_cast<double>(use.gpu_mem_max)) + " of " +
                       SeriesMiB(gpu_memory) + "; a GPU share (--gpus 0.5) may do"});
  }
  // mem_max 0: the node has no cgroups to measure it, not a job that used nothing.
  if (asked.memory > 0 && use.mem_max > 0 && use.mem_max < asked.memory / 2) {
    out.push_back({EfficiencyFinding::kMemoryHeadroom,
                   "memory peak " + SeriesMiB(static_cast<double>(use.mem_max)) + " of " +
                       SeriesMiB(static_cast<double>(asked.memory)) + " asked; ask for less"});
  }
  if (asked.cpu_milli >= 2000 && use.cpu_milli < asked.cpu_milli / 4.0) {
    out.push_back({EfficiencyFinding::kLowCpu,
                   "CPU use " + SeriesPercent(100.0 * use.cpu_milli / asked.cpu_milli) + " of " +
                       std::to_string(asked.cpu_milli / 1000) + " CPUs asked; ask for fewer"});
  }
  if (out.empty()) out.push_back({EfficiencyFinding::kGood, "uses what it holds"});
  return out;
}

}  // namespace corral
