// Scheduling policies as components (DESIGN §6.3, §12). Each policy (fifo, sjf, srtf, las,
// corral) is one implementation of two small interfaces, built by MakePolicy from its own part
// of the config: the order of pending work, and who may displace whom. The pass, the victim
// search and the estimates ask the policy what it does; none of them tests which policy it is.
#pragma once

#include <memory>
#include <vector>

#include "sched/order_policy.h"
#include "sched/scheduler.h"

namespace corral::sched {

// The order of pending work.
class PendingOrder {
 public:
  virtual ~PendingOrder() = default;
  // The static part of a job's place in line once it has attained `attained_gpu_ms`; smaller
  // comes first. The dynamic part (queues' and users' fair shares) is the pass order's.
  virtual JobKey Key(const PendingJob& job, DurationMs attained_gpu_ms) const = 0;
  // Whether queues' and users' fair shares order the pass, and quotas, borrowing and age bounds
  // apply (pass_order.h); else one line in key order.
  virtual bool ByFairShare() const { return false; }
  // Whether no job may start past one that waits (no backfill, whatever the config says).
  virtual bool Strict() const { return false; }
};

// How a policy lets a blocked job displace running ones.
enum class Displacement {
  kNever,    // nothing is preempted for order
  kByKey,    // a blocked job displaces a run whose key's `a`, from its attained service now,
             // is greater than its own (the victim search's shortcuts count on that order)
  kByClaim,  // priority, a queue reclaiming its quota, the age bound, a service's replicas,
             // attained-service levels within a queue (preemption.cc's own search)
};

// Who may displace whom.
class DisplaceRule {
 public:
  virtual ~DisplaceRule() = default;
  virtual Displacement displacement() const = 0;
  // The attained-service levels (GPU-ms) past which a running `job` loses its claim against
  // jobs below them, as it runs; nullptr where its claim does not fall with levels. Start
  // estimates follow a run up these levels.
  virtual const std::vector<DurationMs>* LevelsAsItRuns(const PendingJob& /*job*/) const {
    return nullptr;
  }
  // How far past a level a run must be before a job below it displaces it (1: at the level).
  virtual double LevelHysteresis() const { return 1.0; }
};

class Policy : public PendingOrder, public DisplaceRule {
 public:
  virtual OrderPolicy kind() const = 0;
  const char* name() const { return OrderPolicyName(kind()); }
  // Whether a blocked job may ever displace a running one for this policy's sake.
  bool Preemptive() const { return displacement() != Displacement::kNever; }
};

// The policy that config.policy names, built from its part of `config`.
std::unique_ptr<const Policy> MakePolicy(const SchedulerConfig& config);
// Corral's own (policy_corral.cc); MakePolicy (policy_baselines.cc) builds the baselines.
std::unique_ptr<const Policy> MakeCorralPolicy(const SchedulerConfig& config);

}  // namespace corral::sched
