// The scheduler's model of the cluster (sched::Scheduler: nodes, queues, reservations, running
// runs, admitted pending jobs, fair-share usage) and the run-time predictions it orders by
// (sched::RuntimeEstimator): one component, kept in step with each change (Apply) and rebuilt
// from the state on recovery (Rebuild), as the indexes are (core_indexes.h).
//
// Which pending jobs it holds is admission's decision, not a function of the state: the core
// hands it the jobs admission admits (Queue) and takes back those withdrawn (Unqueue); a
// requeued run's job stays admitted and is queued again here. Everything else follows the
// changes. Owned by HeadCore, on its thread.
#pragma once

#include <utility>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "head/cluster_state.h"
#include "sched/runtime_estimate.h"
#include "sched/scheduler.h"

namespace corral::head {

// Which nodes hold which datasets' digests (NodeWatch's, from the agents' reports): the
// scheduler places runs near their data.
using DatasetHolders = std::map<std::string, std::set<std::string>>;

// The fair-share usage of retired jobs' runs, from their per-day sums.
std::vector<sched::PastUsage> RetiredPastUsage(const ClusterState& s);

// The scheduler's view of a node: its GPUs less the drained ones, and the datasets it holds.
sched::NodeInfo SchedulerNode(const Node& node, const DatasetHolders& holders);

class SchedulerModel {
 public:
  // What the simulator knows of a job and a head cannot, applied to every scheduler input
  // (CoreConfig::adjust_scheduler_input); empty in a head.
  using AdjustInput = std::function<void(const Job&, sched::PendingJob*)>;

  SchedulerModel(sched::SchedulerConfig scheduler, sched::EstimatorConfig estimator,
                 AdjustInput adjust);

  // Follows a change applied to `s`. True when the change may let a pass place more (a run
  // ended, a node or queue changed).
  bool Apply(const ClusterState& s, const Change& c, const DatasetHolders& holders);
  // A model of `s` alone, as a live one that saw every change would hold it. `admitted` is
  // asked, in id order, of each pending job (a requeued one too: admission counts it); a job it
  // admits is queued with the prediction it was last queued with (QueuedAt in
  // scheduler_model.cc), not one from what ended since.
  void Rebuild(const ClusterState& s, TimeMs now, const DatasetHolders& holders,
               const std::function<bool(const Job&)>& admitted);

  // A job's input: its spec and history, its QoS, and the prediction from the ended jobs.
  sched::PendingJob Input(const ClusterState& s, const Job& job) const;
  // Admission admitted a pending job, or withdrew one (a hold, an update, its end).
  void Queue(const ClusterState& s, const Job& job) { scheduler_->AddPending(Input(s, job)); }
  void Unqueue(JobId id) { scheduler_->RemovePending(id); }
  // A node's observations changed (the datasets it holds).
  void UpsertNode(const Node& node, const DatasetHolders& holders) {
    scheduler_->UpsertNode(SchedulerNode(node, holders));
  }

  // The scheduler itself, for what the core asks of it: a pass, a fit, start estimates, and
  // a stale decision's resources given back.
  sched::Scheduler& scheduler() { return *scheduler_; }
  const sched::Scheduler& scheduler() const { return *scheduler_; }
  const sched::RuntimeEstimator& estimator() const { return estimator_; }

 private:
  // The estimator from the ended jobs of `s`, in end order. With `queued`: each live job's
  // input too, predicted from the history as it stood when the job was last queued.
  void RebuildEstimator(const ClusterState& s,
                        std::unordered_map<JobId, sched::PendingJob>* queued = nullptr);

  sched::SchedulerConfig config_;
  sched::EstimatorConfig estimator_config_;
  AdjustInput adjust_;
  std::unique_ptr<sched::Scheduler> scheduler_;
  // Not an index of the state: it learns in end order, and jobs that end in one millisecond
  // are learnt live in the order they ended but rebuilt in id order, so a rebuild need not
  // equal it exactly.
  sched::RuntimeEstimator estimator_;
};

}  // namespace corral::head
