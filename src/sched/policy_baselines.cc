// The baselines of the evaluation (DESIGN §12): first come first served, shortest job first
// and shortest remaining time first on the oracle durations, and Tiresias' least attained
// service. Each orders one line by its key; srtf and las displace by it.
#include <utility>

#include <memory>
#include <vector>

#include "sched/policy.h"

namespace corral::sched {

namespace {

class FifoPolicy final : public Policy {
 public:
  OrderPolicy kind() const override { return OrderPolicy::kFifo; }
  JobKey Key(const PendingJob& job, DurationMs) const override {
    return {.a = job.submitted_at, .b = 0, .id = job.id};
  }
  bool Strict() const override { return true; }
  Displacement displacement() const override { return Displacement::kNever; }
};

class SjfPolicy final : public Policy {
 public:
  OrderPolicy kind() const override { return OrderPolicy::kSjf; }
  JobKey Key(const PendingJob& job, DurationMs) const override {
    return {.a = job.oracle_duration_ms, .b = job.submitted_at, .id = job.id};
  }
  Displacement displacement() const override { return Displacement::kNever; }
};

// srtf and las: a running job whose key has grown past a waiting one's is displaced.
class KeyDisplacingPolicy : public Policy {
 public:
  Displacement displacement() const override { return Displacement::kByKey; }
};

class SrtfPolicy final : public KeyDisplacingPolicy {
 public:
  OrderPolicy kind() const override { return OrderPolicy::kSrtf; }
  JobKey Key(const PendingJob& job, DurationMs attained_gpu_ms) const override {
    return {.a = RemainingMs(job, attained_gpu_ms), .b = job.submitted_at, .id = job.id};
  }
};

class LasPolicy final : public KeyDisplacingPolicy {
 public:
  explicit LasPolicy(std::vector<DurationMs> thresholds_gpu_ms)
      : thresholds_(std::move(thresholds_gpu_ms)) {}
  OrderPolicy kind() const override { return OrderPolicy::kLas; }
  JobKey Key(const PendingJob& job, DurationMs attained_gpu_ms) const override {
    int64_t level = 0;
    for (DurationMs t : thresholds_) level += attained_gpu_ms >= t;
    return {.a = level, .b = job.submitted_at, .id = job.id};
  }
  const std::vector<DurationMs>* LevelsAsItRuns(const PendingJob&) const override {
    return &thresholds_;
  }

 private:
  const std::vector<DurationMs> thresholds_;
};

}  // namespace

std::unique_ptr<const Policy> MakePolicy(const SchedulerConfig& config) {
  switch (config.policy) {
    case OrderPolicy::kCorral:
      return MakeCorralPolicy(config);
    case OrderPolicy::kFifo:
      return std::make_unique<FifoPolicy>();
    case OrderPolicy::kSjf:
      return std::make_unique<SjfPolicy>();
    case OrderPolicy::kSrtf:
      return std::make_unique<SrtfPolicy>();
    case OrderPolicy::kLas:
      return std::make_unique<LasPolicy>(config.las_thresholds_gpu_ms);
  }
  return MakeCorralPolicy(config);  // not reached: every policy is named above
}

}  // namespace corral::sched
