// The order of one pass over the pending jobs (DESIGN §6.3). For kCorral: priority first,
// then jobs past their age bound (CorralConfig::max_wait_ms) by submit time, then the queue
// with the least fair share (queues under quota first; queues over it by their
// best job's LAS level and predicted remaining bucket first, SchedulerConfig::
// borrowing_queues_by_level), then inside it the
// lowest LAS level (JobKey::level; 0 unless las_within_queue), then the shortest predicted
// remaining run time, then the user with the least share at that level, then submit time and id;
// shares are re-read after every placement, so queues and users interleave within a pass. For the
// baselines: one group in static key order.
//
// Each group (queue, user) exposes only the head of each visible equivalence class
// (PendingSet::Group::heads), so a class that failed in this pass is hidden with all its
// members at once and costs nothing more. Keys of other groups can go stale when a class is
// hidden; they only ever grow, so they are re-validated lazily when they reach the top.
// Lives for one pass. The caller changes the pending set (Remove, HideJob, HideClass) and
// then calls Done.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "sched/fair_share.h"
#include "sched/pending_set.h"

namespace corral::sched {

class PassOrder {
 public:
  PassOrder(PendingSet& pending, const QueueBook& queues);

  // The next job in order, or nullptr when every group is exhausted.
  PendingEntry* Next();
  // After the caller removed or hid the job Next returned (or hid its class): re-reads that
  // group's head and shares.
  void Done();

 private:
  // (priority, aged (JobKey::aged), level (JobKey::order_level), predicted remaining, user
  // share, submit, id, group). An aged job's level, prediction and share are 0: aged jobs go
  // by submit time alone.
  using UserKey = std::tuple<int64_t, int64_t, int64_t, int64_t, double, int64_t, JobId, int32_t>;
  // (priority, aged, quota tier (QueueBook::QuotaTier), borrowing queue's level and prediction
  // bucket (0 within a quota level; CorralConfig::borrowing_queues_by_level), queue share
  // (its top quota level's, QueueBook::FairPath), the deeper levels' ids and shares, level,
  // predicted remaining, submit, id, selection queue); for an aged head, 0 from the tier to
  // predicted remaining.
  using QueueKey = std::tuple<int64_t, int64_t, int, int64_t, int64_t, double, std::vector<double>,
                              int64_t, int64_t, int64_t, JobId, int32_t>;

  std::optional<UserKey> MakeUserKey(int32_t g) const;
  std::optional<QueueKey> MakeQueueKey(int32_t sel) const;
  void RekeyUser(int32_t g);
  void RekeyQueue(int32_t sel);

  PendingSet& pending_;
  const QueueBook& queues_;
  std::vector<std::optional<UserKey>> user_keys_;    // by group: its key in users_
  std::vector<std::set<UserKey>> users_;             // by selection queue
  std::vector<std::optional<QueueKey>> queue_keys_;  // by selection queue
  std::set<QueueKey> queue_set_;
  int32_t current_ = -1;
};

}  // namespace corral::sched
