// One scheduling pass (DESIGN §6): jobs in order; each starts now, or preempts to start
// soon, or gets a reservation that later jobs may not delay, or waits.
#include <algorithm>
#include <set>
#include <string>

#include "core/spec.h"
#include "sched/elastic.h"
#include "sched/node_reservations.h"
#include "sched/pass_order.h"
#include "sched/state.h"

namespace corral::sched {

namespace {

// Milli-GPUs as GPUs: "2", "1.5".
std::string GpuText(int64_t milli) {
  std::string whole = std::to_string(milli / kGpuMilli);
  if (milli % kGpuMilli == 0) return whole;
  std::string frac = std::to_string(1000 + milli % kGpuMilli).substr(1);
  while (frac.back() == '0') frac.pop_back();
  return whole + "." + frac;
}

std::string NodeList(const std::vector<std::string>& nodes) {
  std::string out;
  for (size_t i = 0; i < nodes.size() && i < 4; ++i) out += (i ? "," : "") + nodes[i];
  if (nodes.size() > 4) out += ",... (" + std::to_string(nodes.size()) + " nodes)";
  return out;
}

std::string Describe(const PendingJob& j) {
  Shape s = ShapeOf(j);
  if (s.share) {
    return std::to_string(s.replicas) + " x a share of one GPU (" + std::to_string(s.share_milli) +
           " milli-GPUs" + (s.share_mem > 0 ? ", " + std::to_string(s.share_mem) + " MB" : "") +
           ")";
  }
  return std::to_string(s.replicas) + " x " + std::to_string(s.gpus) + " GPU(s)";
}

// The most free GPUs on one schedulable node, held ones not counted. Held nodes are few (one
// reservation's), so the scan stops soon.
int64_t MaxUnheldFreeOnANode(const ClusterModel& m) {
  int64_t best = 0;
  for (int32_t k = m.max_gpus(); k > best; --k) {
    for (int32_t i : m.bucket(k)) {
      int64_t f = k - m.slot(i).hold_gpus;
      best = std::max(best, f);
      if (f == k) break;
    }
  }
  return best;
}

// Room in held GPUs for jobs that end before the hold starts: the longest time limit that
// ends before some held node's hold starts (< 0: none; a preemption's hold starts now), and
// the most free GPUs on such a node. Per node, not the pass's latest reservation start: a
// node may also be held by an earlier reservation or for a preemption, and a bound from the
// latest start kept full passes visiting every class for room no job could use.
struct HeldRoom {
  DurationMs max_limit = -1;
  int64_t node_free = 0;
};
HeldRoom RoomInHeld(const ClusterModel& m, TimeMs now) {
  HeldRoom room;
  for (int32_t i : m.held_slots()) {
    const NodeSlot& n = m.slot(i);
    if (n.free_gpus <= 0 || n.hold_start == kUnknownTime || n.hold_start <= now) continue;
    room.max_limit = std::max(room.max_limit, n.hold_start - now);
    room.node_free = std::max<int64_t>(room.node_free, n.free_gpus);
  }
  return room;
}

// Could a job the pass may still visit (of a visible class, PendingSet::Visible) preempt? A
// cheap, conservative test: the pass stops when it is false and no such class fits the free
// GPUs. Then nothing more is placed, so the cluster's and the queues' runs do not grow and
// their budgets, which only close within a pass otherwise, stay as they are.
bool MayPreempt(SchedState& st) {
  const SchedulerConfig& cfg = st.config;
  if (!cfg.preemption || !st.policy->Preemptive() || st.NoVictimYet()) return false;
  if (st.policy->displacement() != Displacement::kByClaim) return true;
  // Priority and LAS preemption need the cluster budget; reclaim does not.
  bool open = st.ClusterBudgetOpen();
  if (open && st.pending.MaxVisiblePriority() > st.preemptible_priorities.begin()->first) {
    return true;
  }
  // Reclaim and LAS across queues need a preemptible run in a queue over its quota; LAS
  // across queues also that queue's budget.
  bool lender = false, open_lender = false;
  for (int32_t q = 0; q < st.queues.size() && !open_lender; ++q) {
    bool lends = st.PreemptibleGpus(q) > 0 && st.AnyLevelOver(q);
    lender = lender || lends;
    open_lender = lends && open && st.QueueBudgetOpen(q);
  }
  if (open_lender && cfg.corral.las_within_queue && cfg.corral.las_across_queues &&
      st.pending.MaxVisiblePriority() != INT32_MIN) {
    return true;
  }
  for (int32_t q = 0; q < st.queues.size(); ++q) {
    int64_t smallest = st.pending.MinVisibleTotalGpusInQueue(q);
    if (smallest == INT64_MAX) continue;
    // Reclaim: the queue's smallest job still to visit fits within one of its quota levels.
    if (lender && st.AnyLevelFits(q, smallest)) return true;
    // A run of the queue in a higher LAS level than a job of it; LAS victims spend the
    // queue's own budget.
    if (open && cfg.corral.las_within_queue && st.PreemptibleGpus(q) > 0 && st.QueueBudgetOpen(q)) {
      return true;
    }
  }
  return false;
}

// Would the job stay within the quota of its level where its queue meets the run's
// (QueueBook::QuotaMeet; for flat queues, its own queue)?
bool FitsWhereTheyMeet(const SchedState& st, const PendingEntry& e, const RunEntry& r) {
  const int32_t level = st.queues.QuotaMeet(e.queue, r.queue).taker;
  return st.queues.AllocGpus(level) + TotalGpus(e.job) <= st.queues.Quota(level);
}

// Why run `r` is preempted for the pending job `e`, in words (shown by `corral show`) and as
// the rule that allowed it (the head's metrics count preemptions by it). `lost`: the work the
// run loses.
std::pair<std::string, PreemptKind> PreemptionReason(const SchedState& st, const PendingEntry& e,
                                                     const RunEntry& r, DurationMs lost,
                                                     TimeMs now) {
  const SchedulerConfig& cfg = st.config;
  std::string why;
  PreemptKind kind = PreemptKind::kPolicy;
  if (st.policy->displacement() != Displacement::kByClaim) {
    why = std::string("by ") + st.policy->name() + " for job " + std::to_string(e.job.id);
  } else if (e.aged && cfg.corral.aged_may_displace && r.job.priority == e.job.priority &&
             (r.queue == e.queue ||
              st.queues.AllocGpus(e.queue) + TotalGpus(e.job) > st.queues.Quota(e.queue))) {
    kind = PreemptKind::kAgeBound;
    why = "for job " + std::to_string(e.job.id) + " of queue " + st.queues.Name(e.queue) +
          ", which has waited past its age bound of " +
          std::to_string(st.pending.AgeBound(e.queue) / kMinute) + " minutes";
  } else if (e.job.serving && !r.job.serving && r.job.priority == e.job.priority &&
             (r.queue == e.queue || !FitsWhereTheyMeet(st, e, r))) {
    kind = PreemptKind::kPriority;
    why = "for job " + std::to_string(e.job.id) + ", a service's replica: serving comes before " +
          "training of its priority (" + std::to_string(e.job.priority) + ")";
  } else if (r.queue == e.queue && r.job.priority == e.job.priority) {
    kind = PreemptKind::kLas;
    DurationMs attained = AttainedNow(r.job, r.gpus, r.started_at, now);
    why = "for job " + std::to_string(e.job.id) + " of queue " + st.queues.Name(e.queue) +
          ", which has attained less service (LAS level " + std::to_string(e.key.level) +
          "; this run has " + std::to_string(attained / kHour) + " GPU-hours, level " +
          std::to_string(LasLevel(cfg, r.job, attained)) + ")";
  } else if (r.job.priority == e.job.priority && !FitsWhereTheyMeet(st, e, r)) {
    // Not a reclaim (the job's quota level would go over its quota): LAS across queues.
    kind = PreemptKind::kLasAcrossQueues;
    DurationMs attained = AttainedNow(r.job, r.gpus, r.started_at, now);
    why = "for job " + std::to_string(e.job.id) + " of queue " + st.queues.Name(e.queue) +
          ", which has attained less service (LAS level " + std::to_string(e.key.level) +
          "); queue " + st.queues.Name(r.queue) + " was over its quota of " +
          std::to_string(st.queues.Quota(r.queue)) + " GPUs and this run has " +
          std::to_string(attained / kHour) + " GPU-hours, level " +
          std::to_string(LasLevel(cfg, r.job, attained));
  } else if (r.queue == e.queue || r.job.priority < e.job.priority) {
    kind = PreemptKind::kPriority;
    why = "for job " + std::to_string(e.job.id) + " of priority " + std::to_string(e.job.priority) +
          " (this run has priority " + std::to_string(r.job.priority) + ")";
  } else {
    // The levels where the two queues meet: the queues themselves unless they share a
    // parent with a quota.
    QueueBook::Meet m = st.queues.QuotaMeet(e.queue, r.queue);
    kind = PreemptKind::kQuota;
    why = "queue " + st.queues.Name(m.taker) + " reclaims its quota of " +
          std::to_string(st.queues.Quota(m.taker)) + " GPUs for job " + std::to_string(e.job.id) +
          "; queue " + st.queues.Name(m.holder) + " was over its quota";
  }
  why += "; loses " + std::to_string(lost / kMinute) + " GPU-minutes of work since " +
         (r.job.last_checkpoint_at > r.started_at ? "its last checkpoint" : "it started");
  return {std::move(why), kind};
}

}  // namespace

// A blocked job that no free GPU would help: one that does not fit the cluster even when idle,
// or is kept off by an admin reservation. Elastic runs may grow past it.
static bool IsWaitingForNothing(const SchedState& st, const PendingJob& j) {
  const int64_t least =
      j.min_replicas > 0 ? TotalGpus(j) / std::max(1, j.replicas) * j.min_replicas : TotalGpus(j);
  return !j.reservation.empty() || st.model.total_gpus() < least;
}

namespace {

// Preempts `victims` for pending job `e` to place it at `placement`: the runs are marked, their
// budgets charged, the decisions recorded, and the free part of the placement held for it.
void PreemptFor(SchedState& st, const PendingEntry& e, const std::vector<JobId>& victims,
                const std::vector<ReplicaPlacement>& placement, TimeMs now, Decisions* d) {
  std::vector<NodeDemand> freed;
  for (JobId v : victims) {
    RunEntry& r = st.running.at(v);
    DurationMs lost = st.LostWork(r);
    st.budget.Record(now, r.queue, lost);
    st.CountVictim(r, -1);
    r.preempted_for = e.job.id;
    st.AddFreeing(r.queue, r.gpus);
    st.being_preempted.insert(v);
    auto [why, kind] = PreemptionReason(st, e, r, lost, now);
    d->preempt.push_back({v, e.job.id, std::move(why), kind});
    for (const ReplicaPlacement& p : r.placement) {
      int32_t slot = st.model.Find(p.node);
      if (slot < 0) continue;
      // A share frees no whole GPU (others may stay on it).
      int32_t whole = p.gpu_milli.empty() ? static_cast<int32_t>(p.gpus.size()) : 0;
      freed.push_back({slot, whole, r.job.per_replica.cpu_milli, r.job.per_replica.memory_mb});
    }
  }
  st.victims_of[e.job.id] = victims;
  // Merge per node and hold the free part of the placement for this job.
  std::sort(freed.begin(), freed.end(), [](auto& a, auto& b) { return a.slot < b.slot; });
  std::vector<NodeDemand> merged;
  for (const NodeDemand& f : freed) {
    if (!merged.empty() && merged.back().slot == f.slot) {
      merged.back().gpus += f.gpus;
      merged.back().cpu += f.cpu;
      merged.back().mem += f.mem;
    } else {
      merged.push_back(f);
    }
  }
  HoldFor(st, ShapeOf(e.job), placement, merged, now);
}

std::vector<std::string> DistinctNodes(const std::vector<ReplicaPlacement>& placement) {
  std::vector<std::string> n;
  for (const ReplicaPlacement& p : placement) n.push_back(p.node);
  std::sort(n.begin(), n.end());
  n.erase(std::unique(n.begin(), n.end()), n.end());
  return n;
}

// One pass, as named steps: admin reservations' jobs, jobs whose room was made, then the order
// (each job placed, or gated, or blocked: its own victims, a shrink, a preemption, a
// reservation or a reason), then elastic growth.
class PassRun {
 public:
  PassRun(SchedState& st, std::vector<uint8_t>& class_failed, TimeMs now, Decisions* d)
      : st_(st),
        cfg_(st.config),
        class_failed_(class_failed),
        now_(now),
        d_(d),
        placer_(st.model, &st.work) {}

  PassResult Run() {
    Begin();
    // A replica lost since the last pass is replaced on a hot spare first; the other spares
    // are given up, so that the jobs below may take them.
    ReplaceFromHotSpares(st_, d_);
    PlaceReservationJobs();
    HoldReservedNodes(st_);
    PlaceMadeRoom();
    VisitOrder();
    st_.pending.RestoreAll();
    if (!someone_waits_ && st_.victims_of.empty()) {
      GrowElastic(st_, d_);
      RefillHotSpares(st_);
    }
    return res_;
  }

 private:
  void Begin() {
    ++st_.pass;
    st_.now = now_;
    st_.work = 0;
    st_.budget_denied = 0;
    st_.budget.Advance(now_);
    st_.queues.Advance(now_, st_.model.total_gpus(), st_.model.total_cpu(), st_.model.total_mem());
    st_.model.ClearHolds();
    class_failed_.assign(st_.pending.class_count(), 0);
    st_.placed_preemptible_gpus.assign(st_.placed_preemptible_gpus.size(), 0);
  }

  void Report(PendingEntry* e, PendingCode code, std::string text) {
    if (e->last_code == code && e->last_reason == text) return;
    e->last_code = code;
    e->last_reason = text;
    d_->waiting.push_back({e->job.id, code, std::move(text)});
  }

  // A failed class is hidden for the rest of the pass: its other members are not visited
  // (they keep the reason they had).
  void FailClass(int32_t k) {
    if (class_failed_[k]) return;
    class_failed_[k] = 1;
    if (st_.pending.class_members(k) > 0) {
      ++failed_live_;
      res_.skipped += st_.pending.class_members(k) - 1;
    }
    st_.pending.HideClass(k);
  }

  // Binds a placement of pending job e (the scheduler's assumed placement, DESIGN §6).
  void Bind(PendingEntry* e, std::vector<ReplicaPlacement> placement, TimeMs end) {
    const PendingJob& j = e->job;
    Shape s = ShapeOf(j);
    RunEntry r;
    r.job = j;
    r.placement = placement;
    r.started_at = now_;
    r.queue = e->queue;
    r.user = e->user;
    // An elastic job may start below its maximum: count what was placed.
    const int64_t n = static_cast<int64_t>(placement.size());
    r.gpus = TotalGpus(j) / std::max(1, s.replicas) * n;
    r.gpu_milli = n * std::max(0, j.per_replica.gpu_milli);
    r.cpu = n * j.per_replica.cpu_milli;
    r.mem = n * j.per_replica.memory_mb;
    r.expected_end = end;
    r.aged = e->aged;
    r.placed_in_pass = st_.pass;
    st_.IndexRun(r);
    if (j.preemptible) st_.PlacedPreemptible(r.queue) += r.gpus;
    JobId id = j.id;
    st_.running[id] = std::move(r);
    d_->place.push_back({id, std::move(placement)});
    ++placements_;
    st_.victims_of.erase(id);
    st_.pending.Remove(id);
  }

  // Jobs of admin reservations try their reservation's nodes (their label) before the
  // reservations' holds are set, and only then; the main order does not see them.
  void PlaceReservationJobs() {
    for (JobId id : std::vector<JobId>(st_.reservation_jobs.begin(), st_.reservation_jobs.end())) {
      PendingEntry* e = st_.pending.Find(id);
      if (!e) {
        st_.reservation_jobs.erase(id);
        continue;
      }
      ++st_.work;
      TimeMs end = ExpectedEndOf(e->job, now_);
      std::string gate = ReservationGate(st_, e->job, end);
      std::vector<ReplicaPlacement> placement;
      if (!gate.empty()) {
        Report(e, PendingCode::kReservationWait, std::move(gate));
      } else if (int32_t q = st_.queues.LimitingQueue(e->queue, TotalGpus(e->job)); q >= 0) {
        Report(e, PendingCode::kQueueLimit, "queue " + st_.queues.Name(q) + " is at its limit");
      } else if (placer_.Place(ShapeOf(e->job), end, /*keep=*/true, &placement)) {
        st_.reservation_jobs.erase(id);
        Bind(e, std::move(placement), end);
        continue;
      } else {
        Report(e, PendingCode::kReservationWait,
               "waiting for free GPUs for " + Describe(e->job) + " on the nodes of reservation " +
                   e->job.reservation);
      }
      st_.pending.HideJob(e);
    }
  }

  // Jobs whose victims have all ended start first, on the room made for them (after the admin
  // reservations' holds, which they must not overlap): a job earlier in this pass's order
  // could take it otherwise, and the job would preempt again.
  void PlaceMadeRoom() {
    std::set<JobId> ready;
    ready.swap(st_.room_made);
    for (JobId id : ready) {
      PendingEntry* e = st_.pending.Find(id);
      if (!e || st_.victims_of.count(id)) continue;
      ++st_.work;
      std::vector<ReplicaPlacement> placement;
      TimeMs end = ExpectedEndOf(e->job, now_);
      if (placer_.Place(ShapeOf(e->job), end, /*keep=*/true, &placement)) {
        Bind(e, std::move(placement), end);
      }
    }
  }

  void VisitOrder() {
    st_.pending.Promote(now_);
    PassOrder order(st_.pending, st_.queues);
    const bool strict = st_.policy->Strict() || !cfg_.backfill;
    while (PendingEntry* e = order.Next()) {
      if (ShouldStop()) {
        someone_waits_ = true;
        break;
      }
      ++st_.work;
      ++res_.attempts;
      const bool blocked = Visit(e);
      order.Done();
      // A strict order (fifo, or no backfill) lets no job pass a blocked one.
      if (blocked && strict) break;
    }
  }

  // Whether the pass ends before the next job: its work budget or placements spent, every
  // class failed, or nothing left to do (no room for any class still to visit, held GPUs only
  // for jobs that end before a reservation starts, every reservation given out, and no blocked
  // job could preempt: stops a pass over a full cluster early).
  bool ShouldStop() {
    if (st_.work > cfg_.max_work_per_pass) {
      res_.exhausted = true;
      return true;
    }
    if (placements_ >= cfg_.max_placements_per_pass || failed_live_ >= st_.pending.live_classes()) {
      return true;
    }
    if (reservations_ < cfg_.reservation_depth) return false;
    HeldRoom held = RoomInHeld(st_.model, now_);
    return !st_.pending.AnyVisibleFits(st_.model.free_gpus() - st_.model.held_gpus(),
                                       MaxUnheldFreeOnANode(st_.model), st_.model.free_gpus(),
                                       held.node_free, held.max_limit) &&
           !MayPreempt(st_);
  }

  // One job in order: gated by its queue, placed, or blocked. Whether it was blocked (a gated
  // or placed job lets the pass go on whatever the policy).
  bool Visit(PendingEntry* e) {
    if (Gated(e)) return false;
    const PendingJob& j = e->job;
    TimeMs end = ExpectedEndOf(j, now_);
    if (WaitsForItsData(e, end)) {
      someone_waits_ = true;
      st_.pending.HideJob(e);
      return true;
    }
    std::vector<ReplicaPlacement> placement;
    if (placer_.Place(ShapeOf(j), end, /*keep=*/true, &placement) ||
        PlaceElasticStart(st_, placer_, *e, end, &placement)) {
      Bind(e, std::move(placement), end);
      return false;
    }
    // Blocked: elastic runs may not grow in this pass.
    if (!IsWaitingForNothing(st_, j)) someone_waits_ = true;
    if (WaitsForOwnVictims(e) || Shrinks(e, end) || Preempts(e)) {
      st_.pending.HideJob(e);
      return true;
    }
    ReserveOrWait(e, end);
    FailClass(e->klass);
    return true;
  }

  // A job that fits now only on nodes lacking some of its data, whose fetch there would take
  // longer than waiting for nodes that hold all of it: it reserves those (placed where the
  // data is lacking it would start after the fetch; there, when their runs end).
  bool WaitsForItsData(PendingEntry* e, TimeMs end) {
    const PendingJob& j = e->job;
    if (j.datasets.empty() || reservations_ >= cfg_.reservation_depth) return false;
    Shape s = ShapeOf(j);
    if (s.dataset_bytes == nullptr) return false;
    std::vector<ReplicaPlacement> trial;
    if (!placer_.Place(s, end, /*keep=*/false, &trial)) return false;
    DurationMs fetch = 0;
    for (const std::string& node : DistinctNodes(trial)) {
      fetch = std::max(fetch, st_.model.FetchMs(st_.model.Find(node), s));
    }
    if (fetch <= 0) return false;
    s.data_only = true;
    TimeMs start = kUnknownTime;
    ++st_.work;
    if (!EarliestStart(st_, *e, s, &start) || start == kUnknownTime || start - now_ >= fetch) {
      return false;
    }
    Reservation rv;
    if (!Reserve(st_, *e, &rv, &s)) return false;
    ++reservations_;
    Report(e, PendingCode::kReserved,
           "waiting for " + Describe(j) + " on " + NodeList(rv.nodes) +
               ", which hold its data; reserved to start at " + FormatUtc(rv.start) +
               " (fetching its data elsewhere would take " + FormatDuration(fetch) +
               "); later jobs may not delay it");
    rv.after_place = static_cast<int32_t>(d_->place.size());
    d_->reservations.push_back(std::move(rv));
    return true;
  }

  // A job its queue's limits keep waiting: the queue at its limit (the job's class fails), or
  // the user's interactive sessions past the queue's cap (this job only: others' jobs of the
  // same shape need not wait).
  bool Gated(PendingEntry* e) {
    const PendingJob& j = e->job;
    if (int32_t q = st_.queues.LimitingQueue(e->queue, TotalGpus(j)); q >= 0) {
      Report(e, PendingCode::kQueueLimit,
             "queue " + st_.queues.Name(q) + " is at its limit (" +
                 std::to_string(st_.queues.AllocGpus(q)) + " GPUs in use)");
      FailClass(e->klass);
      return true;
    }
    if (const int64_t milli = int64_t{j.replicas} * std::max(0, j.per_replica.gpu_milli);
        j.interactive && milli > 0 && !st_.queues.WithinInteractiveCap(e->queue, e->user, milli)) {
      Report(e, PendingCode::kQueueLimit,
             "user " + j.user + "'s interactive sessions hold " +
                 GpuText(st_.queues.InteractiveMilli(e->queue, e->user)) + " GPUs in queue " +
                 st_.queues.Name(e->queue) + ", its max_interactive_gpus_per_user is " +
                 std::to_string(st_.queues.InteractiveCap(e->queue)));
      st_.pending.HideJob(e);
      return true;
    }
    return false;
  }

  // A job whose earlier preemption is under way keeps waiting for its victims.
  bool WaitsForOwnVictims(PendingEntry* e) {
    auto own = st_.victims_of.find(e->job.id);
    if (own == st_.victims_of.end()) return false;
    Reservation rv;
    if (Reserve(st_, *e, &rv)) {
      rv.after_place = static_cast<int32_t>(d_->place.size());
      d_->reservations.push_back(rv);
    }
    Report(e, PendingCode::kPreempting,
           "waiting for " + std::to_string(own->second.size()) +
               " preempted run(s) to end; then starts on " + NodeList(rv.nodes));
    return true;
  }

  // Replicas above elastic runs' minimums go before any whole run is preempted.
  bool Shrinks(PendingEntry* e, TimeMs end) {
    std::vector<ShrinkCut> cuts;
    if (!MayPreemptHere() || !FindShrink(st_, *e, end, &cuts)) return false;
    ApplyShrink(st_, *e, cuts, d_);
    Report(e, PendingCode::kPreempting,
           "shrinking " + std::to_string(cuts.size()) + " elastic run(s) to start " +
               Describe(e->job));
    return true;
  }

  bool Preempts(PendingEntry* e) {
    std::vector<JobId> victims;
    std::vector<ReplicaPlacement> placement;
    if (!MayPreemptHere() || !FindVictims(st_, *e, &victims, &placement)) return false;
    PreemptFor(st_, *e, victims, placement, now_, d_);
    Report(e, PendingCode::kPreempting,
           "preempting " + std::to_string(victims.size()) + " run(s) to start " + Describe(e->job) +
               " on " + NodeList(DistinctNodes(placement)));
    return true;
  }

  bool MayPreemptHere() const { return cfg_.preemption && st_.policy->Preemptive(); }

  // A blocked job that cannot preempt: kept off by an admin reservation, given one of the
  // pass's reservations (later jobs may not delay it), or told why it waits.
  void ReserveOrWait(PendingEntry* e, TimeMs end) {
    const PendingJob& j = e->job;
    Reservation rv;
    if (const NodeReservation* r = BlockingReservation(st_, j, end)) {
      // Kept off free nodes by an admin reservation (its run could overlap it): it takes no
      // backfill reservation of its own there.
      Report(e, PendingCode::kReservationWait,
             "waiting: " + DescribeReservation(*r) +
                 (end == kUnknownTime ? "; a job without a time limit could overlap it"
                                      : "; its time limit would overlap it"));
    } else if (reservations_ < cfg_.reservation_depth && Reserve(st_, *e, &rv)) {
      ++reservations_;
      std::string when = rv.start == kUnknownTime ? "when running jobs without a time limit end"
                                                  : "at " + FormatUtc(rv.start);
      Report(e, PendingCode::kReserved,
             "waiting for " + Describe(j) + "; reserved to start " + when + " on " +
                 NodeList(rv.nodes) + "; later jobs may not delay it");
      rv.after_place = static_cast<int32_t>(d_->place.size());
      d_->reservations.push_back(std::move(rv));
    } else if (reservations_ < cfg_.reservation_depth) {
      Report(e, PendingCode::kNoFit,
             "waiting: " + Describe(j) + " does not fit the schedulable nodes even when idle");
    } else {
      Report(e, PendingCode::kResources, "waiting for free GPUs for " + Describe(j));
    }
  }

  SchedState& st_;
  const SchedulerConfig& cfg_;
  std::vector<uint8_t>& class_failed_;
  const TimeMs now_;
  Decisions* d_;
  Placer placer_;
  PassResult res_;
  int64_t failed_live_ = 0;
  int64_t placements_ = 0;
  int32_t reservations_ = 0;
  // A job left waiting for GPUs: elastic runs do not grow into them (elastic.h).
  bool someone_waits_ = false;
};

}  // namespace

PassResult RunPass(SchedState& st, std::vector<uint8_t>& class_failed, TimeMs now, Decisions* d) {
  return PassRun(st, class_failed, now, d).Run();
}

}  // namespace corral::sched
