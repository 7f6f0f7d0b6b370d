// The simulator's flags for the corral policy's run-time predictions (--predict and
// --predict-*), kept apart from the other flags: what history to learn from, how a job's
// run-time distribution orders it, and how recent a user's habits count.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "sim/simulator.h"

namespace CLI {
class App;
}

namespace corral::sim {

struct PredictFlags {
  std::string predict = "user-name,user-gpus,user,queue,time-limit";
  double weight = -1;  // < 0: the estimator's
  std::string rule = "quantile";
  double quantile = -1;
  int window = 0;
  int min_jobs = -1;
  bool for_level = false;
  double recency = -1;
  double done_weight = -1;
  bool fresh_by_mean = false;
  double global_prior = -1;  // < 0: the estimator's
  int global_window = 0;     // 0: the estimator's
  int requeue_window = 0;    // 0: the estimator's (off)
  std::string levels;        // "": the scheduler's history_las_thresholds_gpu_ms
};

void AddPredictFlags(CLI::App& app, PredictFlags* f);

// A comma list of GPU-times ("1h,10h"), each above the one before and the first above `above`
// (LAS thresholds and the history levels past them). An error names `flag` and says the list
// `must be` what `must_be` says.
Result<std::vector<DurationMs>> ParseAscendingDurations(const std::string& flag,
                                                        const std::string& text, DurationMs above,
                                                        const std::string& must_be);

// Sets cfg->predict, use_predictions and the prediction_* fields; a bad value is an error
// naming its flag, and changes nothing the caller keeps.
Status ApplyPredictFlags(const PredictFlags& f, SimConfig* cfg);

}  // namespace corral::sim
