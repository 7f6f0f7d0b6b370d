// An independent check of a runs file (job_id,start,end,gpus,nodes) against its trace: it
// re-derives, from the runs alone, what any correct simulation must satisfy. Used by the
// tests and by `corral simulate --check`.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "sim/trace.h"

namespace corral::sim {

struct CheckOptions {
  int32_t nodes = 0;
  int32_t gpus_per_node = 0;
  DurationMs restart_overhead_ms = 0;
  DurationMs preempt_grace_ms = 0;
  DurationMs checkpoint_interval_ms = 0;
  std::set<std::string> rejected;  // job ids allowed to be absent (could never fit)
  // Check that each job's runs add up to its service. Off where runs may end short of it
  // (node failures, time limits): the other checks still hold.
  bool exact_service = true;
  bool round_shares_up = false;  // SimConfig::round_shares_up: a share holds its whole GPU
};

// GPU counts are milli-GPU amounts ("2", "0.250"): a share counts as its part of one GPU.
// Verifies: every job (but the rejected) has runs, none starts before its submit, runs of a
// job do not overlap, each run holds exactly the job's GPUs, no node ever holds more than
// gpus_per_node GPUs and the cluster never more than nodes * gpus_per_node, no more than
// `nodes` distinct nodes appear, and each job's runs add up to exactly its duration of
// service (plus restart overhead for every run after the first and the grace of every
// preempted run, minus work lost to the last checkpoint). Returns the first violation found.
Status CheckRuns(const std::vector<TraceJob>& jobs, const std::string& runs_csv,
                 const CheckOptions& options);

}  // namespace corral::sim
