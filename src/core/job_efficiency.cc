#include "core/job_efficiency.h"

#include <algorithm>

namespace corral {

JobEfficiency EfficiencyOf(const Job& job, TimeMs now, int64_t gpu_memory_bytes) {
  JobEfficiency e;
  const Resources& r = job.spec.per_replica;
  e.asked.gpus = static_cast<double>(r.gpu_milli) / kGpuMilli;
  e.asked.gpu_memory = gpu_memory_bytes;
  e.asked.cpu_milli = r.cpu_milli;
  e.asked.memory = r.memory_mb * 1024 * 1024;
  e.replicas = job.spec.replicas;
  std::vector<ReplicaUsage> all;
  int64_t sampled_cpu_ms = 0;
  for (const Run& run : job.runs) {
    if (run.started_at > 0) {
      const TimeMs end = run.ended_at > 0 ? run.ended_at : now;
      e.wall_ms += std::max<DurationMs>(0, end - run.started_at);
    }
    e.cpu_ms += run.cpu_ms;
    e.peak_memory_bytes = std::max(e.peak_memory_bytes, run.peak_memory_bytes);
    all.insert(all.end(), run.usage.begin(), run.usage.end());
    // A live run's CPU time is not known yet: its samples' CPU over their periods.
    if (run.ended_at == 0 && run.started_at > 0) {
      const UsageSummary live = SummarizeUsage(run.usage);
      sampled_cpu_ms +=
          static_cast<int64_t>(live.cpu_milli * static_cast<double>(now - run.started_at) / 1000.0 *
                               static_cast<double>(run.usage.size()));
    }
  }
  e.cpu_ms += sampled_cpu_ms;
  e.use = SummarizeUsage(all);
  e.peak_memory_bytes = std::max(e.peak_memory_bytes, e.use.mem_max);
  e.verdict = JudgeUsage(e.use, e.asked);
  return e;
}

}  // namespace corral
