// The scheduling library (DESIGN §6): pure, deterministic, no I/O, no threads, no wall clock.
//
// The Scheduler keeps its own model of the cluster, fed by events from its driver (the head
// or the simulator), so that a pass does work proportional to what changed, not to the size
// of the cluster. Time is a parameter of every call. The same sequence of calls gives the
// same decisions.
//
// Contract with the driver:
//  - Place decisions are "assumed": the scheduler binds the resources in its model at once.
//    The driver makes them durable and acts on them; if it cannot, it calls RemoveRunning.
//  - Preempt decisions leave the victim's resources bound until the driver reports the run
//    over with RemoveRunning, then re-adds the job with AddPending (a new run).
//  - A finished or cancelled job: RemovePending or RemoveRunning.
// Owned by one thread (the head's state machine strand, or the simulator loop).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/job.h"
#include "core/node.h"
#include "core/resources.h"
#include "core/time.h"

namespace corral::sched {

struct NodeInfo {
  std::string name;
  std::map<std::string, std::string> labels;  // "rack", "gpu_model", ...
  bool schedulable = true;                     // false: draining, unreachable, down
  int32_t cpu_milli = 0;
  int64_t memory_mb = 0;
  std::vector<Gpu> gpus;  // healthy ones are allocatable
};

// Order policy: `kCorral` is the production policy (priority, queue fair share, user fair
// share, submit time). The others are the simulator's baselines (DESIGN §12); they use
// fields the production driver leaves at zero (oracle duration, attained service).
enum class OrderPolicy { kCorral, kFifo, kSjf, kSrtf, kLas };
const char* OrderPolicyName(OrderPolicy p);
bool ParseOrderPolicy(const std::string& text, OrderPolicy* out);

struct PendingJob {
  JobId id = 0;
  std::string queue = "default";
  std::string user;
  int32_t priority = 0;
  TimeMs submitted_at = 0;
  int32_t replicas = 1;
  Resources per_replica;
  std::string gpu_model;
  std::map<std::string, std::string> node_labels;
  DurationMs time_limit_ms = 0;  // 0: unknown; backfill treats it as infinite
  bool preemptible = false;
  // Simulator-only inputs of the baseline policies.
  DurationMs oracle_duration_ms = 0;
  DurationMs attained_ms = 0;  // GPU-time already received, in GPU-ms
};

struct RunningJob {
  PendingJob job;
  std::vector<ReplicaPlacement> placement;
  TimeMs started_at = 0;  // of this run; the minimum runtime and lost work count from here
};

struct SchedulerConfig {
  OrderPolicy policy = OrderPolicy::kCorral;
  DurationMs fair_share_half_life_ms = 7 * 24 * kHour;
  DurationMs min_runtime_before_preempt_ms = 5 * kMinute;
  bool backfill = true;
  bool preemption = true;
  int32_t max_placements_per_pass = 1 << 30;
};

struct PlaceDecision {
  JobId job = 0;
  std::vector<ReplicaPlacement> placement;  // one per replica
};

struct PreemptDecision {
  JobId job = 0;        // victim
  JobId for_job = 0;    // the job it makes room for
  std::string reason;   // shown by `corral show`
};

// Why a pending job did not start in this pass.
struct WaitReason {
  JobId job = 0;
  std::string reason;
};

struct Decisions {
  std::vector<PlaceDecision> place;
  std::vector<PreemptDecision> preempt;
  std::vector<WaitReason> waiting;  // only for jobs whose reason changed since the last pass
};

enum class Fit { kPlaced, kWait, kInfeasible };

class Scheduler {
 public:
  explicit Scheduler(SchedulerConfig config = {});
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  void UpsertNode(const NodeInfo& node);
  void RemoveNode(const std::string& name);
  void SetQueue(const QueueConfig& queue);

  void AddPending(const PendingJob& job);
  void RemovePending(JobId id);
  void AddRunning(const RunningJob& run);  // binds resources (recovery, or the simulator)
  void RemoveRunning(JobId id);            // frees them

  // Could this request ever fit, on an empty cluster of the current nodes? If not, says why
  // (admission, DESIGN §6.1).
  Fit Admit(const PendingJob& job, std::string* why) const;

  [[nodiscard]] Decisions Schedule(TimeMs now);

  struct Stats {
    int64_t pending = 0;
    int64_t running = 0;
    int64_t free_gpus = 0;
    int64_t total_gpus = 0;
  };
  Stats GetStats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace corral::sched
