// Corral's own policy (DESIGN §6.3): priority first; within a priority the queues' and users'
// fair shares (the pass order), then least attained service within a queue, predicted
// remaining time and submit time. It displaces by claim: priority, a queue reclaiming its
// quota, the age bound, a service's replicas, and attained-service levels within a queue
// (CorralConfig).
#include <utility>

#include <memory>
#include <vector>

#include "sched/policy.h"

namespace corral::sched {
namespace {

class CorralPolicy final : public Policy {
 public:
  // The LAS thresholds and CorralConfig are its config; the helpers of order_policy.h read them
  // from a SchedulerConfig, so it keeps one.
  explicit CorralPolicy(const SchedulerConfig& config)
      : config_(config), with_history_(LasThresholdsWithHistory(config)) {}

  OrderPolicy kind() const override { return OrderPolicy::kCorral; }
  bool ByFairShare() const override { return true; }
  Displacement displacement() const override { return Displacement::kByClaim; }

  JobKey Key(const PendingJob& job, DurationMs attained_gpu_ms) const override {
    const CorralConfig& c = config_.corral;
    const int64_t level = c.las_within_queue ? LasLevel(config_, job, attained_gpu_ms) : 0;
    // A run-time distribution conditioned on the attained service already knows what the
    // level says (prediction_for_level).
    const bool dist_for_level = c.predict.on && c.predict.for_level && !job.run_quantiles.empty();
    return {.a = -int64_t{job.priority},
            .order_level = dist_for_level ? 0 : level,
            .pred = c.predict.on ? PredictedRemainingMs(config_, job, attained_gpu_ms) : 0,
            .b = job.submitted_at,
            .id = job.id,
            .level = level};
  }

  const std::vector<DurationMs>* LevelsAsItRuns(const PendingJob& job) const override {
    if (!config_.corral.las_within_queue) return nullptr;
    return HasHistoryLevels(config_, job) ? &with_history_ : &config_.las_thresholds_gpu_ms;
  }
  double LevelHysteresis() const override { return config_.corral.las_preempt_hysteresis; }

 private:
  const SchedulerConfig config_;
  const std::vector<DurationMs> with_history_;  // built once: estimates ask for every run
};

}  // namespace

std::unique_ptr<const Policy> MakeCorralPolicy(const SchedulerConfig& config) {
  return std::make_unique<CorralPolicy>(config);
}

}  // namespace corral::sched
