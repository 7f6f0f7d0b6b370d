#include "sim/simulate_command.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>

#include "core/spec.h"
#include "sched/arrival_history.h"
#include "sim/admin_flags.h"
#include "sim/checker.h"
#include "sim/data_flags.h"
#include "sim/predict_flags.h"
#include "sim/report.h"
#include "sim/simulator.h"
#include "sim/trace.h"

namespace corral::sim {

namespace {

struct Flags {
  std::string trace;
  std::string format = "auto";
  std::string max_bad_rows = "1%";
  double gavel_steps_per_second = 1.0;
  int32_t nodes = 0;
  int32_t gpus_per_node = 8;
  int32_t racks = 1;
  int64_t gpus = 0;
  std::string gpu_memory = "32G";
  bool round_shares_up = false;
  double poisson_load = 0;
  std::string policy = "corral";
  std::string compare;
  std::string output = "table";
  std::string out_runs;
  std::string plot;
  std::string title;
  int64_t limit = 0;
  std::string start, end;
  std::string report_from;  // a duration or a percentage of the submit span; empty: all jobs
  int64_t sample = 0;
  std::string min_duration;
  std::string max_gpu_time;
  std::string time_of_day;
  std::string quotas;
  uint64_t seed = 1;
  double load_scale = 1.0;
  std::string restart_overhead = "0s";
  std::string checkpoint_interval = "0s";
  std::string preempt_grace = "0s";
  std::string tick = "60s";
  std::string min_preempt_runtime;
  std::string fair_share_half_life;
  std::string las_thresholds;
  double las_hysteresis = -1;
  bool no_las_across_queues = false;
  bool no_borrowing_by_level = false;
  std::string max_wait;
  bool aged_no_displace = false;
  std::string cluster_budget, queue_budget;
  PredictFlags predict;
  AdminFlags admin;
  DataFlags data;
  bool synth_time_limits = false;
  std::string infer_job_names;  // a window; empty: off
  std::string node_mtbf = "0s";
  std::string node_repair = "1h";
  bool elastic = false;
  double elastic_min = ElasticModel{}.min_fraction;
  double elastic_alpha = ElasticModel{}.alpha;
  std::string elastic_resize_overhead = "30s";
  bool no_timing = false;
  bool check = false;
  bool profile = false;
  int32_t estimate_every = 0;
  std::string estimator = "forward";
  int64_t estimate_passes = sched::EstimateOptions{}.max_passes;
  std::string estimate_arrivals = "2h";
};

Status Duration(const std::string& flag, const std::string& text, DurationMs* out);

// --elastic and its model's settings (elastic_model.h); bad values change nothing.
Status ApplySimElasticFlags(const Flags& f, ElasticModel* out) {
  ElasticModel m;
  m.on = f.elastic;
  if (!(f.elastic_min > 0 && f.elastic_min <= 1)) {
    return InvalidArgument("field '--elastic-min': got " + std::to_string(f.elastic_min) +
                           ", want a share of the job's replicas in (0, 1]");
  }
  if (!(f.elastic_alpha > 0 && f.elastic_alpha <= 1)) {
    return InvalidArgument("field '--elastic-alpha': got " + std::to_string(f.elastic_alpha) +
                           ", want an exponent in (0, 1] (1: linear scaling)");
  }
  if (f.elastic && f.check) {
    return InvalidArgument(
        "field '--check': it checks rigid runs (each job on its trace GPUs at the trace's speed); "
        "leave it out with --elastic");
  }
  m.min_fraction = f.elastic_min;
  m.alpha = f.elastic_alpha;
  CORRAL_RETURN_IF_ERROR(
      Duration("--elastic-resize-overhead", f.elastic_resize_overhead, &m.resize_overhead_ms));
  *out = m;
  return Status::Ok();
}

// A duration as a job spec takes one, or whole milliseconds ("500ms": the head's own tick).
Status Duration(const std::string& flag, const std::string& text, DurationMs* out) {
  if (text.size() > 2 && text.compare(text.size() - 2, 2, "ms") == 0) {
    int64_t ms = -1;
    const char* end = text.data() + text.size() - 2;
    if (std::from_chars(text.data(), end, ms).ptr != end || ms < 0) {
      return InvalidArgument("field '" + flag + "': got \"" + text +
                             "\", want whole milliseconds >= 0 such as 500ms");
    }
    *out = ms;
    return Status::Ok();
  }
  Result<DurationMs> d = ParseDuration(flag, text);
  if (!d.ok()) return d.status();
  *out = *d;
  return Status::Ok();
}

Status ParseFraction(const std::string& text, double* out) {
  std::string t = text;
  bool percent = !t.empty() && t.back() == '%';
  if (percent) t.pop_back();
  char* end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  if (t.empty() || *end != '\0' || !(v >= 0) || v > 100) {
    return InvalidArgument("--max-bad-rows '" + text +
                           "' is not a percentage of rows between 0 and 100 (e.g. 1%)");
  }
  *out = v / 100.0;
  return Status::Ok();
}

// "RUNS,GPU_SECONDS" (runs preempted per minute, GPU-seconds lost per hour; 0: the scheduler's
// default, -1: unlimited) -> a preemption budget. Empty: the defaults.
Status ParseBudget(const std::string& flag, const std::string& text, sched::PreemptionBudget* out) {
  if (text.empty()) return Status::Ok();
  size_t comma = text.find(',');
  char* end1 = nullptr;
  char* end2 = nullptr;
  std::string a = text.substr(0, comma);
  std::string b = comma == std::string::npos ? "" : text.substr(comma + 1);
  long long runs = std::strtoll(a.c_str(), &end1, 10);
  long long lost = std::strtoll(b.c_str(), &end2, 10);
  if (comma == std::string::npos || a.empty() || b.empty() || *end1 != '\0' || *end2 != '\0' ||
      runs < -1 || lost < -1) {
    return InvalidArgument(flag + " '" + text +
                           "' is not RUNS,GPU_SECONDS (runs preempted per minute, GPU-seconds "
                           "of work lost per hour; 0: default, -1: unlimited), e.g. 10,36000");
  }
  out->runs_per_minute = runs;
  out->lost_gpu_seconds_per_hour = lost;
  return Status::Ok();
}

// "2h-10h" -> [2h, 10h) of the day.
Status ParseTimeOfDay(const std::string& text, DurationMs* from, DurationMs* to) {
  size_t dash = text.find('-');
  if (dash == std::string::npos) {
    return InvalidArgument("--time-of-day '" + text + "' is not FROM-TO, e.g. 2h-10h");
  }
  CORRAL_RETURN_IF_ERROR(Duration("--time-of-day", text.substr(0, dash), from));
  CORRAL_RETURN_IF_ERROR(Duration("--time-of-day", text.substr(dash + 1), to));
  if (!(*from < *to && *to <= 24 * kHour)) {
    return InvalidArgument("--time-of-day '" + text + "' needs FROM < TO <= 24h");
  }
  return Status::Ok();
}

// Filters (duration, GPU-time, time of day), window, sample, limit and load scale, in that
// order; then the first job submits at 0.
// --synth-time-limits: the limit a user who knows roughly how long the job runs might ask for:
// its duration rounded up to a power of two hours, at least 1 h. A what-if for traces without
// limits (never kills: the limit is at least the duration).
DurationMs SynthTimeLimit(DurationMs duration) {
  DurationMs limit = kHour;
  while (limit < duration) limit *= 2;
  return limit;
}

Status Select(const Flags& f, std::vector<TraceJob>* jobs) {
  if (!f.min_duration.empty() || !f.max_gpu_time.empty() || !f.time_of_day.empty()) {
    DurationMs min_d = 0, max_gt = 0, from = 0, to = 0;
    if (!f.min_duration.empty()) {
      CORRAL_RETURN_IF_ERROR(Duration("--min-duration", f.min_duration, &min_d));
    }
    if (!f.max_gpu_time.empty()) {
      CORRAL_RETURN_IF_ERROR(Duration("--max-gpu-time", f.max_gpu_time, &max_gt));
    }
    if (!f.time_of_day.empty()) CORRAL_RETURN_IF_ERROR(ParseTimeOfDay(f.time_of_day, &from, &to));
    std::vector<TraceJob> kept;
    for (TraceJob& j : *jobs) {
      if (j.duration_ms < min_d) continue;
      if (!f.max_gpu_time.empty() && j.duration_ms * j.num_gpus >= max_gt) continue;
      if (!f.time_of_day.empty()) {
        // Pollux's recipe: jobs from any day whose submit time of day falls in [from, to),
        // arriving at that offset into the window.
        DurationMs tod = ((j.epoch_ms % (24 * kHour)) + 24 * kHour) % (24 * kHour);
        if (tod < from || tod >= to) continue;
        j.submit_ms = tod - from;
      }
      kept.push_back(j);
    }
    std::stable_sort(kept.begin(), kept.end(), [](const TraceJob& a, const TraceJob& b) {
      return a.submit_ms < b.submit_ms;
    });
    *jobs = std::move(kept);
    if (jobs->empty()) {
      return InvalidArgument("no jobs pass --min-duration/--max-gpu-time/--time-of-day");
    }
  }
  DurationMs start = 0, end = 0;
  if (!f.start.empty()) CORRAL_RETURN_IF_ERROR(Duration("--start", f.start, &start));
  if (!f.end.empty()) CORRAL_RETURN_IF_ERROR(Duration("--end", f.end, &end));
  if (!f.start.empty() || !f.end.empty()) {
    std::vector<TraceJob> kept;
    for (TraceJob& j : *jobs) {
      if (j.submit_ms >= start && (f.end.empty() || j.submit_ms < end)) kept.push_back(j);
    }
    *jobs = std::move(kept);
  }
  if (f.sample > 0 && static_cast<size_t>(f.sample) < jobs->size()) {
    // Partial Fisher-Yates on indices with the raw mt19937_64 stream (whose output the C++
    // standard fixes), so a seed samples the same jobs everywhere.
    std::mt19937_64 rng(f.seed);
    std::vector<size_t> idx(jobs->size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    for (size_t i = 0; i < static_cast<size_t>(f.sample); ++i) {
      size_t j = i + static_cast<size_t>(rng() % (idx.size() - i));
      std::swap(idx[i], idx[j]);
    }
    idx.resize(static_cast<size_t>(f.sample));
    std::sort(idx.begin(), idx.end());  // jobs stay in submit order
    std::vector<TraceJob> kept;
    for (size_t i : idx) kept.push_back((*jobs)[i]);
    *jobs = std::move(kept);
  }
  if (f.limit > 0 && static_cast<size_t>(f.limit) < jobs->size()) jobs->resize(f.limit);
  if (jobs->empty()) return InvalidArgument("no jobs left after --start/--end/--sample/--limit");
  if (!(f.load_scale > 0)) return InvalidArgument("--load-scale must be > 0");
  TimeMs t0 = jobs->front().submit_ms;
  for (TraceJob& j : *jobs) {
    j.submit_ms =
        static_cast<TimeMs>(std::llround(static_cast<double>(j.submit_ms - t0) / f.load_scale));
  }
  if (f.synth_time_limits) {
    for (TraceJob& j : *jobs) {
      if (j.time_limit_ms == 0) j.time_limit_ms = SynthTimeLimit(j.duration_ms);
    }
  }
  return Status::Ok();
}

// A CSV of `queue,size` rows (a header without a number in column 2 is skipped), e.g.
// Helios' philly_vc_nodes.csv (vc,node num). Sizes are scaled to the cluster's GPUs.
Status ReadQuotas(const std::string& path, const std::vector<TraceJob>& jobs, int64_t gpus,
                  std::map<std::string, int32_t>* out) {
  std::ifstream in(path);
  if (!in) return InvalidArgument("--quotas " + path + ": cannot open the file");
  std::map<std::string, double> size;
  double sum = 0;
  std::string line;
  int64_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    size_t comma = line.find(',');
    char* end = nullptr;
    double v = comma == std::string::npos ? -1 : std::strtod(line.c_str() + comma + 1, &end);
    if (comma == std::string::npos || end == line.c_str() + comma + 1 || v < 0) {
      if (n == 1) continue;  // header
      return InvalidArgument("--quotas " + path + " line " + std::to_string(n) +
                             ": expected queue,size");
    }
    size[line.substr(0, comma)] += v;
    sum += v;
  }
  if (sum <= 0) return InvalidArgument("--quotas " + path + ": no positive sizes");
  int64_t given = 0;
  std::vector<std::pair<double, std::string>> rest;
  for (const auto& [q, v] : size) {
    double exact = v / sum * static_cast<double>(gpus);
    auto whole = static_cast<int32_t>(exact);
    (*out)[q] = whole;
    given += whole;
    rest.emplace_back(-(exact - whole), q);
  }
  std::sort(rest.begin(), rest.end());
  for (size_t i = 0; given < gpus && i < rest.size(); ++i, ++given) ++(*out)[rest[i].second];
  for (const TraceJob& j : jobs) out->emplace(j.queue, 0);  // queues without a size: no quota
  return Status::Ok();
}

Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream o(path, std::ios::binary | std::ios::trunc);
  if (!o) return InvalidArgument("cannot write " + path);
  o << text;
  o.close();
  if (!o) return Internal("writing " + path + " failed");
  return Status::Ok();
}

// "runs.csv" + "fifo" -> "runs.fifo.csv"
std::string WithPolicy(const std::string& path, const std::string& policy) {
  size_t slash = path.find_last_of('/');
  size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) {
    return path + "." + policy;
  }
  return path.substr(0, dot) + "." + policy + path.substr(dot);
}

// The trace, its malformed and left-out rows told on err.
Result<Trace> LoadTrace(const Flags& f, std::ostream& err) {
  TraceOptions topt;
  if (!ParseTraceFormat(f.format, &topt.format)) {
    return InvalidArgument(
        "--format '" + f.format +
        "' is not one of auto, csv, philly, gavel, tiresias, helios, alibaba, openb");
  }
  CORRAL_RETURN_IF_ERROR(ParseFraction(f.max_bad_rows, &topt.max_bad_fraction));
  topt.gavel_steps_per_second = f.gavel_steps_per_second;
  Result<Trace> trace = ReadTraceFile(f.trace, topt);
  if (!trace.ok()) return trace.status();
  if (!trace->bad.empty()) {
    err << f.trace << ": skipped " << trace->bad.size() << " malformed row(s) of " << trace->rows
        << " (" << TraceFormatName(trace->format) << "):\n";
    for (size_t i = 0; i < trace->bad.size() && i < 20; ++i) {
      err << "  line " << trace->bad[i].line << ": " << trace->bad[i].why << "\n";
    }
    if (trace->bad.size() > 20) err << "  ... and " << trace->bad.size() - 20 << " more\n";
  }
  if (trace->skipped > 0) {
    err << f.trace << ": left out " << trace->skipped << " of " << trace->rows
        << " rows (CPU-only tasks, and tasks the traced cluster never scheduled)\n";
  }
  return trace;
}

// The jobs kept (--start, --end, --sample, ...) and, with --infer-job-names, named by bursts.
Status SelectJobs(const Flags& f, std::vector<TraceJob>* jobs, std::ostream& err) {
  CORRAL_RETURN_IF_ERROR(Select(f, jobs));
  if (!f.infer_job_names.empty()) {
    DurationMs window = 0;
    CORRAL_RETURN_IF_ERROR(Duration("--infer-job-names", f.infer_job_names, &window));
    if (window < 0) return InvalidArgument("--infer-job-names must be >= 0");
    int64_t bursts = InferJobNames(jobs, window);
    err << "--infer-job-names " << f.infer_job_names << ": " << bursts << " bursts of "
        << jobs->size() << " jobs\n";
  }
  return Status::Ok();
}

// --report-from: an offset, or the submit time of the job that many per cent in.
Result<TimeMs> ReportFrom(const Flags& f, const std::vector<TraceJob>& jobs) {
  TimeMs report_from = 0;
  if (!f.report_from.empty()) {
    if (f.report_from.back() == '%') {
      double frac = 0;
      std::string pct = f.report_from;
      char* end = nullptr;
      pct.pop_back();
      frac = std::strtod(pct.c_str(), &end);
      if (pct.empty() || *end != '\0' || !(frac >= 0) || frac >= 100) {
        return InvalidArgument("--report-from '" + f.report_from +
                               "' is not a duration or a percentage in [0, 100) (e.g. 50%)");
      }
      // The submit time of the job that many per cent into the trace (jobs in submit order).
      auto at = static_cast<size_t>(static_cast<double>(jobs.size()) * frac / 100.0);
      report_from = jobs[std::min(at, jobs.size() - 1)].submit_ms;
    } else {
      CORRAL_RETURN_IF_ERROR(Duration("--report-from", f.report_from, &report_from));
    }
  }
  return report_from;
}

// The cluster's size and GPUs; with --poisson-load, the jobs' arrivals replaced.
Status ConfigureCluster(const Flags& f, SimConfig* cfg_out, std::vector<TraceJob>* jobs) {
  SimConfig& cfg = *cfg_out;
  if (f.gpus_per_node <= 0) return InvalidArgument("--gpus-per-node must be > 0");
  cfg.cluster.gpus_per_node = f.gpus_per_node;
  cfg.cluster.racks = f.racks;
  Result<int64_t> gpu_mb = ParseMemoryMb("--gpu-memory", f.gpu_memory);
  if (!gpu_mb.ok()) return gpu_mb.status();
  if (*gpu_mb <= 0) return InvalidArgument("--gpu-memory must be > 0");
  cfg.cluster.gpu_memory_mb = *gpu_mb;
  cfg.round_shares_up = f.round_shares_up;
  if (f.gpus > 0) {
    if (f.nodes > 0) return InvalidArgument("give either --gpus or --nodes, not both");
    if (f.gpus % f.gpus_per_node != 0) {
      return InvalidArgument("--gpus " + std::to_string(f.gpus) + " is not a multiple of " +
                             "--gpus-per-node " + std::to_string(f.gpus_per_node));
    }
    cfg.cluster.nodes = static_cast<int32_t>(f.gpus / f.gpus_per_node);
  } else {
    cfg.cluster.nodes = f.nodes;
  }
  if (cfg.cluster.nodes <= 0)
    return InvalidArgument("give the cluster size: --nodes N or --gpus N");
  if (!(f.poisson_load >= 0) || !std::isfinite(f.poisson_load)) {
    return InvalidArgument("--poisson-load must be a number > 0 (a share of the GPU capacity)");
  }
  if (f.poisson_load > 0) {
    // The same arrivals for every policy and for --round-shares-up: the load counts shares.
    PoissonArrivals(jobs, f.poisson_load,
                    int64_t{cfg.cluster.nodes} * cfg.cluster.gpus_per_node * kGpuMilli, f.seed);
  }
  return Status::Ok();
}

// Restarts, checkpoints, the tick, the policies' settings, predictions, failures, elasticity.
Status ConfigurePolicies(const Flags& f, SimConfig* cfg_out) {
  SimConfig& cfg = *cfg_out;
  CORRAL_RETURN_IF_ERROR(
      Duration("--restart-overhead", f.restart_overhead, &cfg.restart_overhead_ms));
  CORRAL_RETURN_IF_ERROR(
      Duration("--checkpoint-interval", f.checkpoint_interval, &cfg.checkpoint_interval_ms));
  CORRAL_RETURN_IF_ERROR(Duration("--preempt-grace", f.preempt_grace, &cfg.preempt_grace_ms));
  CORRAL_RETURN_IF_ERROR(Duration("--tick", f.tick, &cfg.tick_ms));
  if (!f.fair_share_half_life.empty()) {
    CORRAL_RETURN_IF_ERROR(
        Duration("--fair-share-half-life", f.fair_share_half_life, &cfg.fair_share_half_life_ms));
    if (cfg.fair_share_half_life_ms <= 0) {
      return InvalidArgument("--fair-share-half-life must be > 0");
    }
  }
  if (!f.las_thresholds.empty()) {
    // The first may be any GPU-time (0 included): only the order is checked.
    auto t = ParseAscendingDurations("--las-thresholds", f.las_thresholds, -1, "ascending");
    if (!t.ok()) return t.status();
    cfg.las_thresholds_gpu_ms = std::move(*t);
  }
  cfg.corral.las_across_queues = !f.no_las_across_queues;
  cfg.corral.borrowing_queues_by_level = !f.no_borrowing_by_level;
  if (!f.max_wait.empty())
    CORRAL_RETURN_IF_ERROR(Duration("--max-wait", f.max_wait, &cfg.corral.max_wait_ms));
  cfg.corral.aged_may_displace = !f.aged_no_displace;
  if (f.las_hysteresis >= 0) {
    if (f.las_hysteresis < 1) return InvalidArgument("--las-hysteresis must be >= 1");
    cfg.corral.las_preempt_hysteresis = f.las_hysteresis;
  }
  CORRAL_RETURN_IF_ERROR(
      ParseBudget("--cluster-budget", f.cluster_budget, &cfg.corral.cluster_budget));
  CORRAL_RETURN_IF_ERROR(ParseBudget("--queue-budget", f.queue_budget, &cfg.corral.queue_budget));
  if (!f.min_preempt_runtime.empty()) {
    CORRAL_RETURN_IF_ERROR(Duration("--min-preempt-runtime", f.min_preempt_runtime,
                                    &cfg.min_runtime_before_preempt_ms));
  }
  CORRAL_RETURN_IF_ERROR(ApplyPredictFlags(f.predict, &cfg));
  CORRAL_RETURN_IF_ERROR(Duration("--node-mtbf", f.node_mtbf, &cfg.node_mtbf_ms));
  CORRAL_RETURN_IF_ERROR(Duration("--node-repair", f.node_repair, &cfg.node_repair_ms));
  if (cfg.node_mtbf_ms > 0 && cfg.node_repair_ms <= 0) {
    return InvalidArgument("--node-repair must be > 0 when nodes fail (--node-mtbf)");
  }
  cfg.failure_seed = f.seed;
  CORRAL_RETURN_IF_ERROR(ApplySimElasticFlags(f, &cfg.elastic));
  return Status::Ok();
}

// --profile and the start-time estimates' flags.
Status ConfigureEstimates(const Flags& f, SimConfig* cfg_out) {
  SimConfig& cfg = *cfg_out;
  cfg.profile = f.profile && !f.no_timing;
  if (f.estimate_every < 0) {
    return InvalidArgument("--estimate-every " + std::to_string(f.estimate_every) +
                           ": must be 0 (none) or a positive count of jobs");
  }
  cfg.estimate_every = f.estimate_every;
  if (f.estimator == "forward") {
    cfg.start_estimates.method = sched::EstimateMethod::kForward;
  } else if (f.estimator == "sweep") {
    cfg.start_estimates.method = sched::EstimateMethod::kSweep;
  } else {
    return InvalidArgument("--estimator '" + f.estimator + "': must be forward or sweep");
  }
  if (f.estimate_passes < 1) {
    return InvalidArgument("--estimate-passes " + std::to_string(f.estimate_passes) +
                           ": must be a positive count of passes");
  }
  cfg.start_estimates.max_passes = f.estimate_passes;
  CORRAL_RETURN_IF_ERROR(
      Duration("--estimate-arrivals", f.estimate_arrivals, &cfg.start_estimates.arrival_window_ms));
  if (cfg.start_estimates.arrival_window_ms > sched::kArrivalKeepMs) {
    return InvalidArgument("--estimate-arrivals " + f.estimate_arrivals +
                           ": must be at most 24h (the arrivals the scheduler keeps)");
  }
  return Status::Ok();
}

// The policies to run (--policy, or --compare's list), each checked, and the output's form.
Result<std::vector<std::string>> PoliciesToRun(const Flags& f) {
  std::vector<std::string> policies;
  if (!f.compare.empty()) {
    std::stringstream ss(f.compare);
    std::string p;
    while (std::getline(ss, p, ',')) policies.push_back(p);
  } else {
    policies.push_back(f.policy);
  }
  for (const std::string& p : policies) {
    sched::OrderPolicy op;
    if (!sched::ParseOrderPolicy(p, &op)) {
      return InvalidArgument("policy '" + p + "' is not one of fifo, sjf, srtf, las, corral");
    }
  }
  if (f.output != "table" && f.output != "json") {
    return InvalidArgument("-o '" + f.output + "' is not one of table, json");
  }
  return policies;
}

// --check: the runs against the trace, by the independent checker.
Status CheckPolicyRuns(const std::string& p, const std::vector<TraceJob>& jobs,
                       const SimConfig& cfg, const SimResult& r, const std::string& runs) {
  CheckOptions co;
  co.nodes = cfg.cluster.nodes;
  co.gpus_per_node = cfg.cluster.gpus_per_node;
  co.restart_overhead_ms = cfg.restart_overhead_ms;
  co.preempt_grace_ms = cfg.preempt_grace_ms;
  co.checkpoint_interval_ms = cfg.checkpoint_interval_ms;
  co.round_shares_up = cfg.round_shares_up;
  // Runs lost to node failures or killed at a time limit end short of the job's service.
  co.exact_service =
      cfg.node_mtbf_ms <= 0 &&
      std::none_of(jobs.begin(), jobs.end(), [](const TraceJob& j) { return j.time_limit_ms > 0; });
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (r.jobs[i].rejected) co.rejected.insert(jobs[i].id);
  }
  Status st = CheckRuns(jobs, runs, co);
  if (!st.ok()) return Internal("--check failed for policy " + p + ": " + st.message());
  return Status::Ok();
}

// One policy's run: its summary, its runs written (--out-runs) and checked (--check).
// With several policies (--compare) each writes its runs to a file of its own.
Result<Summary> SimulatePolicy(const Flags& f, const std::string& p, bool several,
                               const std::vector<TraceJob>& jobs, SimConfig cfg, const Trace& trace,
                               TimeMs report_from, std::ostream& err) {
  sched::ParseOrderPolicy(p, &cfg.policy);
  auto t0 = std::chrono::steady_clock::now();
  Result<SimResult> r = Simulate(jobs, cfg);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!r.ok()) return r.status();
  Summary s = Summarize(p, jobs, *r, report_from);
  s.trace_rows = trace.rows;
  s.bad_rows = static_cast<int64_t>(trace.bad.size());
  if (!f.no_timing) {
    s.sim_wall_time_s = wall;
    if (cfg.profile) s.schedule_wall_time_s = r->schedule_seconds;
  }
  std::string runs;
  if (!f.out_runs.empty() || f.check) runs = RunsCsv(jobs, *r);
  if (!f.out_runs.empty()) {
    CORRAL_RETURN_IF_ERROR(WriteFile(several ? WithPolicy(f.out_runs, p) : f.out_runs, runs));
  }
  if (f.check) CORRAL_RETURN_IF_ERROR(CheckPolicyRuns(p, jobs, cfg, *r, runs));
  if (s.rejected > 0) {
    size_t shown = 0;
    for (size_t i = 0; i < jobs.size() && shown < 1; ++i) {
      if (!r->jobs[i].rejected) continue;
      err << p << ": " << s.rejected << " job(s) can never fit this cluster and were "
          << "rejected at submit, e.g. job " << jobs[i].id << " (" << jobs[i].num_gpus
          << " GPUs): " << r->jobs[i].why_rejected << "\n";
      ++shown;
    }
  }
  return s;
}

// The summaries as JSON or a table on out, and the JCT plot (--plot).
Status WriteSummaries(const Flags& f, const std::vector<Summary>& summaries,
                      const std::vector<TraceJob>& jobs, const SimConfig& cfg, TraceFormat format,
                      std::ostream& out) {
  if (f.output == "json") {
    if (summaries.size() == 1) {
      out << SummaryJson(summaries[0]);
    } else {
      out << "[\n";
      for (size_t i = 0; i < summaries.size(); ++i) {
        out << SummaryJson(summaries[i]) << (i + 1 < summaries.size() ? ",\n" : "");
      }
      out << "]\n";
    }
  } else {
    out << "trace " << f.trace << " (" << TraceFormatName(format) << "): " << jobs.size()
        << " jobs; cluster " << cfg.cluster.nodes << " nodes x " << cfg.cluster.gpus_per_node
        << " GPUs\n";
    out << SummaryTable(summaries);
  }
  if (!f.plot.empty()) {
    std::string title = f.title;
    if (title.empty()) {
      title = "JCT CDF, " + std::to_string(jobs.size()) + " jobs on " +
              std::to_string(static_cast<int64_t>(cfg.cluster.nodes) * cfg.cluster.gpus_per_node) +
              " GPUs";
    }
    CORRAL_RETURN_IF_ERROR(WriteFile(f.plot, JctCdfSvg(summaries, title)));
  }
  return Status::Ok();
}

Status Run(const Flags& f, std::ostream& out, std::ostream& err) {
  Result<Trace> trace = LoadTrace(f, err);
  if (!trace.ok()) return trace.status();
  std::vector<TraceJob> jobs = trace->jobs;
  CORRAL_RETURN_IF_ERROR(SelectJobs(f, &jobs, err));
  Result<TimeMs> report_from = ReportFrom(f, jobs);
  if (!report_from.ok()) return report_from.status();
  SimConfig cfg;
  CORRAL_RETURN_IF_ERROR(ConfigureCluster(f, &cfg, &jobs));
  CORRAL_RETURN_IF_ERROR(ConfigurePolicies(f, &cfg));
  CORRAL_RETURN_IF_ERROR(ConfigureEstimates(f, &cfg));
  if (!f.quotas.empty()) {
    CORRAL_RETURN_IF_ERROR(ReadQuotas(
        f.quotas, jobs, static_cast<int64_t>(cfg.cluster.nodes) * cfg.cluster.gpus_per_node,
        &cfg.quotas));
  }
  CORRAL_RETURN_IF_ERROR(ApplyAdminFlags(f.admin, &cfg, &jobs));
  CORRAL_RETURN_IF_ERROR(ApplyDataFlags(f.data, f.seed, &cfg, &jobs));
  if (cfg.data.on() && f.check) {
    return InvalidArgument(
        "field '--check': it checks runs that serve from their start; a run that stages its "
        "data first does not: leave it out with --datasets");
  }
  Result<std::vector<std::string>> policies = PoliciesToRun(f);
  if (!policies.ok()) return policies.status();
  std::vector<Summary> summaries;
  for (const std::string& p : *policies) {
    Result<Summary> s =
        SimulatePolicy(f, p, policies->size() > 1, jobs, cfg, *trace, *report_from, err);
    if (!s.ok()) return s.status();
    summaries.push_back(std::move(*s));
  }
  return WriteSummaries(f, summaries, jobs, cfg, trace->format, out);
}

// corral simulate's flags: the trace and how to read it.
void AddSimTraceFlags(CLI::App* app, Flags* f) {
  app->add_option("--trace", f->trace, "trace file")->required();
  app->add_option("--format", f->format,
                  "auto|csv|philly|gavel|tiresias|helios|alibaba|openb (auto: from the header)");
  app->add_option("--max-bad-rows", f->max_bad_rows,
                  "fail when more than this percentage of rows are malformed (default 1%)");
  app->add_option("--gavel-steps-per-second", f->gavel_steps_per_second,
                  "Gavel traces count steps: duration = total_steps / this (default 1)");
}

// corral simulate's flags: the simulated cluster.
void AddSimClusterFlags(CLI::App* app, Flags* f) {
  app->add_option("--nodes", f->nodes, "simulated nodes");
  app->add_option("--gpus-per-node", f->gpus_per_node, "GPUs per node (default 8)");
  app->add_option("--racks", f->racks, "racks the nodes are spread over (default 1)");
  app->add_option("--gpus", f->gpus, "total GPUs (instead of --nodes)");
  app->add_option("--gpu-memory", f->gpu_memory,
                  "device memory of each GPU (default 32G); shares of a GPU are packed within it");
  app->add_option("--poisson-load", f->poisson_load,
                  "replace the trace's submit times by Poisson arrivals (seeded by --seed) that "
                  "offer this share of the cluster's GPU capacity (e.g. 0.9); durations and GPUs "
                  "stay the trace's");
  app->add_flag("--round-shares-up", f->round_shares_up,
                "submit every share of a GPU in the trace as one whole GPU (no sharing)");
}

// corral simulate's flags: the policies run and what is written.
void AddSimOutputFlags(CLI::App* app, Flags* f) {
  app->add_option("--policy", f->policy, "fifo|sjf|srtf|las|corral (default corral)");
  app->add_option("--compare", f->compare, "comma-separated policies to run and compare");
  app->add_option("-o,--output", f->output, "table|json (default table)");
  app->add_option("--out-runs", f->out_runs,
                  "write job_id,start,end,gpus,nodes per run (with --compare: FILE.<policy>.csv)");
  app->add_option("--plot", f->plot, "write an SVG of the JCT CDF per policy");
  app->add_option("--title", f->title, "title of the plot");
}

// corral simulate's flags: which jobs of the trace, their queues and their load.
void AddSimSelectionFlags(CLI::App* app, Flags* f) {
  app->add_option("--limit", f->limit, "keep the first N jobs (after --start/--end/--sample)");
  app->add_option("--start", f->start, "keep jobs submitted at or after this offset (e.g. 30d)");
  app->add_option("--end", f->end, "keep jobs submitted before this offset");
  app->add_option("--report-from", f->report_from,
                  "report only jobs submitted from this offset (e.g. 28d), or from the job this "
                  "percentage of the jobs in (e.g. 50%: the second half); the earlier jobs run and "
                  "teach the predictors");
  app->add_option("--sample", f->sample, "keep a random sample of N jobs (see --seed)");
  app->add_option("--min-duration", f->min_duration, "drop jobs shorter than this (e.g. 60s)");
  app->add_option("--max-gpu-time", f->max_gpu_time,
                  "drop jobs with at least this much GPU-time (e.g. 1000h)");
  app->add_option("--time-of-day", f->time_of_day,
                  "keep jobs submitted in this time of day (any day), e.g. 2h-10h, arriving at "
                  "their offset into it (Pollux's sampling)");
  app->add_option("--quotas", f->quotas,
                  "corral policy: CSV queue,size (e.g. VC node counts), scaled to the cluster; "
                  "default: quotas proportional to each queue's GPU-time in the trace");
  AddAdminFlags(*app, &f->admin);
  app->add_option("--seed", f->seed, "seed of any sampling (default 1)");
  app->add_option("--load-scale", f->load_scale,
                  "divide inter-arrival times by this (2: twice the load)");
}

// corral simulate's flags: the policies' settings and the predictions.
void AddSimPolicyFlags(CLI::App* app, Flags* f) {
  app->add_option("--restart-overhead", f->restart_overhead,
                  "time a resumed run spends before progressing (default 0s)");
  app->add_option("--checkpoint-interval", f->checkpoint_interval,
                  "progress is saved every this much work; 0: on preemption (default)");
  app->add_option("--preempt-grace", f->preempt_grace,
                  "a victim keeps its GPUs this long after the preempt decision (default 0s)");
  app->add_option("--tick", f->tick, "periodic pass for preemptive policies (default 60s)");
  app->add_option("--min-preempt-runtime", f->min_preempt_runtime,
                  "a run is not preempted before this (default: the scheduler's, 5m)");
  app->add_option("--fair-share-half-life", f->fair_share_half_life,
                  "corral policy: half-life of decayed queue usage (default: the scheduler's, 7d)");
  app->add_option("--las-thresholds", f->las_thresholds,
                  "las policy: attained GPU-time level boundaries, ascending (default: the "
                  "scheduler's, 1h,10h)");
  app->add_flag("--no-timing", f->no_timing, "leave wall-clock times out of the output");
  app->add_option("--las-hysteresis", f->las_hysteresis,
                  "corral policy: a run is preempted for a lower LAS level only past this times "
                  "the threshold between them, the job below threshold / this (default: the "
                  "scheduler's, 2; 1: plain LAS)");
  app->add_flag("--no-las-across-queues", f->no_las_across_queues,
                "corral policy: LAS preemption stays inside a queue (the default also lets a "
                "job displace a run of a higher LAS level from another queue over its quota)");
  app->add_flag("--no-borrowing-queues-by-level", f->no_borrowing_by_level,
                "corral policy: queues over their quota come after those under it by fair share "
                "alone (the default orders them by their best job's LAS level and predicted "
                "remaining time first)");
  app->add_option("--max-wait", f->max_wait,
                  "corral policy: the age bound: a job that has waited this long in all goes "
                  "ahead of the others, oldest first, with the reservation, and is not displaced "
                  "by LAS once it runs (0: none; default: the scheduler's, SchedulerConfig::"
                  "max_wait_ms)");
  app->add_flag("--aged-no-displace", f->aged_no_displace,
                "corral policy: a job past its age bound only holds its reservation (the default "
                "also lets it displace runs that are not aged, whatever their LAS levels)");
  app->add_option("--cluster-budget", f->cluster_budget,
                  "corral policy: RUNS,GPU_SECONDS: runs preempted per minute and GPU-seconds "
                  "lost per hour, cluster-wide (0: the scheduler's default, -1: unlimited)");
  app->add_option("--queue-budget", f->queue_budget,
                  "corral policy: RUNS,GPU_SECONDS as --cluster-budget, per victim queue");
  AddPredictFlags(*app, &f->predict);
}

// corral simulate's flags: what-ifs, failures, elasticity, checks and the start estimates.
void AddSimWhatIfFlags(CLI::App* app, Flags* f) {
  app->add_flag("--synth-time-limits", f->synth_time_limits,
                "give jobs without a time limit the one a user might ask for: the duration rounded "
                "up to a power of two hours, at least 1h (a what-if for traces without limits)");
  app->add_option("--infer-job-names", f->infer_job_names,
                  "name jobs without a name by submission bursts: a job submitted within this "
                  "window (e.g. 60s) of the previous one of its queue and GPU count shares its "
                  "name, and the queue is its user, so predictions learn from its ended burst "
                  "siblings (a what-if for traces without names; default off)");
  app->add_option("--node-mtbf", f->node_mtbf,
                  "mean time between failures of a node (e.g. 2000h; exponential, seeded by "
                  "--seed); its runs are lost and requeued (default 0s: nodes never fail)");
  app->add_flag("--elastic", f->elastic,
                "submit every job of 2 GPUs or more as an elastic job (docs/simulation.md)");
  app->add_option("--elastic-min", f->elastic_min,
                  "an elastic job's fewest replicas, as a share of its trace size (default 0.5)");
  app->add_option("--elastic-alpha", f->elastic_alpha,
                  "scaling law: throughput on g GPUs grows as g^alpha (default 0.8)");
  app->add_option("--elastic-resize-overhead", f->elastic_resize_overhead,
                  "an elastic world's pause at each change of membership (default 30s)");
  app->add_option("--node-repair", f->node_repair,
                  "how long a failed node stays down (default 1h)");
  app->add_flag("--check", f->check, "validate the runs against the trace; fail if wrong");
  app->add_option("--estimate-every", f->estimate_every,
                  "judge the head's start-time estimates on every Nth job: the estimate after its "
                  "submission against its real start (median, p90 error; default 0: none)");
  app->add_option("--estimator", f->estimator,
                  "how the head estimates start times: forward (its pass run forward on a copy "
                  "of its state; default) or sweep (one forward sweep of the pending jobs)");
  app->add_option("--estimate-passes", f->estimate_passes,
                  "forward: the most passes one estimate runs; past them, the sweep's estimate "
                  "(default 256)");
  app->add_option("--estimate-arrivals", f->estimate_arrivals,
                  "forward: the jobs expected to arrive meanwhile are those of this window "
                  "before the estimate again, evenly spaced (default 2h; 0: none arrive)");
  app->add_flag("--profile", f->profile, "report wall time spent inside Scheduler::Schedule");
  AddDataFlags(*app, &f->data);
}

}  // namespace

int SimulateMain(const std::vector<std::string>& args) {
  return SimulateMain(args, std::cout, std::cerr);
}

int SimulateMain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{
      "corral simulate: replay a job trace through the Corral scheduler in simulated "
      "time",
      "corral simulate"};
  Flags f;
  AddSimTraceFlags(&app, &f);
  AddSimClusterFlags(&app, &f);
  AddSimOutputFlags(&app, &f);
  AddSimSelectionFlags(&app, &f);
  AddSimPolicyFlags(&app, &f);
  AddSimWhatIfFlags(&app, &f);
  try {
    std::vector<std::string> rev(args.rbegin(), args.rend());
    app.parse(rev);
  } catch (const CLI::ParseError& e) {
    return app.exit(e, out, err);
  }
  Status st = Run(f, out, err);
  if (!st.ok()) {
    err << "corral simulate: " << st.message() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace corral::sim
