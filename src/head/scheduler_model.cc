#include "head/scheduler_model.h"

#include <algorithm>

#include "core/qos.h"
#include "sched/job_input.h"

namespace corral::head {
namespace {

sched::NodeReservation ToSchedulerReservation(const NodeReservationSpec& r) {
  return {r.name, r.nodes, r.start_ms, r.end_ms, r.maintenance, r.users, r.queues};
}

sched::RunningJob ToRunning(const Job& job, sched::PendingJob input) {
  const Run& run = *job.CurrentRun();
  // An elastic run's replicas that left and exited hold nothing.
  return {std::move(input), run.HeldPlacement(), run.started_at ? run.started_at : run.scheduled_at,
          run.Leaving()};
}

// When the live head last queued a job that is not over, i.e. predicted its run time: its
// submission, the end of its last run before the current one (a requeue), or the end of the
// last of its dependencies that has ended (it was admitted then). A job the head queued again
// for another reason (a hold or an array's limit released, its owner's QoS changed) was
// predicted then; that instant is not kept, so it is predicted as of the latest of these.
TimeMs QueuedAt(const Job& job, const ClusterState& s) {
  TimeMs at = job.submitted_at;
  const bool runs_now = job.state == JobState::kScheduled || job.state == JobState::kRunning;
  const size_t before = job.runs.size() - (runs_now && !job.runs.empty() ? 1 : 0);
  if (before > 0) at = std::max(at, job.runs[before - 1].ended_at);
  for (const Dependency& d : job.spec.dependencies) {
    for (JobId t : d.jobs) {
      auto it = s.jobs.find(t);
      if (it != s.jobs.end() && IsTerminal(it->second.state)) {
        at = std::max(at, it->second.ended_at);
      }
    }
  }
  return at;
}

// The changes the model follows, each a step on the scheduler or the estimator.
struct ModelVisitor {
  const ClusterState& s;
  const Change& c;
  const DatasetHolders& holders;
  sched::Scheduler& scheduler;
  sched::RuntimeEstimator& estimator;
  const SchedulerModel& model;

  const Run& RunOf(JobId job, int32_t attempt) const { return s.jobs.at(job).runs[attempt - 1]; }
  bool UpsertNode(const std::string& name) {
    scheduler.UpsertNode(SchedulerNode(s.nodes.at(name), holders));
    return true;
  }

  bool operator()(const ReplicaExited& e) {
    const Run& run = RunOf(e.job, e.attempt);
    // The last replica an elastic run gave up has exited: its GPUs are free for the job they
    // were taken for.
    if (!run.Departed(e.replica) || IsRunOver(run.state) || run.Leaving() != 0) return false;
    scheduler.ResizeRunning(e.job, run.LivePlacement());
    return true;
  }
  bool operator()(const RunEnded& e) {
    const Job& job = s.jobs.at(e.job);
    scheduler.RemoveRunning(e.job);
    if (e.job_state == JobState::kPending) {
      scheduler.AddPending(model.Input(s, job));  // a requeue stays admitted
    } else {
      estimator.Observe(sched::EndedJobOf(job));
    }
    return true;
  }
  bool operator()(const JobEnded& e) {
    estimator.Observe(sched::EndedJobOf(s.jobs.at(e.job)));
    return true;
  }
  bool operator()(const JobResized& e) {
    // A grow was bound by the scheduler, and a shrink's replicas hold their GPUs until they
    // exit; a lost node's replicas hold nothing from now on.
    if (e.cause != ResizeCause::kNodeLost) return true;
    const Run& run = RunOf(e.job, e.attempt);
    scheduler.ResizeRunning(e.job, run.HeldPlacement(), run.Leaving());
    return true;
  }
  bool operator()(const CheckpointReported& e) {
    // Victims that just checkpointed lose least: the scheduler prefers them.
    scheduler.ReportCheckpoint(e.job, c.at);
    return false;
  }
  bool operator()(const NodeRegistered& e) { return UpsertNode(e.node.name); }
  bool operator()(const NodeLivenessSet& e) { return UpsertNode(e.node); }
  bool operator()(const NodeDrainSet& e) { return UpsertNode(e.node); }
  bool operator()(const NodeHealthSet& e) { return UpsertNode(e.node); }
  bool operator()(const GpuDrainSet& e) { return UpsertNode(e.node); }
  bool operator()(const NodeRemoved& e) {
    scheduler.RemoveNode(e.node);
    return true;
  }
  bool operator()(const QueueSet& e) {
    scheduler.SetQueue(e.queue);
    return true;
  }
  bool operator()(const ReservationSet& e) {
    scheduler.SetReservation(ToSchedulerReservation(e.reservation));
    return true;
  }
  bool operator()(const ReservationDeleted& e) {
    scheduler.RemoveReservation(e.name);
    return true;
  }
  bool operator()(const SourceRateMeasured& e) {
    if (auto r = s.datasets.sources().find(e.source); r != s.datasets.sources().end()) {
      scheduler.SetSourceRate(e.source, r->second.BytesPerSecond());
    }
    return true;
  }
  // Submissions, holds and updates reach the scheduler through admission (Queue, Unqueue);
  // the rest does not change what it sees.
  template <typename Other>
  bool operator()(const Other&) {
    return false;
  }
};

}  // namespace

sched::NodeInfo SchedulerNode(const Node& node, const DatasetHolders& holders) {
  sched::NodeInfo info;
  info.name = node.name;
  info.labels = node.labels;
  info.schedulable = node.Schedulable();
  info.cpu_milli = node.cpu_milli;
  info.memory_mb = node.memory_mb;
  info.gpus = node.gpus;
  // A drained GPU takes no new runs; the node's others still do.
  for (Gpu& g : info.gpus) g.healthy = g.healthy && !node.gpu_drains.count(g.index);
  if (auto held = holders.find(node.name); held != holders.end()) {
    info.datasets.assign(held->second.begin(), held->second.end());
  }
  return info;
}

std::vector<sched::PastUsage> RetiredPastUsage(const ClusterState& s) {
  std::vector<sched::PastUsage> out;
  for (const auto& [key, u] : s.retired_usage) {
    // The day's sums as one second of use ending at its last run's end (decay works per
    // GPU-second, so only that end time is approximate).
    sched::PastUsage p;
    p.queue = key.queue;
    p.user = key.user;
    p.gpu_milli = u.gpu_ms / kSecond * kGpuMilli;
    p.cpu_milli = u.cpu_milli_ms / kSecond;
    p.memory_mb = u.memory_mb_ms / kSecond;
    p.to = u.last_end;
    p.from = u.last_end - kSecond;
    out.push_back(std::move(p));
  }
  return out;
}

SchedulerModel::SchedulerModel(sched::SchedulerConfig scheduler, sched::EstimatorConfig estimator,
                               AdjustInput adjust)
    : config_(std::move(scheduler)),
      estimator_config_(std::move(estimator)),
      adjust_(std::move(adjust)),
      scheduler_(std::make_unique<sched::Scheduler>(config_)),
      estimator_(estimator_config_) {}

sched::PendingJob SchedulerModel::Input(const ClusterState& s, const Job& job) const {
  sched::PendingJob p = sched::ToPendingJob(job, &estimator_);
  if (const QosClass* q = QosFor(s.qos, job.owner, job.spec.queue)) p.may_preempt = q->preempt;
  if (adjust_) adjust_(job, &p);
  return p;
}

bool SchedulerModel::Apply(const ClusterState& s, const Change& c, const DatasetHolders& holders) {
  if (std::holds_alternative<JobsRetired>(c.what)) {
    RebuildEstimator(s);  // the history is what memory still holds
    return false;
  }
  return std::visit(ModelVisitor{s, c, holders, *scheduler_, estimator_, *this}, c.what);
}

void SchedulerModel::Rebuild(const ClusterState& s, TimeMs now, const DatasetHolders& holders,
                             const std::function<bool(const Job&)>& admitted) {
  scheduler_ = std::make_unique<sched::Scheduler>(config_);
  // Each job that is not over keeps the prediction it was queued with (as a live head would
  // have): a restart must not reorder the queue by what ended since.
  std::unordered_map<JobId, sched::PendingJob> queued;
  RebuildEstimator(s, &queued);
  for (const auto& [name, q] : s.queues) scheduler_->SetQueue(q);
  for (const auto& [name, r] : s.reservations) {
    scheduler_->SetReservation(ToSchedulerReservation(r));
  }
  for (const auto& [name, node] : s.nodes) scheduler_->UpsertNode(SchedulerNode(node, holders));
  for (const auto& [source, rate] : s.datasets.sources()) {
    scheduler_->SetSourceRate(source, rate.BytesPerSecond());
  }
  for (const auto& [id, job] : s.jobs) {
    if (job.state == JobState::kScheduled || job.state == JobState::kRunning) {
      scheduler_->AddRunning(ToRunning(job, queued.at(id)));
    }
  }
  for (const auto& [id, job] : s.jobs) {
    if (job.state == JobState::kPending && admitted(job)) scheduler_->AddPending(queued.at(id));
  }
  // Fair share remembers what each queue and user ran before this leadership (DESIGN §6.2).
  std::vector<sched::PastUsage> past = RetiredPastUsage(s);
  for (const auto& [id, job] : s.jobs) {
    std::vector<sched::PastUsage> runs = sched::PastUsageOf(job, now);
    past.insert(past.end(), runs.begin(), runs.end());
  }
  scheduler_->AddPastUsage(past, now);
}

void SchedulerModel::RebuildEstimator(const ClusterState& s,
                                      std::unordered_map<JobId, sched::PendingJob>* queued) {
  // Live and after a restart alike: the history of the ended jobs in memory, in end order.
  estimator_ = sched::RuntimeEstimator(estimator_config_);
  std::vector<const Job*> ended;
  std::vector<std::pair<TimeMs, const Job*>> live;
  for (const auto& [id, job] : s.jobs) {
    if (IsTerminal(job.state)) {
      ended.push_back(&job);
    } else if (queued != nullptr) {
      live.emplace_back(QueuedAt(job, s), &job);
    }
  }
  std::stable_sort(ended.begin(), ended.end(),
                   [](const Job* a, const Job* b) { return a->ended_at < b->ended_at; });
  std::stable_sort(live.begin(), live.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  size_t next = 0;
  for (const auto& [at, job] : live) {
    for (; next < ended.size() && ended[next]->ended_at <= at; ++next) {
      estimator_.Observe(sched::EndedJobOf(*ended[next]));
    }
    queued->emplace(job->id, Input(s, *job));
  }
  for (; next < ended.size(); ++next) estimator_.Observe(sched::EndedJobOf(*ended[next]));
}

}  // namespace corral::head
