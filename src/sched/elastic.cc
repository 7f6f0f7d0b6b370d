#include "sched/elastic.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "sched/order_policy.h"
#include "sched/policy.h"

namespace corral::sched {
namespace {

// GPUs one replica of j counts (a share counts as one, as TotalGpus does).
int64_t ElasticReplicaGpus(const PendingJob& j) {
  return (std::max(0, j.per_replica.gpu_milli) + kGpuMilli - 1) / kGpuMilli;
}

// kCorral: does j's queue reclaim its quota from the level `taker` (QueueBook::QuotaMeet):
// the job, with the jobs of that subtree already waiting for their victims, stays within it.
bool ElasticReclaims(const SchedState& st, int32_t taker, const PendingJob& j) {
  int64_t incoming = 0;
  for (const auto& [id, victims] : st.victims_of) {
    (void)victims;
    if (const PendingEntry* w = st.pending.Find(id); w && st.queues.Within(w->queue, taker)) {
      incoming += TotalGpus(w->job);
    }
  }
  return st.queues.AllocGpus(taker) + incoming + TotalGpus(j) <= st.queues.Quota(taker);
}

// May a run of `r` give replicas to `j` by the shrink rule? Sets *holder to the quota level
// whose borrowed GPUs alone may be taken (-1: any replica above the minimum).
bool ElasticShrinkable(const SchedState& st, const RunEntry& r, const PendingEntry& e,
                       int32_t* holder) {
  const PendingJob& j = e.job;
  *holder = -1;
  if (!r.job.resizable || r.job.id == j.id || r.leaving != 0 || r.preempted_for != 0 ||
      r.placed_in_pass == st.pass ||
      static_cast<int32_t>(r.placement.size()) <= r.job.min_replicas) {
    return false;
  }
  // Any replica above the minimum, to a job at the run's priority or above.
  if (j.may_preempt && r.job.priority <= j.priority) return true;
  if (st.policy->displacement() != Displacement::kByClaim || r.queue == e.queue) return false;
  // Another queue's run, to a job of any priority that reclaims its quota: only what the
  // run's level borrows beyond its own quota.
  const QueueBook::Meet m = st.queues.QuotaMeet(e.queue, r.queue);
  *holder = m.holder;
  return ElasticReclaims(st, m.taker, j);
}

// By quota level: GPUs no longer borrowed from its subtree, counting the replicas of elastic
// runs already leaving it (still charged until they exit) and those cut by this search.
class ElasticTaken {
 public:
  explicit ElasticTaken(const SchedState& st) : st_(st) {}
  // Does the level still hold more than its quota?
  bool StillBorrows(int32_t level) { return st_.OverQuota(level, Of(level)); }
  void Add(int32_t level, int64_t gpus) { Of(level) += gpus; }

 private:
  int64_t& Of(int32_t level) {
    auto [it, fresh] = taken_.try_emplace(level, 0);
    if (fresh) {
      for (JobId id : st_.resizable_running) {  // only elastic runs have replicas leaving
        const RunEntry& r = st_.running.at(id);
        if (r.leaving > 0 && st_.queues.Within(r.queue, level)) {
          it->second += int64_t{r.leaving} * ElasticReplicaGpus(r.job);
        }
      }
    }
    return it->second;
  }
  const SchedState& st_;
  std::map<int32_t, int64_t> taken_;
};

// Binds one more replica of run r on node slot i, as a Place would.
void ElasticBindReplica(SchedState& st, RunEntry& r, int32_t i, const Shape& s,
                        std::vector<ReplicaPlacement>* added) {
  ReplicaPlacement p{st.model.slot(i).info.name, st.model.PickGpus(i, s.gpus)};
  st.model.AdjustReplica(i, p, r.job.per_replica, r.job.user, +1);
  st.CountVictim(r, -1);
  st.queues.Charge(r.queue, r.user, r.gpu_milli, r.cpu, r.mem, -1, r.job.interactive);
  r.gpus += static_cast<int64_t>(p.gpus.size());
  r.gpu_milli += int64_t{std::max(0, r.job.per_replica.gpu_milli)};
  r.cpu += r.job.per_replica.cpu_milli;
  r.mem += r.job.per_replica.memory_mb;
  st.queues.Charge(r.queue, r.user, r.gpu_milli, r.cpu, r.mem, +1, r.job.interactive);
  st.CountVictim(r, +1);
  st.runs_on_node[p.node].insert(r.job.id);
  r.placement.push_back(p);
  r.slots_version = 0;  // SlotsOf recomputes
  added->push_back(std::move(p));
}

// The node a new replica of r goes to: the matching node with the fewest free GPUs that has
// room for one (whole nodes stay whole), under the run's limit per node; -1: none. A hot
// spare goes to a node with none of the run's replicas or spares: one lost node must not take
// a replica and the spare that replaces it.
int32_t ElasticPickNode(const SchedState& st, const RunEntry& r, const Shape& one, bool spare) {
  std::map<std::string, int32_t> mine;
  for (const ReplicaPlacement& p : r.placement) ++mine[p.node];
  for (const ReplicaPlacement& p : r.spares) ++mine[p.node];
  const int32_t per_node = spare ? 1 : r.job.max_replicas_per_node;
  int32_t best = -1;
  for (int32_t i = 0; i < st.model.slot_count(); ++i) {
    const NodeSlot& n = st.model.slot(i);
    if (!n.live || !n.info.schedulable || !Matches(n, one)) continue;
    if (per_node > 0 && mine[n.info.name] >= per_node) continue;
    if (st.model.Capacity(i, one, r.expected_end, 1) < 1) continue;
    if (best < 0 || n.free_gpus < st.model.slot(best).free_gpus) best = i;
  }
  return best;
}

}  // namespace

bool PlaceElasticStart(SchedState& st, Placer& placer, const PendingEntry& e, TimeMs end,
                       std::vector<ReplicaPlacement>* out) {
  const PendingJob& j = e.job;
  if (j.min_replicas <= 0 || j.min_replicas >= j.replicas) return false;
  Shape s = ShapeOf(j);
  const int64_t per = ElasticReplicaGpus(j);
  for (int32_t k = j.replicas - 1; k >= j.min_replicas; --k) {
    if (st.queues.LimitingQueue(e.queue, per * k) >= 0) continue;
    s.replicas = k;
    out->clear();
    if (placer.Place(s, end, /*keep=*/true, out)) return true;
  }
  out->clear();
  return false;
}

bool FindShrink(SchedState& st, const PendingEntry& e, TimeMs end, std::vector<ShrinkCut>* out) {
  // Candidates: the lowest priority first, then the newest run, then the highest id.
  std::vector<std::tuple<int32_t, TimeMs, JobId, int32_t>> order;
  ElasticTaken taken(st);
  for (JobId id : st.resizable_running) {
    const RunEntry& r = st.running.at(id);
    ++st.work;
    int32_t holder = -1;
    if (ElasticShrinkable(st, r, e, &holder) && (holder < 0 || taken.StillBorrows(holder))) {
      order.emplace_back(r.job.priority, -r.started_at, -id, holder);
    }
  }
  if (order.empty()) return false;
  std::sort(order.begin(), order.end());
  const Shape s = ShapeOf(e.job);
  st.what_if.Reset(&st.model, s, end);
  out->clear();
  bool fits = st.what_if.Fits();
  for (const auto& [priority, neg_start, neg_id, holder] : order) {
    if (fits) break;
    RunEntry& r = st.running.at(static_cast<JobId>(-neg_id));
    const std::vector<int32_t>& slots = st.SlotsOf(r);
    const int64_t per = ElasticReplicaGpus(r.job);
    ShrinkCut cut{r.job.id, {}};
    for (int32_t pos = static_cast<int32_t>(r.placement.size()) - 1;
         pos >= r.job.min_replicas && !fits; --pos) {
      if (holder >= 0 && !taken.StillBorrows(holder)) break;
      st.what_if.Release({r.placement[pos]}, {slots[pos]}, r.job.per_replica, r.job.user, -1);
      cut.positions.push_back(pos);
      if (holder >= 0) taken.Add(holder, per);
      fits = st.what_if.Fits();
    }
    if (!cut.positions.empty()) out->push_back(std::move(cut));
  }
  st.what_if.Restore();
  if (!fits) out->clear();
  return fits;
}

void ApplyShrink(SchedState& st, const PendingEntry& e, const std::vector<ShrinkCut>& cuts,
                 Decisions* d) {
  std::vector<JobId>& waits = st.victims_of[e.job.id];
  for (const ShrinkCut& cut : cuts) {
    RunEntry& r = st.running.at(cut.run);
    ResizeDecision rd;
    rd.job = cut.run;
    rd.for_job = e.job.id;
    for (int32_t pos : cut.positions) rd.removed.push_back(r.placement[pos]);
    const int32_t left = static_cast<int32_t>(r.placement.size() - cut.positions.size());
    rd.reason = "gives " + std::to_string(cut.positions.size()) + " replica(s) to job " +
                std::to_string(e.job.id) + " (priority " + std::to_string(e.job.priority) +
                "); keeps " + std::to_string(left) + ", its minimum is " +
                std::to_string(r.job.min_replicas);
    r.shrink_for = e.job.id;
    r.leaving = static_cast<int32_t>(cut.positions.size());
    waits.push_back(cut.run);
    d->resize.push_back(std::move(rd));
  }
}

namespace {

// How one more replica of a queue's run would be held (the pass order's tiers,
// QueueBook::QuotaTier): 0 within the queue's own quota, 1 within an ancestor's (its
// subtree's idle share), 2 borrowed from the cluster. Flat queues are 0 or 2.
int ElasticGrowthTier(const SchedState& st, int32_t q, int64_t gpus) {
  if (st.queues.AllocGpus(q) + gpus <= st.queues.Quota(q)) return 0;
  for (int32_t a = st.queues.Parent(q); a >= 0; a = st.queues.Parent(a)) {
    if (st.queues.Quota(a) > 0 && st.queues.AllocGpus(a) + gpus <= st.queues.Quota(a)) return 1;
  }
  return 2;
}

// Which run grows next: the highest priority, then (kCorral) the lowest growth tier, then the
// queue's fair share (QueueBook::FairPath, which moves with every replica bound), then the
// oldest run, then the lowest id.
struct ElasticGrowKey {
  int32_t neg_priority = 0;
  int tier = 0;
  double share = 0;
  std::vector<double> deeper;
  TimeMs started_at = 0;
  JobId id = 0;
  bool operator<(const ElasticGrowKey& o) const {
    return std::tie(neg_priority, tier, share, deeper, started_at, id) <
           std::tie(o.neg_priority, o.tier, o.share, o.deeper, o.started_at, o.id);
  }
};

ElasticGrowKey ElasticGrowKeyOf(const SchedState& st, const RunEntry& r) {
  ElasticGrowKey k;
  k.neg_priority = -r.job.priority;
  k.started_at = r.started_at;
  k.id = r.job.id;
  if (st.policy->ByFairShare()) {
    k.tier = ElasticGrowthTier(st, r.queue, ElasticReplicaGpus(r.job));
    k.share = st.queues.FairPath(r.queue, &k.deeper);
  }
  return k;
}

// The candidate that grows next, and its key. REQUIRES: candidates not empty.
size_t ElasticNextToGrow(SchedState& st, const std::vector<JobId>& candidates,
                         ElasticGrowKey* key) {
  size_t best = 0;
  *key = ElasticGrowKeyOf(st, st.running.at(candidates[0]));
  for (size_t c = 1; c < candidates.size(); ++c) {
    ++st.work;
    ElasticGrowKey k = ElasticGrowKeyOf(st, st.running.at(candidates[c]));
    if (k < *key) {
      best = c;
      *key = std::move(k);
    }
  }
  return best;
}

bool ElasticMayGrow(const RunEntry& r) {
  return r.job.resizable && r.leaving == 0 && r.preempted_for == 0 &&
         static_cast<int32_t>(r.placement.size()) < r.job.replicas && !r.job.per_replica.IsShare();
}

// Binds one more replica of r if its queue's limit and a node allow; false: it cannot grow.
bool ElasticGrowOne(SchedState& st, RunEntry& r, std::vector<ReplicaPlacement>* added) {
  if (st.queues.LimitingQueue(r.queue, ElasticReplicaGpus(r.job)) >= 0) return false;
  Shape one = ShapeOf(r.job);
  one.replicas = 1;
  const int32_t i = ElasticPickNode(st, r, one, /*spare=*/false);
  if (i < 0) return false;
  ElasticBindReplica(st, r, i, one, added);
  return true;
}

std::string ElasticGrowReason(const SchedState& st, const RunEntry& r, size_t added, int tier) {
  std::string why = "idle GPUs and no job waiting: grows by " + std::to_string(added) +
                    " replica(s) toward its maximum of " + std::to_string(r.job.replicas);
  if (tier == 2 && st.policy->ByFairShare()) {
    why += "; beyond queue " + st.queues.Name(r.queue) +
           "'s quota: a job of a queue under its quota takes them back first";
  }
  return why;
}

}  // namespace

void GrowElastic(SchedState& st, Decisions* d) {
  std::vector<JobId> candidates;
  for (JobId id : st.resizable_running) {
    ++st.work;
    if (ElasticMayGrow(st.running.at(id))) candidates.push_back(id);
  }
  // One replica at a time to the run that comes first now (the key moves as replicas bind).
  std::map<JobId, std::vector<ReplicaPlacement>> added;
  std::map<JobId, int> worst_tier;
  std::vector<JobId> grown;  // in the order of their first replica
  while (!candidates.empty()) {
    ElasticGrowKey best_key;
    const size_t best = ElasticNextToGrow(st, candidates, &best_key);
    RunEntry& r = st.running.at(candidates[best]);
    std::vector<ReplicaPlacement>& mine = added[r.job.id];
    if (!ElasticGrowOne(st, r, &mine)) {
      candidates.erase(candidates.begin() + static_cast<std::ptrdiff_t>(best));
      continue;
    }
    if (mine.size() == 1) grown.push_back(r.job.id);
    worst_tier[r.job.id] = std::max(worst_tier[r.job.id], best_key.tier);
    if (!ElasticMayGrow(r)) {
      candidates.erase(candidates.begin() + static_cast<std::ptrdiff_t>(best));
    }
  }
  for (JobId id : grown) {
    ResizeDecision rd;
    rd.job = id;
    rd.reason = ElasticGrowReason(st, st.running.at(id), added[id].size(), worst_tier[id]);
    rd.added = std::move(added[id]);
    d->resize.push_back(std::move(rd));
  }
}

namespace {

// Charges (+1) or uncharges (-1) one spare of r to its queue: held for it, like a replica.
void ChargeHotSpare(SchedState& st, const RunEntry& r, int sign) {
  const Resources& per = r.job.per_replica;
  st.queues.Charge(r.queue, r.user, std::max(0, per.gpu_milli), per.cpu_milli, per.memory_mb, sign,
                   r.job.interactive);
}

// Unbinds spare p of r (its node's slot, if it still has one) and uncharges it.
void UnbindHotSpare(SchedState& st, const RunEntry& r, const ReplicaPlacement& p) {
  if (const int32_t i = st.model.Find(p.node); i >= 0) {
    st.model.AdjustReplica(i, p, r.job.per_replica, r.job.user, -1);
  }
  ChargeHotSpare(st, r, -1);
}

bool HotSpareNodeUsable(const SchedState& st, int32_t i) {
  return i >= 0 && st.model.slot(i).live && st.model.slot(i).info.schedulable;
}

std::string HotSpareReason(const RunEntry& r, const std::vector<ReplicaPlacement>& added) {
  std::string nodes;
  for (const ReplicaPlacement& p : added) nodes += (nodes.empty() ? "" : ",") + p.node;
  return "replaces " + std::to_string(added.size()) + " lost replica(s) on its hot spare(s) on " +
         nodes + " toward its maximum of " + std::to_string(r.job.replicas) +
         "; spares are held again when GPUs are idle";
}

bool ElasticWantsSpare(const RunEntry& r) {
  return r.job.resizable && r.leaving == 0 && r.preempted_for == 0 &&
         static_cast<int32_t>(r.spares.size()) < r.job.hot_spares &&
         static_cast<int32_t>(r.placement.size()) >= r.job.replicas && !r.job.per_replica.IsShare();
}

// Holds one more spare for r if its queue's limit and a node allow; false: it cannot.
bool HoldOneHotSpare(SchedState& st, RunEntry& r) {
  if (st.queues.LimitingQueue(r.queue, ElasticReplicaGpus(r.job)) >= 0) return false;
  Shape one = ShapeOf(r.job);
  one.replicas = 1;
  const int32_t i = ElasticPickNode(st, r, one, /*spare=*/true);
  if (i < 0) return false;
  ReplicaPlacement p{st.model.slot(i).info.name, st.model.PickGpus(i, one.gpus)};
  st.model.AdjustReplica(i, p, r.job.per_replica, r.job.user, +1);
  ChargeHotSpare(st, r, +1);
  r.spares.push_back(std::move(p));
  return true;
}

}  // namespace

void ReplaceFromHotSpares(SchedState& st, Decisions* d) {
  for (JobId id : st.resizable_running) {
    RunEntry& r = st.running.at(id);
    if (r.spares.empty()) continue;
    ++st.work;
    std::vector<ReplicaPlacement> spares;
    spares.swap(r.spares);
    std::vector<ReplicaPlacement> added;
    Shape one = ShapeOf(r.job);
    one.replicas = 1;
    for (const ReplicaPlacement& p : spares) {
      UnbindHotSpare(st, r, p);
      const int32_t i = st.model.Find(p.node);
      // A lost replica: the run is below its maximum; its spare's node must still be usable.
      if (ElasticMayGrow(r) && HotSpareNodeUsable(st, i) &&
          st.model.Capacity(i, one, r.expected_end, 1) >= 1) {
        ElasticBindReplica(st, r, i, one, &added);
      }
    }
    if (added.empty()) continue;
    ResizeDecision rd;
    rd.job = id;
    rd.reason = HotSpareReason(r, added);
    rd.added = std::move(added);
    d->resize.push_back(std::move(rd));
  }
}

void RefillHotSpares(SchedState& st) {
  std::vector<JobId> candidates;
  for (JobId id : st.resizable_running) {
    ++st.work;
    const RunEntry& r = st.running.at(id);
    if (r.job.hot_spares > 0 && ElasticWantsSpare(r)) candidates.push_back(id);
  }
  // One spare at a time to the run that comes first in the growth order now.
  while (!candidates.empty()) {
    ElasticGrowKey key;
    const size_t best = ElasticNextToGrow(st, candidates, &key);
    RunEntry& r = st.running.at(candidates[best]);
    if (!HoldOneHotSpare(st, r) || !ElasticWantsSpare(r)) {
      candidates.erase(candidates.begin() + static_cast<std::ptrdiff_t>(best));
    }
  }
}

void ReleaseHotSpares(SchedState& st, RunEntry& r) {
  for (const ReplicaPlacement& p : r.spares) UnbindHotSpare(st, r, p);
  r.spares.clear();
}

void DropHotSparesOn(SchedState& st, const std::string& node) {
  for (JobId id : st.resizable_running) {
    RunEntry& r = st.running.at(id);
    for (size_t k = 0; k < r.spares.size();) {
      if (r.spares[k].node != node) {
        ++k;
        continue;
      }
      ChargeHotSpare(st, r, -1);  // its slot goes with the node: nothing to unbind
      r.spares.erase(r.spares.begin() + static_cast<std::ptrdiff_t>(k));
    }
  }
}

}  // namespace corral::sched
