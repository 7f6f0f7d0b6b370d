#include "sched/elastic.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "sched/order_policy.h"

namespace corral::sched {
namespace {

// GPUs one replica of j counts (a share counts as one, as TotalGpus does).
int64_t ElasticReplicaGpus(const PendingJob& j) {
  return (std::max(0, j.per_replica.gpu_milli) + kGpuMilli - 1) / kGpuMilli;
}

// May a run of `r` give replicas to `j` by the shrink rule?
bool ElasticShrinkable(const SchedState& st, const RunEntry& r, const PendingJob& j) {
  return r.job.resizable && r.job.id != j.id && r.leaving == 0 && r.preempted_for == 0 &&
         r.placed_in_pass != st.pass && r.job.priority <= j.priority &&
         static_cast<int32_t>(r.placement.size()) > r.job.min_replicas;
}

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
// room for one (whole nodes stay whole), under the run's limit per node; -1: none.
int32_t ElasticPickNode(const SchedState& st, const RunEntry& r, const Shape& one) {
  std::map<std::string, int32_t> mine;
  for (const ReplicaPlacement& p : r.placement) ++mine[p.node];
  int32_t best = -1;
  for (int32_t i = 0; i < st.model.slot_count(); ++i) {
    const NodeSlot& n = st.model.slot(i);
    if (!n.live || !n.info.schedulable || !Matches(n, one)) continue;
    if (r.job.max_replicas_per_node > 0 && mine[n.info.name] >= r.job.max_replicas_per_node) {
      continue;
    }
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
  const PendingJob& j = e.job;
  if (!j.may_preempt) return false;
  // Candidates: the lowest priority first, then the newest run, then the highest id.
  std::vector<std::tuple<int32_t, TimeMs, JobId>> order;
  for (const auto& [id, r] : st.running) {
    ++st.work;
    if (ElasticShrinkable(st, r, j)) order.emplace_back(r.job.priority, -r.started_at, -id);
  }
  if (order.empty()) return false;
  std::sort(order.begin(), order.end());
  const Shape s = ShapeOf(j);
  st.what_if.Reset(&st.model, s, end);
  out->clear();
  bool fits = st.what_if.Fits();
  for (const auto& entry : order) {
    if (fits) break;
    RunEntry& r = st.running.at(static_cast<JobId>(-std::get<2>(entry)));
    const std::vector<int32_t>& slots = st.SlotsOf(r);
    ShrinkCut cut{r.job.id, {}};
    for (int32_t pos = static_cast<int32_t>(r.placement.size()) - 1;
         pos >= r.job.min_replicas && !fits; --pos) {
      st.what_if.Release({r.placement[pos]}, {slots[pos]}, r.job.per_replica, r.job.user, -1);
      cut.positions.push_back(pos);
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

void GrowElastic(SchedState& st, Decisions* d) {
  // The highest priority first, then the oldest run, then the lowest id.
  std::vector<std::tuple<int32_t, TimeMs, JobId>> order;
  for (const auto& [id, r] : st.running) {
    ++st.work;
    if (r.job.resizable && r.leaving == 0 && r.preempted_for == 0 &&
        static_cast<int32_t>(r.placement.size()) < r.job.replicas && !r.job.per_replica.IsShare()) {
      order.emplace_back(-r.job.priority, r.started_at, id);
    }
  }
  std::sort(order.begin(), order.end());
  for (const auto& entry : order) {
    const JobId id = std::get<2>(entry);
    RunEntry& r = st.running.at(id);
    Shape one = ShapeOf(r.job);
    one.replicas = 1;
    const int64_t per = ElasticReplicaGpus(r.job);
    std::vector<ReplicaPlacement> added;
    while (static_cast<int32_t>(r.placement.size()) < r.job.replicas &&
           st.queues.LimitingQueue(r.queue, per) < 0) {
      const int32_t i = ElasticPickNode(st, r, one);
      if (i < 0) break;
      ElasticBindReplica(st, r, i, one, &added);
    }
    if (added.empty()) continue;
    ResizeDecision rd;
    rd.job = id;
    rd.reason = "idle GPUs and no job waiting: grows by " + std::to_string(added.size()) +
                " replica(s) toward its maximum of " + std::to_string(r.job.replicas);
    rd.added = std::move(added);
    d->resize.push_back(std::move(rd));
  }
}

}  // namespace corral::sched
