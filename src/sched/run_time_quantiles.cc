#include "sched/run_time_quantiles.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace corral::sched {

const char* PredictionRuleName(PredictionRule r) {
  switch (r) {
    case PredictionRule::kQuantile:
      return "quantile";
    case PredictionRule::kMean:
      return "mean";
    case PredictionRule::kGittins:
      return "gittins";
  }
  return "unknown";
}

bool ParsePredictionRule(const std::string& text, PredictionRule* out) {
  for (PredictionRule r :
       {PredictionRule::kQuantile, PredictionRule::kMean, PredictionRule::kGittins}) {
    if (text == PredictionRuleName(r)) {
      *out = r;
      return true;
    }
  }
  return false;
}

DurationMs ConditionalRemainingMs(const RunTimeQuantiles& d, DurationMs done, PredictionRule rule,
                                  double q) {
  done = std::max<DurationMs>(0, done);
  // The points are ascending: the survivors are a suffix.
  int first = 0;
  while (first < kRunQuantiles && d.at[first] <= done) ++first;
  const int k = kRunQuantiles - first;
  if (k == 0) return std::max<DurationMs>(1, done);
  switch (rule) {
    case PredictionRule::kQuantile: {
      int i = std::clamp(static_cast<int>(std::ceil(q * k)) - 1, 0, k - 1);
      return std::max<DurationMs>(1, d.at[first + i] - done);
    }
    case PredictionRule::kMean: {
      double sum = 0;
      for (int i = first; i < kRunQuantiles; ++i) sum += static_cast<double>(d.at[i] - done);
      return std::max<DurationMs>(1, static_cast<DurationMs>(std::llround(sum / k)));
    }
    case PredictionRule::kGittins: {
      // Quantum D = p_j - done: the first j survivors end within it, taking their remaining
      // time; the other k - j take D each. Per completion: expected time / j; the best quantum
      // is the index.
      double spent_done = 0, best = -1;
      for (int j = 1; j <= k; ++j) {
        double quantum = static_cast<double>(d.at[first + j - 1] - done);
        spent_done += quantum;
        double per = (spent_done + quantum * (k - j)) / j;
        if (best < 0 || per < best) best = per;
      }
      return std::max<DurationMs>(1, static_cast<DurationMs>(std::llround(best)));
    }
  }
  return std::max<DurationMs>(1, done);
}

}  // namespace corral::sched
