// The Scheduler's whole state, shared by the pieces of a pass (scheduler.cc, preemption.cc,
// reservation.cc). Owned by Scheduler::Impl; one thread.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sched/arrival_history.h"
#include "sched/cluster_model.h"
#include "sched/fair_share.h"
#include "sched/order_policy.h"
#include "sched/pending_set.h"
#include "sched/placement.h"
#include "sched/policy.h"
#include "sched/preempt_budget.h"
#include "sched/run_history.h"
#include "sched/scheduler.h"
#include "sched/what_if.h"

namespace corral::sched {

// The fields a victim search and the victim order read come first, the job (its numbers
// first, PendingJob) after them, its placement last.
struct RunEntry {
  TimeMs started_at = 0;
  int32_t queue = -1;
  int32_t user = -1;
  int64_t gpus = 0;       // totals over replicas (a share counts one GPU)
  int64_t gpu_milli = 0;  // milli-GPUs: what quotas and fair share charge
  int64_t cpu = 0;
  int64_t mem = 0;
  TimeMs expected_end = kUnknownTime;  // started_at + time limit
  JobId preempted_for = 0;             // non-zero while being preempted
  // An elastic run shrinking (elastic.h): the job its leaving replicas make room for, and how
  // many of its placement's replicas are leaving (still bound until ResizeRunning).
  JobId shrink_for = 0;
  int32_t leaving = 0;
  uint64_t placed_in_pass = 0;  // the pass that placed it (never a victim in it)
  // It started past its age bound (CorralConfig::max_wait_ms): not a LAS victim.
  bool aged = false;
  // Its place in SchedState::victim_order when that was built in pass victim_rank_pass: the
  // next build starts from the last order, which mostly still holds.
  mutable int32_t victim_rank = -1;
  mutable uint64_t victim_rank_pass = 0;
  // Model slot of each replica's node (-1: unknown), valid while the model's layout_version
  // is slots_version; see SchedState::SlotsOf.
  mutable std::vector<int32_t> slots;
  mutable uint64_t slots_version = 0;
  PendingJob job;
  std::vector<ReplicaPlacement> placement;
  // Its hot spares (PendingJob::hot_spares, elastic.h): one replica's resources each, on nodes
  // without its replicas, bound in the model and charged to its queue between passes.
  std::vector<ReplicaPlacement> spares;
};

struct SchedState {
  explicit SchedState(const SchedulerConfig& c)
      : config(c),
        policy(MakePolicy(config)),
        queues(c.fair_share_half_life_ms),
        pending(config, *policy, queues) {}

  SchedulerConfig config;
  // The order of pending work and who may displace whom (policy.h), built from `config`.
  std::unique_ptr<const Policy> policy;
  ClusterModel model;
  QueueBook queues;
  PendingSet pending;
  std::map<JobId, RunEntry> running;
  // The running jobs that may change size (PendingJob::resizable): the only ones the elastic
  // steps (growth, shrinks, hot spares) look at, so that a pass over thousands of rigid runs
  // does not walk them for every blocked job.
  std::set<JobId> resizable_running;
  std::set<std::pair<TimeMs, JobId>> by_end;      // running, by expected end
  std::vector<std::set<JobId>> running_by_queue;  // by queue id
  std::map<std::string, std::set<JobId>> runs_on_node;
  std::vector<int64_t> freeing_gpus;               // by queue: see Freeing
  std::set<JobId> being_preempted;                 // running, with a Preempt decision out
  std::map<JobId, std::vector<JobId>> victims_of;  // pending job -> its victims still running
  std::set<JobId> room_made;  // pending jobs whose victims have all ended since the last pass
  uint64_t pass = 0;
  // Something that may let a pending job start (a job, a run, a node, a queue, a reservation)
  // changed since the last whole pass: until the next, the pending jobs are not all ones a
  // pass left waiting (start_estimate.h: the sweep lets none of those start at once).
  bool changed_since_pass = true;
  // The jobs submitted lately, what the forward estimate expects more of (arrival_history.h).
  // Read by estimates only: no decision depends on it. Not copied by Fork.
  ArrivalHistory arrivals;
  // The run times of the jobs that ended lately, what the estimates count on for when a run
  // ends (run_history.h). Read by estimates only; not copied by Fork.
  RunHistory ended_runs;
  // Admin reservations by name (node_reservations.h), and the pending jobs submitted into one.
  std::map<std::string, NodeReservation> node_reservations;
  std::set<JobId> reservation_jobs;
  // Preemptible runs not being preempted: GPUs by queue, and how many runs per priority.
  // Cheap upper bounds that let a blocked job skip the victim search.
  std::vector<int64_t> preemptible_gpus;
  std::map<int32_t, int64_t> preemptible_priorities;
  // The same for the runs that are not a service's replicas (training): what a blocked
  // replica may outrank (PendingJob::serving).
  std::map<int32_t, int64_t> preemptible_training_priorities;
  std::multiset<TimeMs> preemptible_starts;      // started_at of the same runs
  std::vector<int64_t> placed_preemptible_gpus;  // by queue, placed in this pass
  PreemptBudget budget;                          // kCorral: preemptions of the last minute and hour
  int64_t budget_denied = 0;                     // this pass: victim searches the budgets cut short

  // Per pass.
  TimeMs now = 0;
  int64_t work = 0;
  WhatIf what_if;  // scratch of victim searches and reservation scans
  // Built by the first victim search of a pass (preemption.cc): the runs that may be victims
  // in this pass, in the order victims are tried (least lost work first). A run's lost work
  // and baseline key do not change during a pass, and one spared stays spared.
  struct VictimEntry {
    RunEntry* run;
    int64_t key_a;    // policy->Key(...).a of the run now (Displacement::kByKey)
    DurationMs lost;  // GPU-ms since it started
  };
  std::vector<VictimEntry> victim_order;
  // By queue: positions in victim_order of that queue's runs, ascending. A kCorral search
  // scans only the queues it may take victims from (most blocked jobs: their own), not every
  // run.
  std::vector<std::vector<int32_t>> victim_order_by_queue;
  // By (queue, priority): positions in victim_order of those runs, ascending, and the most
  // GPU-ms one of them has attained. A search that may take only LAS victims from another
  // queue needs runs of its own priority that have attained enough (kCorral).
  struct VictimsOfPriority {
    std::vector<int32_t> positions;
    DurationMs max_attained = 0;
  };
  std::map<std::pair<int32_t, int32_t>, VictimsOfPriority> victim_order_by_queue_priority;
  int64_t victim_max_key_a = 0;    // over victim_order
  uint64_t victim_order_pass = 0;  // the pass they were built in
  // kSrtf, kLas, this pass: shapes whose victim search failed with every run of a key above
  // key_a released. Within a pass resources are only bound, never freed, and runs only
  // become spared, so a job of such a shape (or a larger one) with a key >= key_a fails too,
  // if it ends no sooner (admin reservations keep a later end off more nodes).
  struct FailedSearch {
    int32_t replicas, gpus, cpu;
    int64_t mem;
    bool share;
    int32_t share_milli;
    int64_t share_mem;
    GpuIsolation isolation;
    std::string gpu_model;
    std::map<std::string, std::string> node_labels;
    int64_t key_a;
    TimeMs end;
  };
  std::vector<FailedSearch> failed_searches;

  std::set<JobId>& RunsOfQueue(int32_t q) {
    if (static_cast<int32_t>(running_by_queue.size()) <= q) running_by_queue.resize(q + 1);
    return running_by_queue[q];
  }
  // GPUs of runs being preempted in the queue's subtree (as AllocGpus counts its subtree).
  int64_t Freeing(int32_t q) const {
    return q < static_cast<int32_t>(freeing_gpus.size()) ? freeing_gpus[q] : 0;
  }
  void AddFreeing(int32_t q, int64_t gpus) {
    for (int32_t a = q; a >= 0; a = queues.Parent(a)) {
      if (static_cast<int32_t>(freeing_gpus.size()) <= a) freeing_gpus.resize(a + 1, 0);
      freeing_gpus[a] += gpus;
    }
  }
  // Is the queue over its quota, counting neither runs being preempted nor `taken` more GPUs?
  bool OverQuota(int32_t q, int64_t taken = 0) const {
    return queues.AllocGpus(q) - Freeing(q) - taken > queues.Quota(q);
  }
  // Is any of the queue's quota levels (QueueBook::QuotaLevels) over its quota: could a run of
  // it be borrowed from some job's point of view?
  bool AnyLevelOver(int32_t q) const {
    if (OverQuota(q)) return true;
    for (int32_t a = queues.Parent(q); a >= 0; a = queues.Parent(a)) {
      if (queues.Quota(a) > 0 && OverQuota(a)) return true;
    }
    return false;
  }
  // Would `gpus` more stay within the quota of any of the queue's quota levels?
  bool AnyLevelFits(int32_t q, int64_t gpus) const {
    if (queues.AllocGpus(q) + gpus <= queues.Quota(q)) return true;
    for (int32_t a = queues.Parent(q); a >= 0; a = queues.Parent(a)) {
      if (queues.Quota(a) > 0 && queues.AllocGpus(a) + gpus <= queues.Quota(a)) return true;
    }
    return false;
  }
  int64_t& PreemptibleGpus(int32_t q) {
    if (static_cast<int32_t>(preemptible_gpus.size()) <= q) preemptible_gpus.resize(q + 1, 0);
    return preemptible_gpus[q];
  }
  int64_t& PlacedPreemptible(int32_t q) {
    if (static_cast<int32_t>(placed_preemptible_gpus.size()) <= q) {
      placed_preemptible_gpus.resize(q + 1, 0);
    }
    return placed_preemptible_gpus[q];
  }
  // Counts (+1) or uncounts (-1) a run as a possible victim.
  void CountVictim(const RunEntry& r, int sign) {
    if (!r.job.preemptible || r.preempted_for != 0) return;
    PreemptibleGpus(r.queue) += sign * r.gpus;
    int64_t& n = preemptible_priorities[r.job.priority];
    n += sign;
    if (n == 0) preemptible_priorities.erase(r.job.priority);
    if (!r.job.serving) {
      int64_t& t = preemptible_training_priorities[r.job.priority];
      t += sign;
      if (t == 0) preemptible_training_priorities.erase(r.job.priority);
    }
    if (sign > 0) {
      preemptible_starts.insert(r.started_at);
    } else {
      preemptible_starts.erase(preemptible_starts.find(r.started_at));
    }
  }
  // No preemptible run has reached the minimum runtime yet: nothing can be a victim now.
  bool NoVictimYet() const {
    return preemptible_starts.empty() ||
           *preemptible_starts.begin() > now - config.min_runtime_before_preempt_ms;
  }
  // kCorral budgets (preempt_budget.h): may this pass still preempt for priority or LAS, and
  // may it take victims from queue q?
  bool ClusterBudgetOpen() const {
    return budget.ClusterAllows(config.corral.cluster_budget, static_cast<int64_t>(running.size()),
                                model.total_gpus());
  }
  bool ClusterBudgetTakes(int64_t runs) const {
    return budget.ClusterTakes(config.corral.cluster_budget, static_cast<int64_t>(running.size()),
                               runs);
  }
  bool QueueBudgetOpen(int32_t q) const {
    int64_t runs = q < static_cast<int32_t>(running_by_queue.size())
                       ? static_cast<int64_t>(running_by_queue[q].size())
                       : 0;
    return budget.QueueAllows(config.corral.queue_budget, q, runs,
                              std::max<int64_t>(queues.Quota(q), queues.AllocGpus(q)));
  }
  // The work a preemption of `r` now loses: GPU-ms since its last checkpoint, or its start.
  DurationMs LostWork(const RunEntry& r) const {
    TimeMs since = std::max(r.started_at, r.job.last_checkpoint_at);
    return r.gpus * std::max<DurationMs>(0, now - since);
  }
  // When a run is expected to end: now if it is being preempted, else its time limit.
  TimeMs ExpectedEnd(const RunEntry& r) const {
    if (r.preempted_for != 0) return now;
    return r.expected_end == kUnknownTime ? kUnknownTime : std::max(now, r.expected_end);
  }
  // Binds (+1) or frees (-1) a run's resources in the model only (not in the queue book).
  // Charges a run to its queue, counts it as a possible victim and enters it in the indexes
  // of running work (by end, by queue, by node, resizable). The one step for a run the head
  // reports (Scheduler::AddRun) and a run a pass places (Bind), so that an index cannot be
  // kept for one of them only; UnindexRun undoes it.
  void IndexRun(const RunEntry& r) {
    queues.Charge(r.queue, r.user, r.gpu_milli, r.cpu, r.mem, +1, r.job.interactive);
    CountVictim(r, +1);
    by_end.insert({r.expected_end, r.job.id});
    RunsOfQueue(r.queue).insert(r.job.id);
    for (const ReplicaPlacement& p : r.placement) runs_on_node[p.node].insert(r.job.id);
    if (r.job.resizable) resizable_running.insert(r.job.id);
  }
  void UnindexRun(const RunEntry& r) {
    CountVictim(r, -1);
    queues.Charge(r.queue, r.user, r.gpu_milli, r.cpu, r.mem, -1, r.job.interactive);
    by_end.erase({r.expected_end, r.job.id});
    RunsOfQueue(r.queue).erase(r.job.id);
    for (const ReplicaPlacement& p : r.placement) {
      auto n = runs_on_node.find(p.node);
      if (n == runs_on_node.end()) continue;
      n->second.erase(r.job.id);
      if (n->second.empty()) runs_on_node.erase(n);
    }
    resizable_running.erase(r.job.id);
  }
  void BindRun(const RunEntry& r, int sign) {
    const std::vector<int32_t>& slots = SlotsOf(r);
    for (size_t k = 0; k < r.placement.size(); ++k) {
      if (slots[k] >= 0)
        model.AdjustReplica(slots[k], r.placement[k], r.job.per_replica, r.job.user, sign);
    }
  }
  // The model slots of a run's replicas, by position in its placement (-1: unknown node).
  const std::vector<int32_t>& SlotsOf(const RunEntry& r) const {
    if (r.slots_version != model.layout_version()) {
      r.slots.clear();
      for (const ReplicaPlacement& p : r.placement) r.slots.push_back(model.Find(p.node));
      r.slots_version = model.layout_version();
    }
    return r.slots;
  }
};

// Per-node demand of a placement: (slot, gpus, cpu, mem), slots ascending.
struct NodeDemand {
  int32_t slot;
  int32_t gpus;
  int32_t cpu;
  int64_t mem;
};
std::vector<NodeDemand> DemandOf(const ClusterModel& model, const Shape& s,
                                 const std::vector<ReplicaPlacement>& placement);

// Preemption (preemption.cc): finds the victims that let `job` be placed now, losing the
// least work. On success the victims are returned (their resources stay bound) with the
// placement the job will get once they are gone.
bool FindVictims(SchedState& st, const PendingEntry& job, std::vector<JobId>* victims,
                 std::vector<ReplicaPlacement>* placement);

// Reservation (reservation.cc): the earliest time and nodes at which `job` fits, scanning
// running jobs by expected end. On success holds the reserved resources in the model for
// the rest of the pass.
// `shape`: the job's shape narrowed (Shape::data_only); null: ShapeOf(job.job).
bool Reserve(SchedState& st, const PendingEntry& job, Reservation* out,
             const Shape* shape = nullptr);
// When `job` of shape `s` would start by the same scan, holding nothing (kUnknownTime: behind
// runs without a time limit). False: it never fits.
bool EarliestStart(SchedState& st, const PendingEntry& job, const Shape& s, TimeMs* start);
// Holds the resources of `placement` that are free now (the rest comes from runs ending by
// `start`), so that jobs ending after `start` cannot take them.
void HoldFor(SchedState& st, const Shape& s, const std::vector<ReplicaPlacement>& placement,
             const std::vector<NodeDemand>& released, TimeMs hold_start);

// One pass (pass.cc).
struct PassResult {
  int64_t attempts = 0;
  int64_t skipped = 0;
  bool exhausted = false;
};
PassResult RunPass(SchedState& st, std::vector<uint8_t>& class_failed, TimeMs now, Decisions* d);

}  // namespace corral::sched
