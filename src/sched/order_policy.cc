#include "sched/order_policy.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace corral::sched {

const char* OrderPolicyName(OrderPolicy p) {
  switch (p) {
    case OrderPolicy::kCorral:
      return "corral";
    case OrderPolicy::kFifo:
      return "fifo";
    case OrderPolicy::kSjf:
      return "sjf";
    case OrderPolicy::kSrtf:
      return "srtf";
    case OrderPolicy::kLas:
      return "las";
  }
  return "unknown";
}

bool ParseOrderPolicy(const std::string& text, OrderPolicy* out) {
  for (OrderPolicy p : {OrderPolicy::kCorral, OrderPolicy::kFifo, OrderPolicy::kSjf,
                        OrderPolicy::kSrtf, OrderPolicy::kLas}) {
    if (text == OrderPolicyName(p)) {
      *out = p;
      return true;
    }
  }
  return false;
}

int64_t TotalGpus(const PendingJob& job) {
  int64_t per = (std::max(0, job.per_replica.gpu_milli) + kGpuMilli - 1) / kGpuMilli;
  return int64_t{std::max(1, job.replicas)} * per;
}

TimeMs AgedAt(const PendingJob& job, DurationMs bound) {
  if (bound <= 0) return kUnknownTime;
  return job.submitted_at + job.attained_ms / std::max<int64_t>(1, TotalGpus(job)) + bound;
}

int64_t RemainingMs(const PendingJob& job, DurationMs attained_gpu_ms) {
  int64_t gpus = std::max<int64_t>(1, TotalGpus(job));
  return job.oracle_duration_ms - attained_gpu_ms / gpus;
}

int64_t LasLevel(const SchedulerConfig& config, DurationMs attained_gpu_ms) {
  int64_t level = 0;
  for (DurationMs t : config.las_thresholds_gpu_ms) level += attained_gpu_ms >= t;
  return level;
}

bool HasHistoryLevels(const SchedulerConfig& config, const PendingJob& job) {
  return config.policy == OrderPolicy::kCorral && config.corral.predict.on &&
         !job.run_quantiles.empty() && !config.corral.predict.history_las_thresholds_gpu_ms.empty();
}

std::vector<DurationMs> LasThresholdsWithHistory(const SchedulerConfig& config) {
  std::vector<DurationMs> t = config.las_thresholds_gpu_ms;
  t.insert(t.end(), config.corral.predict.history_las_thresholds_gpu_ms.begin(),
           config.corral.predict.history_las_thresholds_gpu_ms.end());
  return t;
}

std::vector<DurationMs> LasThresholds(const SchedulerConfig& config, const PendingJob& job) {
  return HasHistoryLevels(config, job) ? LasThresholdsWithHistory(config)
                                       : config.las_thresholds_gpu_ms;
}

DurationMs LasThresholdAt(const SchedulerConfig& config, const PendingJob& job, int64_t level) {
  const auto& base = config.las_thresholds_gpu_ms;
  const int64_t n = static_cast<int64_t>(base.size());
  if (level < 0) return 0;
  if (level < n) return base[static_cast<size_t>(level)];
  if (!HasHistoryLevels(config, job)) return 0;
  const auto& more = config.corral.predict.history_las_thresholds_gpu_ms;
  return level - n < static_cast<int64_t>(more.size()) ? more[static_cast<size_t>(level - n)] : 0;
}

int64_t LasLevel(const SchedulerConfig& config, const PendingJob& job, DurationMs attained_gpu_ms) {
  int64_t level = LasLevel(config, attained_gpu_ms);
  if (!HasHistoryLevels(config, job)) return level;
  for (DurationMs t : config.corral.predict.history_las_thresholds_gpu_ms)
    level += attained_gpu_ms >= t;
  return level;
}

DurationMs PredictedRemainingMs(const SchedulerConfig& config, const PendingJob& job,
                                DurationMs attained_gpu_ms) {
  DurationMs done = attained_gpu_ms / std::max<int64_t>(1, TotalGpus(job));
  const bool fresh_by_mean =
      config.corral.predict.fresh_by_mean && done <= 0 && job.predicted_ms > 0;
  if (!job.run_quantiles.empty() && !fresh_by_mean) {
    DurationMs left = ConditionalRemainingMs(job.run_quantiles, done, config.corral.predict.rule,
                                             config.corral.predict.quantile);
    const double a = config.corral.predict.done_weight;
    if (done <= 0 || a <= 0) return left;
    // The run time so far is evidence of its own: long jobs' remaining time grows with it
    // beyond what the owner's few long jobs tell.
    double blend = a * std::log(static_cast<double>(done)) +
                   (1 - a) * std::log(static_cast<double>(std::max<DurationMs>(1, left)));
    return std::max<DurationMs>(1, static_cast<DurationMs>(std::llround(std::exp(blend))));
  }
  return PredictionLeftMs(job.predicted_ms, done);
}

DurationMs AttainedNow(const PendingJob& job, int64_t gpus, TimeMs started_at, TimeMs now) {
  return job.attained_ms + gpus * std::max<DurationMs>(0, now - started_at);
}

TimeMs ExpectedEndOf(const PendingJob& job, TimeMs start) {
  return job.time_limit_ms > 0 ? start + job.time_limit_ms : kUnknownTime;
}

int64_t MinuteBucket(DurationMs ms) {
  return std::bit_width(static_cast<uint64_t>(std::max<DurationMs>(0, ms) / kMinute));
}

}  // namespace corral::sched
