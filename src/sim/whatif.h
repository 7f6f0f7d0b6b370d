// `corral whatif`: a head's recorded history (head::History, GET /v1/history) as a trace for
// the simulator, replayed as recorded and with a change (queue quotas, the policy, the
// cluster's size), and the per-queue and per-user report that sets the three side by side.
// Pure functions; no I/O.
//
// How a recorded job becomes a trace row (ReplayFromHistory):
//  - submitted at its recorded time, with its recorded spec (resources, gang, placement
//    constraints, priority, preemptibility, time limit, queue, owner); dependencies, arrays'
//    limits, holds and session kinds are left out (the replay schedules resources, it does not
//    re-run workflows);
//  - its run time is the GPU time it held: each run from placement to end (the head's record),
//    summed over its runs (a preempted job that checkpoints resumes where it stopped, as the
//    simulator's jobs do). A run still going counts what it has run so far, or (running:
//    limit) its time limit where that is longer; a job that never ran its time limit, else the
//    median run time of its owner's ended jobs, else of all ended jobs;
//  - jobs cancelled before they ran are left out: they never held a GPU.
// The cluster is the head's nodes now, all in service, and its queues as configured now.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "head/history.h"
#include "sim/simulator.h"
#include "sim/trace.h"

namespace corral::sim {

enum class RunningAs { kSoFar, kLimit };

// What a trace row's job did in the recording, in trace time (ms after the first submission).
struct RecordedOutcome {
  JobId id = 0;
  TimeMs first_start = -1;  // first placement; -1: never ran
  TimeMs end = -1;          // -1: not ended by the history's end
  int64_t gpu_ms = 0;       // GPU time its runs held
};

struct Replay {
  std::vector<TraceJob> jobs;             // sorted by (submit, recorded id)
  std::vector<RecordedOutcome> recorded;  // parallel to jobs
  SimConfig config;                       // the head's cluster, queues and scheduler settings
  TimeMs origin = 0;                      // Unix ms of trace time 0
  int64_t left_out = 0;                   // cancelled before they ran
};

Result<Replay> ReplayFromHistory(const head::History& history, RunningAs running);

// A what-if: changes to the replay's configuration.
struct WhatIfChange {
  std::map<std::string, int32_t> quotas;  // queue -> guaranteed GPUs
  std::optional<sched::OrderPolicy> policy;
  std::optional<int32_t> nodes;  // this many nodes shaped like the most common one
  bool Empty() const { return quotas.empty() && !policy && !nodes; }
};

// "Q=N" (--set-quota) into *change; an error names the flag and what is wrong.
Status ParseSetQuota(const std::string& text, WhatIfChange* change);
// The replay's configuration with `change` applied. A quota of a queue the history has
// neither configured nor used, or a cluster of no GPUs, is an error naming the flag.
Result<SimConfig> ChangedConfig(const Replay& replay, const WhatIfChange& change);

// One group's (queue's or user's) numbers in one scenario, over the jobs that ended in the
// recording (the jobs every scenario has complete numbers for) and, for the share, over every
// job's GPU time.
struct GroupNumbers {
  int64_t jobs = 0;       // ended in the recording, and in this scenario
  double avg_wait_s = 0;  // submit to first placement
  double avg_jct_s = 0;   // submit to end
  double gpu_share = 0;   // of all GPU time the scenario's runs held, 0..1
};

struct GroupRow {
  std::string name;
  GroupNumbers recorded, replayed, changed;
};

struct WhatIfReport {
  double spearman = 0;      // recorded vs replayed first-start order
  int64_t ranked_jobs = 0;  // jobs that started in both
  int64_t jobs = 0;         // trace rows
  int64_t measured_jobs = 0;
  int64_t left_out = 0;
  bool has_change = false;
  std::vector<GroupRow> queues, users;  // by name
};

// `changed`: the replay with the change (nullptr: none asked for).
WhatIfReport BuildReport(const Replay& replay, const SimResult& replayed, const SimResult* changed);

// Spearman's rank correlation of two equally long samples (ties get their average rank); 0
// when either has no spread.
double Spearman(const std::vector<double>& a, const std::vector<double>& b);

// {"spearman", "ranked_jobs", "jobs", "measured_jobs", "left_out", "queues": [{"name",
// "recorded", "replayed", "changed"?: {"jobs", "avg_wait_seconds", "avg_jct_seconds",
// "gpu_share"}}], "users": [...]}
Json ToJson(const WhatIfReport& r);

}  // namespace corral::sim
