// What a simulation produced, as numbers (Summary), as a runs file (one row per contiguous
// run) and as a hand-written SVG plot of JCT distributions. Pure functions of a trace and a
// SimResult: the same inputs give byte-identical text.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/estimate_accuracy.h"
#include "sim/simulator.h"
#include "sim/trace.h"

namespace corral::sim {

// Definitions (docs/simulation.md):
//  jct          = end - submit of a finished job, seconds
//  avg_duration = mean trace duration of the finished jobs: the avg_jct with no queueing
//  queue delay  = first start - submit, seconds (the wait; p99_queue_delay: its p99)
//  total wait   = jct - duration: all the time a job was not served (p99_total_wait)
//  makespan     = last end - first submit, seconds
//  utilization  = GPU-seconds held by runs / (GPUs * makespan)
//  slowdown     = max(1, jct / max(duration, 10 s)) (bounded slowdown)
//  p99_slowdown = 99th percentile (nearest rank) of the slowdown
//  preemptions_per_hour = preemptions / makespan in hours
//  lost_gpu_hours = GPU time held by runs beyond the progress they kept (work lost to
//                   preemptions and node failures since the last checkpoint, restart
//                   overhead, grace)
//  data (with datasets): stage-ins of a replica's dataset, the hit ratio (found in the node's
//                  cache, or being fetched there, over all stage-ins), fetches and TiB read
//                  from the source, evictions, replicas that waited for a fetch and their mean
//                  wait, and staging_gpu_hours: GPU time runs held while waiting for data
//  jain_fairness = Jain's index over queues of each queue's mean slowdown:
//                  (sum x)^2 / (n * sum x^2); 1 when every queue is slowed alike.
struct Summary {
  std::string policy;
  int64_t jobs = 0;      // finished
  int64_t rejected = 0;  // could never fit the cluster
  int64_t total_gpus = 0;
  double avg_jct = 0, p50_jct = 0, p95_jct = 0, p99_jct = 0;
  double avg_queue_delay = 0, p99_queue_delay = 0;
  // Time a job spent not running: JCT - its duration (waits after preemptions included).
  double p99_total_wait = 0;
  double avg_duration = 0;  // lower bound of avg_jct: every job starts at its submit
  double makespan = 0;
  double utilization = 0;
  // Time-averaged share of the cluster's GPU capacity that is free on GPUs holding a share of
  // a job (left over beside shares: only another share can use it), from the first run's
  // start to the last run's end.
  double fragmented = 0;
  int64_t preemptions = 0;
  double preemptions_per_hour = 0;
  double lost_gpu_hours = 0;
  double p99_slowdown = 0;
  int64_t timeouts = 0;   // jobs killed at their time limit
  int64_t lost_runs = 0;  // runs ended by node failures
  int64_t node_failures = 0;
  int64_t predicted_by_name = 0;            // jobs predicted from their (user, name) history, ever
  int64_t predicted_by_name_at_submit = 0;  // of which when first queued
  double jain_fairness = 0;
  std::map<std::string, double> queue_slowdown;  // mean slowdown per queue
  int64_t schedule_calls = 0;
  int64_t trace_rows = 0;       // rows read from the trace file
  int64_t bad_rows = 0;         // of which malformed and skipped
  double sim_wall_time_s = -1;  // < 0: not measured (--no-timing)
  double schedule_wall_time_s = -1;
  std::vector<double> jcts;    // sorted, seconds; for the plot
  EstimateAccuracy estimates;  // with SimConfig::estimate_every; sampled 0 otherwise
  DataStats data;              // with SimConfig::data; stage_ins 0 otherwise
  double staging_gpu_hours = 0;
};

// `report_from`: only jobs submitted at or after it are counted (JCT, waits, slowdown,
// makespan and utilisation from the first of them and their runs); the earlier ones still ran
// and taught the predictors, so a policy can be judged on the second half of a trace after
// learning on the first.
Summary Summarize(const std::string& policy, const std::vector<TraceJob>& jobs,
                  const SimResult& result, TimeMs report_from = 0);

// JSON object; keys in a fixed order.
std::string SummaryJson(const Summary& s);
// A fixed-width table, one row per summary.
std::string SummaryTable(const std::vector<Summary>& rows);
// Summary::fragmented of a result's runs.
double FragmentedShare(const SimResult& result);
// Milli-GPUs as GPUs: "2" for 2000, "0.250" for 250.
std::string FormatMilliGpus(int64_t milli);

// job_id,start,end,gpus,nodes  (seconds with millisecond precision; nodes "name:count;...")
std::string RunsCsv(const std::vector<TraceJob>& jobs, const SimResult& result);
// CDF of JCT per policy on a log x axis.
std::string JctCdfSvg(const std::vector<Summary>& rows, const std::string& title);

// Seconds (from ms) with exactly three decimals, e.g. "12.345".
std::string FormatSeconds(int64_t ms);

}  // namespace corral::sim
