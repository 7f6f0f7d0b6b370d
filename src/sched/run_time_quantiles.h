// A job's predicted run time as a distribution: quantile points of the recent run times of
// its owner's jobs (RuntimeEstimator::Quantiles), and the guesses a scheduler takes from them
// once the job has run for a while. One running mean cannot tell "half of this user's jobs
// fail in a minute, the rest run a day" from "every job runs twelve hours"; the points can:
// a fresh job of the first user is likely short, and one that ran past the minute is not.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
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

// The points of n samples ascending by value, sample k of value value_at(k) and weight
// weight_at(k), the weights summing to `total`: point i is the first sample whose running
// weight reaches total x (2i + 1) / (2 kRunQuantiles) (the last where rounding leaves none),
// at least 1 ms. All 0 for n == 0. RuntimeEstimator::Quantiles walks its owners' recent run
// times so, and the simulator's bounds (sim/oracle_bounds.h) a trace's, each weighing 1.
template <typename ValueAt, typename WeightAt>
RunTimeQuantiles QuantilesOfAscending(size_t n, double total, ValueAt value_at,
                                      WeightAt weight_at) {
  RunTimeQuantiles out;
  if (n == 0) return out;
  double below = 0;
  size_t j = 0;
  for (int i = 0; i < kRunQuantiles; ++i) {
    const double target = total * (2.0 * i + 1) / (2.0 * kRunQuantiles);
    while (j + 1 < n && below + weight_at(j) < target) below += weight_at(j++);
    out.at[static_cast<size_t>(i)] = std::max<DurationMs>(1, value_at(j));
  }
  return out;
}

// A job's distribution as a PendingJob holds it: one immutable copy that the copies of the job
// (the pending entry, the run entry, the driver's) share, so that a job costs a pointer rather
// than the points (most jobs of a pass are only walked past). Null: all points 0. A value:
// it compares and reads as the points it holds.
class SharedQuantiles {
 public:
  SharedQuantiles() = default;
  SharedQuantiles(const RunTimeQuantiles& q)  // NOLINT(google-explicit-constructor): a value
      : points_(q == RunTimeQuantiles{} ? nullptr : std::make_shared<const RunTimeQuantiles>(q)) {}

  bool empty() const { return points_ == nullptr || points_->empty(); }
  const RunTimeQuantiles& get() const { return points_ ? *points_ : kNone; }
  operator const RunTimeQuantiles&() const { return get(); }  // NOLINT: reads as the points
  bool operator==(const SharedQuantiles& o) const { return get() == o.get(); }
  bool operator==(const RunTimeQuantiles& o) const { return get() == o; }

 private:
  static inline const RunTimeQuantiles kNone{};
  std::shared_ptr<const RunTimeQuantiles> points_;
};

// How kCorral turns a distribution and the run time a job has had into the remaining time it
// orders by (PredictionConfig::rule).
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
