// A job's efficiency (docs/efficiency.md): its runs' usage series (usage_series.h) summed up
// against what it asked for, with the verdict. What `corral eff`, `seff`, `corral show` and
// `corral usage` report.
#pragma once

#include <cstdint>
#include <vector>

#include "core/job.h"
#include "core/usage_series.h"

namespace corral {

struct JobEfficiency {
  UsageSummary use;  // over every run's series
  UsageRequest asked;
  int32_t replicas = 0;
  DurationMs wall_ms = 0;  // the runs' lengths (the live one's up to `now`)
  int64_t cpu_ms = 0;      // CPU time: the runs' cgroups' totals, or estimated from the series
  int64_t peak_memory_bytes = 0;  // the largest replica's peak (cgroup's, or the series')
  std::vector<EfficiencyNote> verdict;
};

// `gpu_memory_bytes`: the memory of one of the job's GPUs (0: unknown, no GPU memory verdict).
JobEfficiency EfficiencyOf(const Job& job, TimeMs now, int64_t gpu_memory_bytes = 0);

}  // namespace corral
