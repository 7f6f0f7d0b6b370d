// The order of one pass over the pending jobs (DESIGN §6.3). For kCorral: priority first,
// then the queue with the least fair share (queues under quota first), then the user with
// the least share inside it, then submit time and id; shares are re-read after every
// placement, so queues and users interleave within a pass. For the baselines: one group in
// static key order. Jobs whose equivalence class already failed in this pass are skipped
// without being returned. Lives for one pass; the pending set must not change under it
// except by removing the job just returned (after Done).
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <tuple>
#include <vector>

#include "sched/fair_share.h"
#include "sched/pending_set.h"

namespace corral::sched {

class PassOrder {
 public:
  // `class_failed` is indexed by class id and may grow (by failures) during the pass.
  // `on_skip` is called for each job skipped by class.
  PassOrder(PendingSet& pending, const QueueBook& queues, const std::vector<uint8_t>& class_failed,
            std::function<void(PendingEntry*)> on_skip);

  // The next job in order, or nullptr when every group is exhausted.
  PendingEntry* Next();
  // Moves past the job Next returned. Call before removing that job from the pending set;
  // `placed` says whether its queue's and user's shares changed.
  void Done(bool placed);

 private:
  using UserKey = std::tuple<int64_t, double, int64_t, JobId, int32_t>;
  using QueueKey = std::tuple<int64_t, int, double, int64_t, JobId, int32_t>;
  struct Cursor {
    std::map<JobKey, PendingEntry*>::iterator it;
    UserKey key;
    bool in_set = false;
  };

  void Skip(int32_t g);
  void InsertUser(int32_t g);
  void EraseUser(int32_t g);
  void InsertQueue(int32_t sel);
  void EraseQueue(int32_t sel);

  PendingSet& pending_;
  const QueueBook& queues_;
  const std::vector<uint8_t>& failed_;
  std::function<void(PendingEntry*)> on_skip_;
  std::vector<Cursor> cursors_;           // by group
  std::vector<std::set<UserKey>> users_;  // by selection queue
  std::vector<QueueKey> queue_keys_;
  std::vector<uint8_t> queue_in_set_;
  std::set<QueueKey> queue_set_;
  int32_t current_ = -1;
};

}  // namespace corral::sched
