// The pending jobs, grouped and ordered for the pass, with equivalence classes of identical
// requests (same queue, priority, shape, constraints and time limit): within one pass, once
// one member of a class cannot start, the others are skipped without a placement attempt.
// Owned by the Scheduler.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "sched/fair_share.h"
#include "sched/order_policy.h"
#include "sched/policy.h"
#include "sched/scheduler.h"

namespace corral::sched {

// The pass's order and bookkeeping come first, the job after them, the last reported reason
// (a string, read only when it changes) last.
struct PendingEntry {
  JobKey key;
  int32_t queue = -1;  // QueueBook id
  int32_t user = -1;   // user id inside the queue
  int32_t group = -1;
  int32_t klass = -1;
  // Age bound (CorralConfig::max_wait_ms): when it is due to be aged (kUnknownTime: no
  // bound, or aged already), and whether it is (JobKey::aged set).
  TimeMs aged_at = kUnknownTime;
  bool aged = false;
  // Why it waits, as last reported (only changes are reported).
  PendingCode last_code = PendingCode::kNone;
  PendingJob job;
  std::string last_reason;
};

class PendingSet {
 public:
  // The jobs of one group in one class, in key order.
  struct ClassList {
    std::map<JobKey, PendingEntry*> jobs;
    JobKey head_key;  // the key in Group::heads while in_heads
    bool in_heads = false;
    bool hidden = false;  // pass-local: the class failed in this pass
  };
  struct Group {
    int32_t sel = 0;  // the selection queue: the QueueBook id (kCorral) or 0 (baselines)
    int32_t queue = -1;
    int32_t user = -1;
    std::map<int32_t, ClassList> classes;        // by class id
    std::set<std::pair<JobKey, int32_t>> heads;  // first job of each visible class
  };

  PendingSet(const SchedulerConfig& config, const Policy& policy, QueueBook& queues)
      : config_(config), policy_(policy), queues_(queues) {}

  PendingEntry* Add(const PendingJob& job);  // replaces one with the same id
  void Remove(JobId id);
  PendingEntry* Find(JobId id);
  const PendingEntry* Find(JobId id) const;
  void SetAttained(JobId id, DurationMs attained_gpu_ms);
  // At the start of a pass: jobs past their age bound are aged (JobKey::aged).
  void Promote(TimeMs now);
  // The age bound of a job of queue q: the queue's (QueueBook::MaxWait), else the config's;
  // 0: none (also for the baselines).
  DurationMs AgeBound(int32_t q) const;
  // After a queue's age bound changed: recomputes when each job not aged yet is due.
  void Reage();

  // Pass-local hiding, undone by RestoreAll at the end of the pass: a job that was visited
  // but stays pending, and a class whose members are all skipped for the rest of the pass.
  void HideJob(PendingEntry* e);
  void HideClass(int32_t klass);
  void RestoreAll();

  // The first visible job of a group, or nullptr.
  PendingEntry* Head(int32_t g) {
    Group& group = groups_[g];
    if (group.heads.empty()) return nullptr;
    return group.classes.at(group.heads.begin()->second).jobs.begin()->second;
  }

  size_t size() const { return jobs_.size(); }
  // Every pending job's id, ascending (tests; not for passes).
  std::vector<JobId> Ids() const;
  std::vector<Group>& groups() { return groups_; }
  int32_t class_count() const { return static_cast<int32_t>(class_members_.size()); }
  int32_t live_classes() const { return live_classes_; }
  int64_t class_members(int32_t k) const { return class_members_[k]; }
  bool fair() const { return policy_.ByFairShare(); }
  const SchedulerConfig& config() const { return config_; }
  // Could a job of a visible class (see Visible) fit `free_unheld` GPUs with at most
  // `node_unheld` on one node, or (held GPUs included) `free_all` with at most `node_all` on
  // one node when its time limit is at most `max_limit` (< 0: none may)? The pass stops when
  // none could. Classes are few shapes x limits, so this is cheap.
  bool AnyVisibleFits(int64_t free_unheld, int64_t node_unheld, int64_t free_all, int64_t node_all,
                      DurationMs max_limit) const;
  // The fewest GPUs any pending job asks for; INT64_MAX when none is pending.
  int64_t MinTotalGpus() const {
    return live_totals_.empty() ? INT64_MAX : live_totals_.begin()->first;
  }
  // The highest priority of a visible class; INT32_MIN when none.
  int32_t MaxVisiblePriority() const {
    return visible_priorities_.empty() ? INT32_MIN : visible_priorities_.rbegin()->first;
  }
  // The fewest GPUs a job of a visible class of queue q asks for; INT64_MAX when none. The
  // pass does not visit a job of an invisible class again, so what only such jobs could do
  // (reclaim a quota, preempt) cannot happen any more in the pass.
  int64_t MinVisibleTotalGpusInQueue(int32_t q) const {
    if (q >= static_cast<int32_t>(visible_totals_by_queue_.size()) ||
        visible_totals_by_queue_[q].empty()) {
      return INT64_MAX;
    }
    return visible_totals_by_queue_[q].begin()->first;
  }

 private:
  void Count(const PendingEntry& e, int sign);
  int32_t ClassOf(const PendingEntry& e);
  int32_t GroupOf(int32_t queue, int32_t user);
  void Reseat(int32_t g, int32_t klass);  // makes Group::heads agree with the class list
  void Insert(PendingEntry* e);
  void Erase(PendingEntry* e);

  const SchedulerConfig& config_;
  const Policy& policy_;
  QueueBook& queues_;
  std::unordered_map<JobId, PendingEntry> jobs_;  // looked up only, never iterated
  std::vector<Group> groups_;
  std::map<std::pair<int32_t, int32_t>, int32_t> group_ids_;
  std::map<std::string, int32_t> class_ids_;
  std::vector<int64_t> class_members_;
  std::vector<std::set<int32_t>> class_groups_;  // groups holding members of each class
  int32_t live_classes_ = 0;
  std::vector<int64_t> class_totals_;        // TotalGpus of each class
  std::vector<DurationMs> class_limits_;     // time limit of each class (0: none)
  std::vector<uint8_t> class_hidden_;        // hidden in this pass (HideClass)
  std::vector<int64_t> class_hidden_jobs_;   // members hidden in this pass (HideJob)
  std::vector<int32_t> class_replica_gpus_;  // GPUs of one replica of each class
  // (TotalGpus, time limit, GPUs per replica) -> visible classes (see Visible).
  std::map<std::tuple<int64_t, DurationMs, int32_t>, int64_t> visible_;
  // A class is visible in a pass while it is live, not hidden, and has a member not hidden:
  // only then can the pass still visit one of its jobs. (A class whose only members wait
  // for their victims would otherwise keep the pass's stop tests from ever applying.)
  bool Visible(int32_t klass) const {
    return !class_hidden_[klass] && class_members_[klass] > class_hidden_jobs_[klass];
  }
  // After a change to klass's members or hiding: counts it in or out of the visible sets.
  void Revisit(int32_t klass, bool was_visible);
  void CountVisible(int32_t klass, int sign);
  std::map<int64_t, int64_t> live_totals_;  // TotalGpus -> live classes
  std::vector<int32_t> class_queue_;        // QueueBook id of each class
  std::vector<int32_t> class_priority_;     // priority of each class
  // Visible classes: by priority, and by queue then TotalGpus.
  std::map<int32_t, int64_t> visible_priorities_;
  std::vector<std::map<int64_t, int64_t>> visible_totals_by_queue_;
  std::vector<PendingEntry*> hidden_jobs_;
  std::vector<int32_t> hidden_classes_;
  // Age bound: (aged_at, id) of the jobs not aged yet that have a bound.
  std::set<std::pair<TimeMs, JobId>> aging_;
  void ScheduleAging(PendingEntry& e);
};

}  // namespace corral::sched
