#include "sim/predict_flags.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <sstream>

#include "core/spec.h"

namespace corral::sim {

namespace {

// --predict: "none", "oracle", an oracle bound (oracle_bounds.h), or a comma-separated list of the
// inputs the corral policy's predictions may use.
Status ParsePredict(const std::string& text, SimConfig* cfg) {
  PredictionInputs& in = cfg->predict;
  in = PredictionInputs{};
  if (text == "none") {
    cfg->corral.predict.on = false;
    return Status::Ok();
  }
  if (text == "oracle") {
    in.oracle = true;
    return Status::Ok();
  }
  if (text == "oracle-user-gpus" || text == "oracle-window") {
    in.bound = text == "oracle-window" ? OracleBound::kWindow : OracleBound::kUserGpus;
    return Status::Ok();
  }
  if (const std::string window = "oracle-window:"; text.starts_with(window)) {
    const std::string n = text.substr(window.size());
    char* end = nullptr;
    const long v = std::strtol(n.c_str(), &end, 10);
    if (n.empty() || *end != '\0' || v < 1 || v > 4096) {
      return InvalidArgument("--predict '" + text + "': the jobs after oracle-window: must be " +
                             "a whole number in [1, 4096], not '" + n + "'");
    }
    in.bound = OracleBound::kWindow;
    in.bound_window = static_cast<int>(v);
    return Status::Ok();
  }
  if (const std::string noisy = "oracle-noisy:"; text.starts_with(noisy)) {
    const std::string sigma = text.substr(noisy.size());
    char* end = nullptr;
    const double v = std::strtod(sigma.c_str(), &end);
    if (sigma.empty() || *end != '\0' || !(v >= 0) || v > 10) {
      return InvalidArgument("--predict '" + text + "': the sigma after oracle-noisy: must be " +
                             "a number in [0, 10], not '" + sigma + "'");
    }
    in.bound = OracleBound::kNoisy;
    in.noise_sigma = v;
    return Status::Ok();
  }
  in.history = false;
  in.time_limit = false;
  in.estimator.by_user_name = in.estimator.by_user = false;
  in.estimator.by_queue_gpus = in.estimator.by_queue = false;
  in.estimator.dist_by_user_name = in.estimator.dist_by_user_gpus = false;
  in.estimator.dist_by_user = false;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item == "user-name") {
      in.history = in.estimator.by_user_name = in.estimator.dist_by_user_name = true;
    } else if (item == "user-gpus") {
      in.history = in.estimator.dist_by_user_gpus = true;
    } else if (item == "user") {
      in.history = in.estimator.by_user = in.estimator.dist_by_user = true;
    } else if (item == "queue-gpus") {
      in.history = in.estimator.by_queue_gpus = true;
    } else if (item == "queue") {
      in.history = in.estimator.by_queue = true;
    } else if (item == "time-limit") {
      in.time_limit = true;
    } else {
      return InvalidArgument("--predict '" + text + "': '" + item +
                             "' is not one of user-name, user-gpus, user, queue-gpus, queue, "
                             "time-limit "
                             "(or give none, oracle, oracle-user-gpus, oracle-window or "
                             "oracle-window:N or oracle-noisy:SIGMA alone)");
    }
  }
  return Status::Ok();
}

// --predict-rule and the distributions' window, minimum and quantile. "running-mean" turns the
// distributions off: a job is then predicted by the running mean of its keys alone.
Status PredictionFlags(const PredictFlags& f, SimConfig* cfg) {
  sched::EstimatorConfig& e = cfg->predict.estimator;
  if (f.rule == "running-mean") {
    e.dist_by_user_name = e.dist_by_user_gpus = e.dist_by_user = false;
  } else if (!sched::ParsePredictionRule(f.rule, &cfg->corral.predict.rule)) {
    return InvalidArgument("--predict-rule '" + f.rule +
                           "' is not one of gittins, quantile, mean, running-mean");
  }
  if (f.quantile >= 0) {
    if (f.quantile <= 0 || f.quantile > 1) {
      return InvalidArgument("--predict-quantile must be in (0, 1]");
    }
    cfg->corral.predict.quantile = f.quantile;
  }
  if (f.window != 0) {
    if (f.window < 1) return InvalidArgument("--predict-window must be >= 1");
    e.window = f.window;
  }
  if (f.min_jobs >= 0) e.min_jobs = f.min_jobs;
  cfg->corral.predict.for_level = f.for_level;
  cfg->corral.predict.fresh_by_mean = f.fresh_by_mean;
  if (f.done_weight >= 0) {
    if (f.done_weight > 1) return InvalidArgument("--predict-done-weight must be in [0, 1]");
    cfg->corral.predict.done_weight = f.done_weight;
  }
  if (f.global_prior >= 0) {
    if (f.global_prior > 1e6) return InvalidArgument("--predict-global-prior must be in [0, 1e6]");
    e.global_prior_jobs = f.global_prior;
  }
  if (f.requeue_window != 0) {
    if (f.requeue_window < 1) return InvalidArgument("--predict-requeue-window must be >= 1");
    e.requeue_window = f.requeue_window;
  }
  if (f.global_window != 0) {
    if (f.global_window < 1) return InvalidArgument("--predict-global-window must be >= 1");
    e.global_window = f.global_window;
  }
  if (f.recency >= 0) {
    if (f.recency >= 1) return InvalidArgument("--predict-recency must be in [0, 1)");
    e.recency = f.recency;
  }
  return Status::Ok();
}

// --predict-levels: "none", or ascending GPU-times above the last LAS threshold.
Status ParseLevels(const std::string& text, SimConfig* cfg) {
  if (text.empty()) return Status::Ok();
  std::vector<DurationMs> levels;
  if (text != "none") {
    const std::vector<DurationMs> base = cfg->las_thresholds_gpu_ms.empty()
                                             ? sched::SchedulerConfig{}.las_thresholds_gpu_ms
                                             : cfg->las_thresholds_gpu_ms;
    auto parsed = ParseAscendingDurations("--predict-levels", text, base.empty() ? 0 : base.back(),
                                          "ascending and above the last LAS threshold");
    if (!parsed.ok()) return parsed.status();
    levels = std::move(*parsed);
  }
  cfg->corral.predict.history_las_thresholds_gpu_ms = std::move(levels);
  return Status::Ok();
}

}  // namespace

Result<std::vector<DurationMs>> ParseAscendingDurations(const std::string& flag,
                                                        const std::string& text, DurationMs above,
                                                        const std::string& must_be) {
  std::vector<DurationMs> out;
  DurationMs last = above;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    Result<DurationMs> t = ParseDuration(flag, part);
    if (!t.ok()) return t.status();
    if (*t <= last) return InvalidArgument(flag + " '" + text + "' must be " + must_be);
    out.push_back(last = *t);
  }
  return out;
}

void AddPredictFlags(CLI::App& app, PredictFlags* f) {
  app.add_option(
      "--predict", f->predict,
      "corral policy: what run-time predictions may use: a list of user-name, "
      "user-gpus, user, queue-gpus, queue, time-limit (history of ended jobs by those "
      "keys, and time "
      "limits), or none, or oracle (the true durations: an upper bound, not a real "
      "input), or an upper bound of what an owner's history can tell, from every job "
      "of the trace, past and future, the job itself left out: oracle-user-gpus "
      "(the run times of the owner's jobs of its GPU count), oracle-window[:N] (the "
      "16, or N, of those nearest it in submission order; both fall back to the owner's jobs, "
      "then everyone's, below 4), oracle-noisy:SIGMA (the true duration times a "
      "lognormal factor of that sigma, fixed per job); default "
      "user-name,user-gpus,user,queue,time-limit");
  app.add_option("--predict-rule", f->rule,
                 "corral policy: how a job's run-time distribution (its owner's recent run times, "
                 "per user-name, user-gpus, user) orders it: quantile (default; the conditional "
                 "median), gittins, mean, "
                 "or running-mean (no distributions: the running mean of each key)");
  app.add_flag("--predict-for-level", f->for_level,
               "corral policy: order a job with a run-time distribution by its predicted "
               "remaining time in its LAS level's place (preemption still by level)");
  app.add_option("--predict-done-weight", f->done_weight,
                 "a job that has run D is predicted to need D^w x the distribution's "
                 "remaining^(1-w) (default 0)");
  app.add_flag("--predict-fresh-by-mean", f->fresh_by_mean,
               "a job that has not run yet is predicted by the running mean (--predict-weight), "
               "the distribution once it has run");
  app.add_option("--predict-recency", f->recency,
                 "each older run time of a user key weighs 1 - this times the next newer one "
                 "in its distribution (default 0: alike)");
  app.add_option("--predict-global-prior", f->global_prior,
                 "a requeued job's distribution: its owner's run times longer than it has run, "
                 "and every user's recent ones longer than that counted as this many jobs "
                 "(0: its owner's alone)");
  app.add_option("--predict-global-window", f->global_window,
                 "every user's recent run times kept for --predict-global-prior (default 4096)");
  app.add_option("--predict-requeue-window", f->requeue_window,
                 "a requeued job's distribution: its owner's last this many run times (any GPU "
                 "count) longer than it has run, not its usual key's (default off)");
  app.add_option("--predict-levels", f->levels,
                 "corral policy: LAS levels above the last of --las-thresholds for jobs predicted "
                 "from their owner's history, as GPU-times (e.g. 200h), or none (default: the "
                 "scheduler's, 100h)");
  app.add_option("--predict-quantile", f->quantile,
                 "the conditional quantile --predict-rule quantile orders by (default 0.5)");
  app.add_option("--predict-window", f->window,
                 "run times kept per user key for the distributions (default 16)");
  app.add_option("--predict-min-jobs", f->min_jobs,
                 "jobs a user key must have seen before its distribution is preferred to a "
                 "broader key's (default 4)");
  app.add_option("--predict-weight", f->weight,
                 "weight of the newest ended job in each history's running mean of log run times "
                 "(default: the estimator's, 0.5)");
}

Status ApplyPredictFlags(const PredictFlags& f, SimConfig* cfg) {
  SimConfig next = *cfg;
  CORRAL_RETURN_IF_ERROR(ParsePredict(f.predict, &next));
  CORRAL_RETURN_IF_ERROR(PredictionFlags(f, &next));
  CORRAL_RETURN_IF_ERROR(ParseLevels(f.levels, &next));
  if (f.weight >= 0) {
    if (f.weight <= 0 || f.weight > 1) return InvalidArgument("--predict-weight must be in (0, 1]");
    next.predict.estimator.weight = f.weight;
  }
  *cfg = std::move(next);
  return Status::Ok();
}

}  // namespace corral::sim
