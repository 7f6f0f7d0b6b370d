// Usage accounting (DESIGN §11, like Slurm's `sreport`): GPU-hours, jobs, average wait and
// preemptions per user or per queue over a period, computed from the jobs' runs. A pure
// function of the jobs and the period: the head feeds it its jobs, tests feed it hand-built
// ones. Any thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/codec.h"
#include "core/job.h"
#include "core/status.h"

namespace corral {

enum class UsageBy { kUser, kQueue };
const char* UsageByName(UsageBy by);
// "user" or "queue"; an InvalidArgument naming `field` otherwise.
Result<UsageBy> ParseUsageBy(const std::string& field, const std::string& text);

// The figures of one user or queue over the period [from, to].
struct UsageRow {
  std::string key;  // the user or the queue
  // GPU-seconds: each run's GPUs (milli-GPUs / 1000) times the part of the run that lies in
  // the period. A run still going counts up to `to`.
  double gpu_seconds = 0;
  int64_t jobs = 0;         // jobs submitted in the period, or that ran in it
  int64_t started = 0;      // jobs whose first run started in the period
  double wait_seconds = 0;  // summed over `started`: first start minus submit
  int64_t preemptions = 0;  // runs preempted (ended) in the period
  // Efficiency over the usage samples taken in the period (usage_series.h), kept as sums so
  // that rows add up: GPU utilisation weighted by samples x GPUs; CPU and memory used against
  // what was asked, over the samples of jobs that asked for them.
  double gpu_util_sum = 0;  // utilisation (percent) x samples x GPUs
  double gpu_weight = 0;    // samples x GPUs
  double cpu_used = 0;      // milli-CPUs x samples
  double cpu_asked = 0;
  double mem_used = 0;  // bytes x samples (where the node measured memory)
  double mem_asked = 0;
  int64_t idle_gpu_jobs = 0;  // jobs whose verdict is idle GPUs (EfficiencyFinding::kIdleGpus)

  double AverageWaitSeconds() const { return started ? wait_seconds / started : 0; }
  // Percent; -1: nothing measured.
  double GpuUtil() const { return gpu_weight > 0 ? gpu_util_sum / gpu_weight : -1; }
  double CpuEfficiency() const { return cpu_asked > 0 ? 100 * cpu_used / cpu_asked : -1; }
  double MemoryEfficiency() const { return mem_asked > 0 ? 100 * mem_used / mem_asked : -1; }
  void AddEfficiency(const UsageRow& other);
  bool operator==(const UsageRow&) const = default;
};

struct UsageReport {
  UsageBy by = UsageBy::kUser;
  TimeMs from = 0;
  TimeMs to = 0;
  std::vector<UsageRow> rows;  // most GPU-seconds first, then by key
  UsageRow total;              // key "total"
};

// Adds up jobs one at a time, so a caller holding jobs in a map need not copy them.
class UsageAccumulator {
 public:
  // REQUIRES: from <= to.
  UsageAccumulator(UsageBy by, TimeMs from, TimeMs to) : by_(by), from_(from), to_(to) {}
  void Add(const Job& job);
  UsageReport Finish() const;

 private:
  UsageBy by_;
  TimeMs from_, to_;
  std::map<std::string, UsageRow> rows_;
};

UsageReport ComputeUsage(const std::vector<Job>& jobs, UsageBy by, TimeMs from, TimeMs to);

// GPU-seconds of one run inside [from, to]; a run not over counts up to `to`.
double RunGpuSecondsIn(const Run& run, TimeMs from, TimeMs to);

Json ToJson(const UsageRow& row);
Json ToJson(const UsageReport& report);
// The API's answer read back (the CLI): a row carries its average wait, from which the sum
// over its started jobs is restored.
Result<UsageReport> UsageReportFromJson(const Json& j);

}  // namespace corral
