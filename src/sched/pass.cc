// One scheduling pass (DESIGN §6): jobs in order; each starts now, or preempts to start
// soon, or gets a reservation that later jobs may not delay, or waits.
#include <algorithm>
#include <set>
#include <string>

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
  if (!cfg.preemption || !IsPreemptive(cfg.policy) || st.NoVictimYet()) return false;
  if (cfg.policy != OrderPolicy::kCorral) return true;
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
  if (open_lender && cfg.las_within_queue && cfg.las_across_queues &&
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
    if (open && cfg.las_within_queue && st.PreemptibleGpus(q) > 0 && st.QueueBudgetOpen(q)) {
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
  if (cfg.policy != OrderPolicy::kCorral) {
    why = std::string("by ") + OrderPolicyName(cfg.policy) + " for job " + std::to_string(e.job.id);
  } else if (e.aged && cfg.aged_may_displace && r.job.priority == e.job.priority &&
             (r.queue == e.queue ||
              st.queues.AllocGpus(e.queue) + TotalGpus(e.job) > st.queues.Quota(e.queue))) {
    kind = PreemptKind::kAgeBound;
    why = "for job " + std::to_string(e.job.id) + " of queue " + st.queues.Name(e.queue) +
          ", which has waited past its age bound of " +
          std::to_string(st.pending.AgeBound(e.queue) / kMinute) + " minutes";
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

PassResult RunPass(SchedState& st, std::vector<uint8_t>& class_failed, TimeMs now, Decisions* d) {
  PassResult res;
  ++st.pass;
  st.now = now;
  st.work = 0;
  st.budget_denied = 0;
  st.budget.Advance(now);
  st.queues.Advance(now, st.model.total_gpus(), st.model.total_cpu(), st.model.total_mem());
  st.model.ClearHolds();
  class_failed.assign(st.pending.class_count(), 0);
  st.placed_preemptible_gpus.assign(st.placed_preemptible_gpus.size(), 0);
  int64_t failed_live = 0;

  auto report = [&](PendingEntry* e, PendingCode code, std::string text) {
    if (e->last_code == code && e->last_reason == text) return;
    e->last_code = code;
    e->last_reason = text;
    d->waiting.push_back({e->job.id, code, std::move(text)});
  };
  // A failed class is hidden for the rest of the pass: its other members are not visited
  // (they keep the reason they had).
  auto fail_class = [&](int32_t k) {
    if (!class_failed[k]) {
      class_failed[k] = 1;
      if (st.pending.class_members(k) > 0) {
        ++failed_live;
        res.skipped += st.pending.class_members(k) - 1;
      }
      st.pending.HideClass(k);
    }
  };
  Placer placer(st.model, &st.work);
  const SchedulerConfig& cfg = st.config;
  int64_t placements = 0;
  // Binds a placement of pending job e (the scheduler's assumed placement, DESIGN §6).
  auto bind = [&](PendingEntry* e, std::vector<ReplicaPlacement> placement, TimeMs end) {
    const PendingJob& j = e->job;
    Shape s = ShapeOf(j);
    RunEntry r;
    r.job = j;
    r.placement = placement;
    r.started_at = now;
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
    r.placed_in_pass = st.pass;
    st.queues.Charge(r.queue, r.user, r.gpu_milli, r.cpu, r.mem, +1, j.interactive);
    st.CountVictim(r, +1);
    if (j.preemptible) st.PlacedPreemptible(r.queue) += r.gpus;
    st.by_end.insert({r.expected_end, j.id});
    st.RunsOfQueue(r.queue).insert(j.id);
    for (const ReplicaPlacement& p : r.placement) st.runs_on_node[p.node].insert(j.id);
    JobId id = j.id;
    st.running[id] = std::move(r);
    d->place.push_back({id, std::move(placement)});
    ++placements;
    st.victims_of.erase(id);
    st.pending.Remove(id);
  };
  // Jobs of admin reservations try their reservation's nodes (their label) before the
  // reservations' holds are set, and only then; the main order does not see them.
  for (JobId id : std::vector<JobId>(st.reservation_jobs.begin(), st.reservation_jobs.end())) {
    PendingEntry* e = st.pending.Find(id);
    if (!e) {
      st.reservation_jobs.erase(id);
      continue;
    }
    ++st.work;
    TimeMs end = ExpectedEndOf(e->job, now);
    std::string gate = ReservationGate(st, e->job, end);
    std::vector<ReplicaPlacement> placement;
    if (!gate.empty()) {
      report(e, PendingCode::kReservationWait, std::move(gate));
    } else if (int32_t q = st.queues.LimitingQueue(e->queue, TotalGpus(e->job)); q >= 0) {
      report(e, PendingCode::kQueueLimit, "queue " + st.queues.Name(q) + " is at its limit");
    } else if (placer.Place(ShapeOf(e->job), end, /*keep=*/true, &placement)) {
      st.reservation_jobs.erase(id);
      bind(e, std::move(placement), end);
      continue;
    } else {
      report(e, PendingCode::kReservationWait,
             "waiting for free GPUs for " + Describe(e->job) + " on the nodes of reservation " +
                 e->job.reservation);
    }
    st.pending.HideJob(e);
  }
  HoldReservedNodes(st);
  // Jobs whose victims have all ended start first, on the room made for
  // them (after the admin reservations' holds, which they must not overlap): a job earlier
  // in this pass's order could take it otherwise, and the job would preempt again.
  std::set<JobId> ready;
  ready.swap(st.room_made);
  for (JobId id : ready) {
    PendingEntry* e = st.pending.Find(id);
    if (!e || st.victims_of.count(id)) continue;
    ++st.work;
    std::vector<ReplicaPlacement> placement;
    TimeMs end = ExpectedEndOf(e->job, now);
    if (placer.Place(ShapeOf(e->job), end, /*keep=*/true, &placement)) {
      bind(e, std::move(placement), end);
    }
  }
  st.pending.Promote(now);
  PassOrder order(st.pending, st.queues);
  bool strict = cfg.policy == OrderPolicy::kFifo || !cfg.backfill;
  bool may_preempt = cfg.preemption && IsPreemptive(cfg.policy);
  int32_t reservations = 0;
  // A job left waiting for GPUs: elastic runs do not grow into them (elastic.h).
  bool someone_waits = false;
  while (PendingEntry* e = order.Next()) {
    if (st.work > cfg.max_work_per_pass) {
      res.exhausted = true;
      someone_waits = true;
      break;
    }
    if (placements >= cfg.max_placements_per_pass || failed_live >= st.pending.live_classes()) {
      someone_waits = true;
      break;
    }
    // Nothing left to do: no room for any class still to visit (held GPUs only for jobs that
    // end before a reservation starts), every reservation given out, and no blocked job could
    // preempt. Stops a pass over a full cluster early.
    if (reservations >= cfg.reservation_depth) {
      HeldRoom held = RoomInHeld(st.model, now);
      if (!st.pending.AnyVisibleFits(st.model.free_gpus() - st.model.held_gpus(),
                                     MaxUnheldFreeOnANode(st.model), st.model.free_gpus(),
                                     held.node_free, held.max_limit) &&
          !MayPreempt(st)) {
        someone_waits = true;
        break;
      }
    }
    ++st.work;
    ++res.attempts;
    const PendingJob& j = e->job;
    Shape s = ShapeOf(j);
    int64_t gpus = TotalGpus(j);
    if (int32_t q = st.queues.LimitingQueue(e->queue, gpus); q >= 0) {
      report(e, PendingCode::kQueueLimit,
             "queue " + st.queues.Name(q) + " is at its limit (" +
                 std::to_string(st.queues.AllocGpus(q)) + " GPUs in use)");
      fail_class(e->klass);
      order.Done();
      continue;
    }
    // One user's sessions past the queue's cap wait; others' jobs of the same shape need not.
    if (const int64_t milli = int64_t{j.replicas} * std::max(0, j.per_replica.gpu_milli);
        j.interactive && milli > 0 && !st.queues.WithinInteractiveCap(e->queue, e->user, milli)) {
      report(e, PendingCode::kQueueLimit,
             "user " + j.user + "'s interactive sessions hold " +
                 GpuText(st.queues.InteractiveMilli(e->queue, e->user)) + " GPUs in queue " +
                 st.queues.Name(e->queue) + ", its max_interactive_gpus_per_user is " +
                 std::to_string(st.queues.InteractiveCap(e->queue)));
      st.pending.HideJob(e);
      order.Done();
      continue;
    }
    TimeMs end = ExpectedEndOf(j, now);
    std::vector<ReplicaPlacement> placement;
    if (placer.Place(s, end, /*keep=*/true, &placement) ||
        PlaceElasticStart(st, placer, *e, end, &placement)) {
      bind(e, std::move(placement), end);
      order.Done();
      continue;
    }
    // Blocked: elastic runs may not grow in this pass.
    if (!IsWaitingForNothing(st, j)) someone_waits = true;
    auto own = st.victims_of.find(j.id);
    if (own != st.victims_of.end()) {
      Reservation rv;
      if (Reserve(st, *e, &rv)) {
        rv.after_place = static_cast<int32_t>(d->place.size());
        d->reservations.push_back(rv);
      }
      report(e, PendingCode::kPreempting,
             "waiting for " + std::to_string(own->second.size()) +
                 " preempted run(s) to end; then starts on " + NodeList(rv.nodes));
      st.pending.HideJob(e);
      order.Done();
      if (strict) break;
      continue;
    }
    // Replicas above elastic runs' minimums go before any whole run is preempted.
    if (std::vector<ShrinkCut> cuts; may_preempt && FindShrink(st, *e, end, &cuts)) {
      ApplyShrink(st, *e, cuts, d);
      report(
          e, PendingCode::kPreempting,
          "shrinking " + std::to_string(cuts.size()) + " elastic run(s) to start " + Describe(j));
      st.pending.HideJob(e);
      order.Done();
      if (strict) break;
      continue;
    }
    std::vector<JobId> victims;
    if (may_preempt && FindVictims(st, *e, &victims, &placement)) {
      std::vector<NodeDemand> freed;
      for (JobId v : victims) {
        RunEntry& r = st.running.at(v);
        DurationMs lost = st.LostWork(r);
        st.budget.Record(now, r.queue, lost);
        st.CountVictim(r, -1);
        r.preempted_for = j.id;
        st.AddFreeing(r.queue, r.gpus);
        st.being_preempted.insert(v);
        auto [why, kind] = PreemptionReason(st, *e, r, lost, now);
        d->preempt.push_back({v, j.id, std::move(why), kind});
        for (const ReplicaPlacement& p : r.placement) {
          int32_t slot = st.model.Find(p.node);
          if (slot < 0) continue;
          // A share frees no whole GPU (others may stay on it).
          int32_t whole = p.gpu_milli.empty() ? static_cast<int32_t>(p.gpus.size()) : 0;
          freed.push_back({slot, whole, r.job.per_replica.cpu_milli, r.job.per_replica.memory_mb});
        }
      }
      st.victims_of[j.id] = victims;
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
      HoldFor(st, s, placement, merged, now);
      report(e, PendingCode::kPreempting,
             "preempting " + std::to_string(victims.size()) + " run(s) to start " + Describe(j) +
                 " on " + NodeList([&] {
                   std::vector<std::string> n;
                   for (auto& p : placement) n.push_back(p.node);
                   std::sort(n.begin(), n.end());
                   n.erase(std::unique(n.begin(), n.end()), n.end());
                   return n;
                 }()));
      st.pending.HideJob(e);
      order.Done();
      if (strict) break;
      continue;
    }
    Reservation rv;
    if (const NodeReservation* r = BlockingReservation(st, j, end)) {
      // Kept off free nodes by an admin reservation (its run could overlap it): it takes no
      // backfill reservation of its own there.
      report(e, PendingCode::kReservationWait,
             "waiting: " + DescribeReservation(*r) +
                 (end == kUnknownTime ? "; a job without a time limit could overlap it"
                                      : "; its time limit would overlap it"));
    } else if (reservations < cfg.reservation_depth && Reserve(st, *e, &rv)) {
      ++reservations;
      std::string when = rv.start == kUnknownTime ? "when running jobs without a time limit end"
                                                  : "at " + FormatUtc(rv.start);
      report(e, PendingCode::kReserved,
             "waiting for " + Describe(j) + "; reserved to start " + when + " on " +
                 NodeList(rv.nodes) + "; later jobs may not delay it");
      rv.after_place = static_cast<int32_t>(d->place.size());
      d->reservations.push_back(std::move(rv));
    } else if (reservations < cfg.reservation_depth) {
      report(e, PendingCode::kNoFit,
             "waiting: " + Describe(j) + " does not fit the schedulable nodes even when idle");
    } else {
      report(e, PendingCode::kResources, "waiting for free GPUs for " + Describe(j));
    }
    fail_class(e->klass);
    order.Done();
    if (strict) break;
  }
  st.pending.RestoreAll();
  if (!someone_waits && st.victims_of.empty()) GrowElastic(st, d);
  return res;
}

}  // namespace corral::sched
