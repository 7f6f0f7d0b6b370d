// The pending jobs, grouped and ordered for the pass, with equivalence classes of identical
// requests (same queue, priority, shape, constraints and time limit): within one pass, once
// one member of a class cannot start, the others are skipped without a placement attempt.
// Owned by the Scheduler.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "sched/fair_share.h"
#include "sched/order_policy.h"
#include "sched/scheduler.h"

namespace corral::sched {

// Why a job waits, as last reported (only changes are reported).
enum class WaitCode : uint8_t {
  kNone,
  kNoRoom,      // no free room, no reservation
  kSameClass,   // an identical earlier request could not start in this pass
  kReserved,    // holds a reservation (reason names when and where)
  kPreempting,  // waits for runs it preempted
  kQueueLimit,  // its queue is at its limit
  kBehindHead,  // strict order: behind a blocked job
  kNoFit,       // does not fit the current cluster even when empty
};

struct PendingEntry {
  PendingJob job;
  JobKey key;
  int32_t queue = -1;  // QueueBook id
  int32_t user = -1;   // user id inside the queue
  int32_t group = -1;
  int32_t klass = -1;
  WaitCode last_code = WaitCode::kNone;
  std::string last_reason;
};

class PendingSet {
 public:
  struct Group {
    int32_t sel = 0;  // the selection queue: the QueueBook id (kCorral) or 0 (baselines)
    int32_t queue = -1;
    int32_t user = -1;
    std::map<JobKey, PendingEntry*> members;
  };

  PendingSet(const SchedulerConfig& config, QueueBook& queues) : config_(config), queues_(queues) {}

  PendingEntry* Add(const PendingJob& job);  // replaces one with the same id
  void Remove(JobId id);
  PendingEntry* Find(JobId id);
  void SetAttained(JobId id, DurationMs attained_gpu_ms);

  size_t size() const { return jobs_.size(); }
  std::vector<Group>& groups() { return groups_; }
  int32_t class_count() const { return static_cast<int32_t>(class_members_.size()); }
  int32_t live_classes() const { return live_classes_; }
  int64_t class_members(int32_t k) const { return class_members_[k]; }
  // Selection queues: QueueBook ids for kCorral, {0} otherwise.
  bool fair() const { return config_.policy == OrderPolicy::kCorral; }

 private:
  int32_t ClassOf(const PendingEntry& e);
  int32_t GroupOf(int32_t queue, int32_t user);

  const SchedulerConfig& config_;
  QueueBook& queues_;
  std::unordered_map<JobId, PendingEntry> jobs_;  // looked up only, never iterated
  std::vector<Group> groups_;
  std::map<std::pair<int32_t, int32_t>, int32_t> group_ids_;
  std::map<std::string, int32_t> class_ids_;
  std::vector<int64_t> class_members_;
  int32_t live_classes_ = 0;
};

}  // namespace corral::sched
