// The Scheduler facade: event handlers that keep the model current, and the pass.
#include "sched/scheduler.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <string>

#include "sched/elastic.h"
#include "sched/node_reservations.h"
#include "sched/start_estimate.h"
#include "sched/state.h"

namespace corral::sched {
namespace {

// Milli-CPUs as a person writes them: "2", "0.5", "1.25".
std::string CpuCount(int64_t milli) {
  std::string text = std::to_string(milli / 1000);
  if (int64_t frac = milli % 1000; frac != 0) {
    std::string digits = std::to_string(1000 + frac).substr(1);
    while (digits.back() == '0') digits.pop_back();
    text += "." + digits;
  }
  return text;
}

}  // namespace

struct Scheduler::Impl {
  explicit Impl(const SchedulerConfig& c) : st(c) {}

  SchedState st;
  std::vector<uint8_t> class_failed;
  Stats last;

  void AddRun(const PendingJob& job, std::vector<ReplicaPlacement> placement, TimeMs started_at);
  void RemoveRun(JobId id);
  // Run `run` no longer holds the replicas it was shrinking for pending job `for_job`: once
  // none of its shrinks is left, the job starts first in the next pass (like its victims).
  void ShrinkDone(JobId run, JobId for_job);
  void Forget(JobId pending_id) { st.victims_of.erase(pending_id); }
  Decisions Pass(TimeMs now);
};

void Scheduler::Impl::AddRun(const PendingJob& job, std::vector<ReplicaPlacement> placement,
                             TimeMs started_at) {
  RunEntry r;
  r.job = job;
  r.placement = std::move(placement);
  r.started_at = started_at;
  r.queue = st.queues.Id(job.queue.empty() ? "default" : job.queue);
  r.user = st.queues.UserId(r.queue, job.user);
  int64_t n = static_cast<int64_t>(r.placement.size());
  for (const ReplicaPlacement& p : r.placement) {
    r.gpus += static_cast<int64_t>(p.gpus.size());
    for (const GpuShare& g : Shares(p)) r.gpu_milli += g.milli;
  }
  r.cpu = n * job.per_replica.cpu_milli;
  r.mem = n * job.per_replica.memory_mb;
  r.expected_end = ExpectedEndOf(job, started_at);
  // A run re-added (a recovering head) keeps the protection it started with.
  r.aged = AgedAt(job, st.pending.AgeBound(r.queue)) <= started_at;
  r.placed_in_pass = 0;
  st.BindRun(r, +1);
  st.IndexRun(r);
  st.running[job.id] = std::move(r);
}

void Scheduler::Impl::RemoveRun(JobId id) {
  auto it = st.running.find(id);
  if (it == st.running.end()) return;
  RunEntry& r = it->second;
  ReleaseHotSpares(st, r);
  st.BindRun(r, -1);
  st.UnindexRun(r);
  if (r.shrink_for != 0) ShrinkDone(id, r.shrink_for);
  if (r.preempted_for != 0) {
    st.AddFreeing(r.queue, -r.gpus);
    st.being_preempted.erase(id);
    auto v = st.victims_of.find(r.preempted_for);
    if (v != st.victims_of.end()) {
      std::erase(v->second, id);
      if (v->second.empty()) {
        st.room_made.insert(r.preempted_for);
        st.victims_of.erase(v);
      }
    }
  }
  st.running.erase(it);
}

void Scheduler::Impl::ShrinkDone(JobId run, JobId for_job) {
  auto v = st.victims_of.find(for_job);
  if (v == st.victims_of.end()) return;
  std::erase(v->second, run);
  if (v->second.empty()) {
    st.room_made.insert(for_job);
    st.victims_of.erase(v);
  }
}

Scheduler::Scheduler(SchedulerConfig config) : impl_(std::make_unique<Impl>(config)) {}
Scheduler::~Scheduler() = default;

void Scheduler::SetSourceRate(const std::string& source, int64_t bytes_per_s) {
  impl_->st.changed_since_pass = true;
  impl_->st.model.SetSourceRate(source, bytes_per_s);
}

void Scheduler::UpsertNode(const NodeInfo& given) {
  impl_->st.changed_since_pass = true;
  ClusterModel& m = impl_->st.model;
  NodeInfo node = given;
  for (const auto& [name, r] : impl_->st.node_reservations) {
    if (std::find(r.nodes.begin(), r.nodes.end(), node.name) != r.nodes.end()) {
      node.labels[ReservationLabel(name)] = "1";
    }
  }
  bool added = m.Find(node.name) < 0;
  int32_t slot = m.Upsert(node);
  if (!added) return;
  // Runs the driver still reports on a node that comes back keep their GPUs.
  auto it = impl_->st.runs_on_node.find(node.name);
  if (it == impl_->st.runs_on_node.end()) return;
  for (JobId id : it->second) {
    const RunEntry& r = impl_->st.running.at(id);
    for (const ReplicaPlacement& p : r.placement) {
      if (p.node == node.name) {
        m.AdjustReplica(slot, p, r.job.per_replica, r.job.user, +1);
      }
    }
  }
}

void Scheduler::RemoveNode(const std::string& name) {
  impl_->st.changed_since_pass = true;
  DropHotSparesOn(impl_->st, name);
  impl_->st.model.Remove(name);
}

void Scheduler::SetReservation(const NodeReservation& reservation) {
  impl_->st.changed_since_pass = true;
  RemoveReservation(reservation.name);
  SchedState& st = impl_->st;
  st.node_reservations[reservation.name] = reservation;
  for (const std::string& node : reservation.nodes) {
    int32_t slot = st.model.Find(node);
    if (slot < 0) continue;
    NodeInfo info = st.model.slot(slot).info;
    info.labels[ReservationLabel(reservation.name)] = "1";
    st.model.Upsert(info);
  }
}

void Scheduler::RemoveReservation(const std::string& name) {
  impl_->st.changed_since_pass = true;
  SchedState& st = impl_->st;
  auto it = st.node_reservations.find(name);
  if (it == st.node_reservations.end()) return;
  for (const std::string& node : it->second.nodes) {
    int32_t slot = st.model.Find(node);
    if (slot < 0) continue;
    NodeInfo info = st.model.slot(slot).info;
    info.labels.erase(ReservationLabel(name));
    st.model.Upsert(info);
  }
  st.node_reservations.erase(it);
}

void Scheduler::SetQueue(const QueueConfig& queue) {
  impl_->st.changed_since_pass = true;
  SchedState& st = impl_->st;
  int32_t q = st.queues.Id(queue.name);
  DurationMs bound = st.queues.MaxWait(q);
  st.queues.Set(queue);
  // Its sub-queues inherit the bound it has now: they change exactly when it does.
  if (st.queues.MaxWait(q) != bound) st.pending.Reage();
}

void Scheduler::AddPending(const PendingJob& job) {
  impl_->st.changed_since_pass = true;
  impl_->st.arrivals.Record(job);
  impl_->st.ended_runs.GivenBack(job.id);
  if (job.reservation.empty()) {
    impl_->st.reservation_jobs.erase(job.id);
    impl_->st.pending.Add(job);
    return;
  }
  // The label keeps it on its reservation's nodes (placement, classes and admission alike).
  PendingJob in = job;
  in.node_labels[ReservationLabel(job.reservation)] = "1";
  impl_->st.reservation_jobs.insert(job.id);
  impl_->st.pending.Add(in);
}

void Scheduler::RemovePending(JobId id) {
  impl_->st.changed_since_pass = true;
  impl_->st.reservation_jobs.erase(id);
  impl_->st.pending.Remove(id);
  impl_->Forget(id);
}

void Scheduler::AddRunning(const RunningJob& run) {
  impl_->st.changed_since_pass = true;
  impl_->st.arrivals.Record(run.job);
  impl_->st.ended_runs.GivenBack(run.job.id);
  impl_->st.pending.Remove(run.job.id);
  impl_->Forget(run.job.id);
  impl_->RemoveRun(run.job.id);
  impl_->AddRun(run.job, run.placement, run.started_at);
  impl_->st.running.at(run.job.id).leaving = run.leaving;
}

void Scheduler::RemoveRunning(JobId id) {
  impl_->st.changed_since_pass = true;
  auto it = impl_->st.running.find(id);
  if (it != impl_->st.running.end()) {
    impl_->st.ended_runs.Removed(it->second.job, it->second.gpus, it->second.started_at);
  }
  impl_->RemoveRun(id);
}

void Scheduler::ResizeRunning(JobId id, std::vector<ReplicaPlacement> placement, int32_t leaving) {
  auto it = impl_->st.running.find(id);
  if (it == impl_->st.running.end()) return;
  impl_->st.changed_since_pass = true;
  const JobId for_job = it->second.shrink_for;
  it->second.shrink_for = 0;
  if (it->second.preempted_for != 0) {  // going whole: its resources free at RemoveRunning
    if (for_job != 0) impl_->ShrinkDone(id, for_job);
    return;
  }
  PendingJob job = it->second.job;
  const TimeMs started_at = it->second.started_at;
  // Its hot spares stay held (bound and charged): a lost replica is replaced on one next pass.
  std::vector<ReplicaPlacement> spares;
  spares.swap(it->second.spares);
  impl_->RemoveRun(id);
  impl_->AddRun(job, std::move(placement), started_at);
  RunEntry& resized = impl_->st.running.at(id);
  resized.leaving = leaving;
  resized.spares = std::move(spares);
  if (for_job != 0) impl_->ShrinkDone(id, for_job);
}

void Scheduler::UpdateAttained(JobId id, DurationMs attained_gpu_ms) {
  impl_->st.pending.SetAttained(id, attained_gpu_ms);
  auto it = impl_->st.running.find(id);
  if (it != impl_->st.running.end()) it->second.job.attained_ms = attained_gpu_ms;
}

void Scheduler::ReportCheckpoint(JobId id, TimeMs at) {
  auto it = impl_->st.running.find(id);
  if (it != impl_->st.running.end()) {
    it->second.job.last_checkpoint_at = std::max(it->second.job.last_checkpoint_at, at);
  }
}

void Scheduler::AddPastUsage(const std::vector<PastUsage>& usages, TimeMs now) {
  QueueBook& book = impl_->st.queues;
  bool added = false;
  for (const PastUsage& u : usages) {
    int32_t q = book.Id(u.queue.empty() ? "default" : u.queue);
    added |= book.AddPast(q, book.UserId(q, u.user), u.gpu_milli, u.cpu_milli, u.memory_mb, u.from,
                          std::min(u.to, now), now);
  }
  if (added) book.AnchorAt(now);  // once: it visits every queue and user
}

Fit Scheduler::Admit(const PendingJob& job, std::string* why) const {
  const SchedState& st = impl_->st;
  Shape s = ShapeOf(job);
  if (job.min_replicas > 0) s.replicas = job.min_replicas;  // an elastic job fits at its minimum
  int64_t fit = 0;
  for (int32_t i = 0; i < st.model.slot_count() && fit < s.replicas; ++i) {
    const NodeSlot& n = st.model.slot(i);
    if (!Matches(n, s)) continue;
    int64_t k = s.replicas;
    if (s.max_per_node > 0) k = std::min<int64_t>(k, s.max_per_node);
    if (s.gpus > 0) k = std::min<int64_t>(k, static_cast<int64_t>(n.info.gpus.size()) / s.gpus);
    if (s.share) {  // shares of the node's GPUs when empty
      int64_t slots = 0;
      for (size_t g = 0; g < n.info.gpus.size(); ++g) {
        int64_t per = s.share_milli > 0 ? kGpuMilli / s.share_milli : kGpuMilli;
        int64_t mem = ShareMemOn(n, g, s);
        if (mem > 0) per = std::min(per, ShareableMemoryMb(n.info.gpus[g].memory_mb) / mem);
        slots += per;
      }
      k = std::min(k, slots);
    }
    if (s.cpu > 0) k = std::min<int64_t>(k, n.info.cpu_milli / s.cpu);
    if (s.mem > 0) k = std::min<int64_t>(k, n.info.memory_mb / s.mem);
    if (k > 0) fit += k;
  }
  if (fit < s.replicas) {
    if (why) {
      std::string gpus =
          s.share ? "a share of one GPU (" + std::to_string(s.share_milli) + " milli-GPUs" +
                        (s.share_mem > 0 ? ", " + std::to_string(s.share_mem) + " MB" : "") + ")"
                  : std::to_string(s.gpus) + " GPU(s)";
      *why = "needs " + std::to_string(s.replicas) + " replica(s) of " + gpus + ", " +
             CpuCount(s.cpu) + " CPUs, " + std::to_string(s.mem) + " MB memory" +
             (job.gpu_model.empty() ? "" : ", GPU model " + job.gpu_model) +
             (job.node_labels.empty() ? "" : ", with the requested node labels") +
             (s.max_per_node > 0 ? ", at most " + std::to_string(s.max_per_node) + " on one node"
                                 : "") +
             "; the cluster's matching nodes hold only " + std::to_string(fit) +
             " such replica(s) when empty";
    }
    return Fit::kInfeasible;
  }
  // Queue limits, of the queue and each ancestor.
  int64_t gpus = TotalGpus(job);
  std::string name = job.queue.empty() ? "default" : job.queue;
  while (!name.empty()) {
    int32_t q = st.queues.FindId(name);
    if (q >= 0) {
      int64_t limit = st.queues.EffectiveLimit(q);
      if (limit >= 0 && gpus > limit) {
        if (why) {
          *why = "needs " + std::to_string(gpus) + " GPU(s) but queue " + job.queue +
                 " may use at most " + std::to_string(limit) + " (its limit or an ancestor's)";
        }
        return Fit::kInfeasible;
      }
      break;  // EffectiveLimit covered the ancestors
    }
    size_t slash = name.rfind('/');
    name = slash == std::string::npos ? "" : name.substr(0, slash);
  }
  return Fit::kWait;
}

Decisions Scheduler::Impl::Pass(TimeMs now) {
  st.ended_runs.Ended(now);
  Decisions d;
  PassResult r = RunPass(st, class_failed, now, &d);
  last.last_pass_work = st.work;
  last.last_pass_attempts = r.attempts;
  last.last_pass_skipped = r.skipped;
  last.last_pass_budget_denied = st.budget_denied;
  last.last_pass_budget_exhausted = r.exhausted;
  st.changed_since_pass = r.exhausted;  // a pass cut short has not seen every job
  return d;
}

Decisions Scheduler::Schedule(TimeMs now) { return impl_->Pass(now); }

std::vector<StartEstimate> Scheduler::EstimateStarts(TimeMs now, const EstimateOptions& options) {
  if (options.method == EstimateMethod::kSweep) return EstimateFromState(impl_->st, now, options);
  std::unique_ptr<Scheduler> fork = Fork();
  return ForwardStarts(impl_->st, *fork, now, options);
}

std::unique_ptr<Scheduler> Scheduler::Fork() const {
  const SchedState& from = impl_->st;
  auto fork = std::make_unique<Scheduler>(from.config);
  SchedState& to = fork->impl_->st;
  // Every member is a value but the pending set, which points into itself and at the queue
  // book: it is rebuilt over the copied book (same queue and user ids), in id order.
  to.model = from.model;
  to.queues = from.queues;
  to.running = from.running;
  to.resizable_running = from.resizable_running;
  to.by_end = from.by_end;
  to.running_by_queue = from.running_by_queue;
  to.runs_on_node = from.runs_on_node;
  to.freeing_gpus = from.freeing_gpus;
  to.being_preempted = from.being_preempted;
  to.victims_of = from.victims_of;
  to.room_made = from.room_made;
  to.pass = from.pass;
  to.changed_since_pass = from.changed_since_pass;
  to.node_reservations = from.node_reservations;
  to.reservation_jobs = from.reservation_jobs;
  to.preemptible_gpus = from.preemptible_gpus;
  to.preemptible_priorities = from.preemptible_priorities;
  to.preemptible_starts = from.preemptible_starts;
  to.placed_preemptible_gpus = from.placed_preemptible_gpus;
  to.budget = from.budget;
  to.now = from.now;
  // victim_order and its indexes hold pointers into `running`: the fork's first search
  // builds its own (victim_order_pass stays 0).
  for (JobId id : from.pending.Ids()) {
    const PendingEntry* e = from.pending.Find(id);
    PendingEntry* copy = to.pending.Add(e->job);
    copy->last_code = e->last_code;
    copy->last_reason = e->last_reason;
  }
  fork->impl_->class_failed = impl_->class_failed;
  fork->impl_->last = impl_->last;
  return fork;
}

Scheduler::Stats Scheduler::GetStats() const {
  Stats s = impl_->last;
  s.pending = static_cast<int64_t>(impl_->st.pending.size());
  s.running = static_cast<int64_t>(impl_->st.running.size());
  s.free_gpus = impl_->st.model.free_gpus();
  s.total_gpus = impl_->st.model.total_gpus();
  return s;
}

int64_t Scheduler::QueueAllocatedGpus(const std::string& queue) const {
  int32_t q = impl_->st.queues.FindId(queue);
  return q < 0 ? 0 : impl_->st.queues.AllocGpus(q);
}

bool Scheduler::IsBeingPreempted(JobId id) const { return impl_->st.being_preempted.count(id) > 0; }

std::vector<ReplicaPlacement> Scheduler::HotSpares(JobId id) const {
  auto it = impl_->st.running.find(id);
  return it == impl_->st.running.end() ? std::vector<ReplicaPlacement>{} : it->second.spares;
}

std::string Scheduler::ModelSummary() const {
  const SchedState& st = impl_->st;
  std::ostringstream out;
  out << "pending";
  for (JobId id : st.pending.Ids()) out << " " << id;
  out << "\nrunning";
  for (const auto& [id, r] : st.running) {
    out << " " << id << "@";
    for (const ReplicaPlacement& p : r.placement) {
      out << p.node << "[";
      for (int32_t g : p.gpus) out << g << ",";
      out << "]";
    }
  }
  // Hot spares are the pass's to hold, not the driver's: a scheduler rebuilt from the same
  // jobs holds them after its first pass, so their GPUs, CPU and memory count as free here.
  struct SpareUse {
    int64_t gpus = 0, cpu = 0, mem = 0;
  };
  std::map<std::string, SpareUse> spare_use;
  for (const auto& [id, r] : st.running) {
    for (const ReplicaPlacement& p : r.spares) {
      SpareUse& u = spare_use[p.node];
      u.gpus += static_cast<int64_t>(p.gpus.size());
      u.cpu += r.job.per_replica.cpu_milli;
      u.mem += r.job.per_replica.memory_mb;
    }
  }
  std::vector<const NodeSlot*> slots;
  for (int32_t i = 0; i < st.model.slot_count(); ++i) {
    if (st.model.slot(i).live) slots.push_back(&st.model.slot(i));
  }
  std::sort(slots.begin(), slots.end(),
            [](const NodeSlot* a, const NodeSlot* b) { return a->info.name < b->info.name; });
  for (const NodeSlot* n : slots) {
    const SpareUse spared = spare_use[n->info.name];
    out << "\nnode " << n->info.name << (n->info.schedulable ? "" : " unschedulable") << " free "
        << n->free_gpus + spared.gpus << "/" << n->healthy_gpus << " gpus "
        << n->free_cpu + spared.cpu << " mcpu " << n->free_mem + spared.mem << " mb";
  }
  return out.str();
}

}  // namespace corral::sched
