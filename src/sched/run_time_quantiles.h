// A job's predicted run time as a distribution: quantile points of the recent run times of
// its owner's jobs (RuntimeEstimator::Quantiles), and the guesses a scheduler takes from them
// once the job has run for a while. One running mean cannot tell "half of this user's jobs
// fail in a minute, the rest run a day" from "every job runs twelve hours"; the points can:
// a fresh job of the first user is likely short, and one that ran past the minute is not.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "core/time.h"

namespace corral::sched {

// Points at the quantiles (i + 0.5) / kRunQuantiles of the run times (wall ms), ascending,
// each standing for an equal share of the jobs; all 0: no distribution.
inline constexpr int kRunQuantiles = 16;
struct RunTimeQuantiles {
  std::array<DurationMs, kRunQuantiles> at{};
  bool empty() const { return at[kRunQuantiles - 1] <= 0; }
  bool operator==(const RunTimeQuantiles&) const = default;
};

// How kCorral turns a distribution and the run time a job has had into the remaining time it
// orders by (SchedulerConfig::prediction_rule).
enum class PredictionRule {
  kQuantile,  // the conditional quantile (prediction_quantile) of the run time, less done
  kMean,      // the conditional mean, less done
  kGittins,   // the inverse Gittins index of the remaining time (expected time per completion
              // with the best next quantum): short-lived failures make a fresh job cheap
};
const char* PredictionRuleName(PredictionRule r);
bool ParsePredictionRule(const std::string& text, PredictionRule* out);

// The remaining run time of a job that has run `done` ms, from the points above `done` (the
// job is known to outlive the others). Without any such point: `done` (it outlived all of
// them: guessed to run as long again). `q` in (0, 1] for kQuantile.
DurationMs ConditionalRemainingMs(const RunTimeQuantiles& d, DurationMs done, PredictionRule rule,
                                  double q);

}  // namespace corral::sched
