// A run's use of what it was given, over time (docs/efficiency.md): each replica's agent samples
// the replica's GPUs (utilisation and memory, through its GPU probe) and its cgroup (CPU and
// memory) once an interval, numbers the samples from 1, and reports them with the run; the head
// keeps them with the run, a bounded series per replica. What `corral eff`, `seff`, `corral
// show`, `corral usage` and the dashboard's plots read.
//
// Value types and pure functions only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/time.h"

namespace corral {

// One point: a raw sample (samples == 1, each *_max equal to its mean) or, once a series grew
// past its bound, several consecutive ones merged (means weighted by samples, peaks the largest).
struct UsagePoint {
  int64_t seq = 0;       // the agent's number of the last raw sample it covers (from 1)
  TimeMs at = 0;         // the end of the last sample period it covers (the node's clock)
  int32_t samples = 1;   // raw samples merged into it
  int32_t gpu_util = 0;  // percent, the mean over the replica's GPUs (0 without GPUs)
  int32_t gpu_util_max = 0;
  int64_t gpu_mem = 0;  // bytes used on the replica's GPUs together
  int64_t gpu_mem_max = 0;
  int32_t cpu_milli = 0;  // CPU the cgroup used over the period, in milli-CPUs
  int32_t cpu_milli_max = 0;
  int64_t mem = 0;  // the cgroup's memory in use at the sample
  int64_t mem_max = 0;
  bool operator==(const UsagePoint&) const = default;
};

// A raw sample as a point.
UsagePoint RawUsagePoint(int64_t seq, TimeMs at, int32_t gpu_util, int64_t gpu_mem,
                         int32_t cpu_milli, int64_t mem);

// One replica's series as the head keeps it. `last_seq` is the highest sample number taken, so
// a report that repeats points (an agent restarted before it learnt its last sync arrived, two
// syncs crossing) adds nothing twice.
struct ReplicaUsage {
  int32_t replica = 0;
  int64_t last_seq = 0;
  std::vector<UsagePoint> points;  // ascending seq
  bool operator==(const ReplicaUsage&) const = default;
};

// A replica's series holds at most this many points: past it, neighbours are merged in pairs,
// so a long run keeps its whole length at a coarser step (one point a minute: 256 minutes at
// full resolution, then two minutes a point, ...).
inline constexpr size_t kMaxUsagePoints = 256;

// Points of `in` numbered after series->last_seq, appended in order; the rest are ignored.
// Returns how many were taken. Merges (DownsampleUsage) while longer than max_points.
size_t AppendUsage(ReplicaUsage* series, const std::vector<UsagePoint>& in,
                   size_t max_points = kMaxUsagePoints);
// The points after `after` (a sample number): what a report carries that the head may lack.
std::vector<UsagePoint> UsageAfter(const std::vector<UsagePoint>& points, int64_t after);
// Merges neighbours in pairs (the last stays alone when their number is odd).
std::vector<UsagePoint> DownsampleUsage(const std::vector<UsagePoint>& points);
UsagePoint MergeUsage(const UsagePoint& a, const UsagePoint& b);

// A job's use over its runs' series: means weighted by the samples, peaks the largest of any
// replica's.
struct UsageSummary {
  int64_t samples = 0;  // raw samples behind it; 0: nothing measured
  double gpu_util = 0;  // percent
  int32_t gpu_util_max = 0;
  double gpu_mem = 0;  // bytes, per replica
  int64_t gpu_mem_max = 0;
  double cpu_milli = 0;  // per replica
  int32_t cpu_milli_max = 0;
  double mem = 0;  // bytes, per replica
  int64_t mem_max = 0;
};
UsageSummary SummarizeUsage(const std::vector<ReplicaUsage>& series);
// The same for several jobs' summaries (a user's, a queue's), weighted by their samples.
UsageSummary CombineUsage(const std::vector<UsageSummary>& parts);

// What a replica was given, to judge its use against.
struct UsageRequest {
  double gpus = 0;         // per replica (fractions for shares)
  int64_t gpu_memory = 0;  // bytes of one GPU (0: unknown)
  int32_t cpu_milli = 0;   // per replica (0: none asked)
  int64_t memory = 0;      // bytes per replica (0: none asked)
};

// The verdict's findings, by kind: what to tell the job's owner.
enum class EfficiencyFinding : uint8_t {
  kUnmeasured,         // no sample yet
  kIdleGpus,           // GPUs held and almost never busy (mean under kIdleGpuPercent)
  kLowGpu,             // GPUs busy less than half the time
  kGpuMemoryHeadroom,  // the GPUs' memory peak well under what they have
  kMemoryHeadroom,     // the cgroup's memory peak well under what was asked
  kLowCpu,             // CPUs asked and mostly unused
  kGood,               // none of the above
};
const char* EfficiencyFindingName(EfficiencyFinding f);
inline constexpr int32_t kIdleGpuPercent = 5;

struct EfficiencyNote {
  EfficiencyFinding finding = EfficiencyFinding::kGood;
  std::string text;  // in words, with the figures
};
std::vector<EfficiencyNote> JudgeUsage(const UsageSummary& use, const UsageRequest& asked);

}  // namespace corral
