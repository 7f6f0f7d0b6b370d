// Victim selection (DESIGN §6.7). A blocked job may displace preemptible runs that
// (kCorral) are lower priority in its own queue, or belong to a queue over its quota when
// the job is higher priority or its queue reclaims its quota (the job fits within the
// quota); or (kSrtf, kLas) have a strictly worse key. Runs that ran less than
// min_runtime_before_preempt_ms, were placed in this pass or are already being preempted are
// spared. Candidates are released from the least lost work (GPU-ms since started_at) up
// until the job fits; then every released run that the found placement does not need is
// given back, the most lost work first. The placement is simulated on the model, so a
// victim is only named when the job then fits.
#include <algorithm>

#include "sched/state.h"

namespace corral::sched {

namespace {

bool Spared(const SchedState& st, const RunEntry& r) {
  return !r.job.preemptible || r.preempted_for != 0 || r.placed_in_pass == st.pass ||
         st.now - r.started_at < st.config.min_runtime_before_preempt_ms;
}

bool TouchesMatching(const SchedState& st, const RunEntry& r, const Shape& s) {
  for (const ReplicaPlacement& p : r.placement) {
    int32_t slot = st.model.Find(p.node);
    if (slot < 0) continue;
    const NodeSlot& n = st.model.slot(slot);
    if (n.info.schedulable && Matches(n, s)) return true;
  }
  return false;
}

bool TouchesAny(const SchedState& st, const RunEntry& r, const std::vector<NodeDemand>& nodes) {
  for (const ReplicaPlacement& p : r.placement) {
    int32_t slot = st.model.Find(p.node);
    for (const NodeDemand& d : nodes) {
      if (d.slot == slot) return true;
    }
  }
  return false;
}

// Does every node still have room for its part of the placement (holds apply)?
bool Satisfied(const SchedState& st, const std::vector<NodeDemand>& demand) {
  for (const NodeDemand& d : demand) {
    const NodeSlot& n = st.model.slot(d.slot);
    if (n.free_gpus - n.hold_gpus < d.gpus || n.free_cpu - n.hold_cpu < d.cpu ||
        n.free_mem - n.hold_mem < d.mem) {
      return false;
    }
  }
  return true;
}

DurationMs LostWork(const SchedState& st, const RunEntry& r) {
  return r.gpus * std::max<DurationMs>(0, st.now - r.started_at);
}

}  // namespace

bool FindVictims(SchedState& st, const PendingEntry& job, std::vector<JobId>* victims,
                 std::vector<ReplicaPlacement>* placement) {
  const PendingJob& j = job.job;
  Shape s = ShapeOf(j);
  int64_t gpus = TotalGpus(j);
  OrderPolicy policy = st.config.policy;
  std::vector<RunEntry*> cands;
  bool reclaim = false;
  // Upper bounds first: most blocked jobs have no possible victims at all.
  if (st.preemptible_priorities.empty()) return false;
  int64_t bound = st.model.free_gpus();
  for (int32_t q = 0; q < static_cast<int32_t>(st.preemptible_gpus.size()); ++q) {
    bound += st.preemptible_gpus[q] - st.PlacedPreemptible(q);
  }
  if (bound < gpus) return false;
  if (policy == OrderPolicy::kCorral) {
    int64_t incoming = 0;
    for (const auto& [id, vs] : st.victims_of) {
      (void)vs;
      if (const PendingEntry* e = st.pending.Find(id); e && e->queue == job.queue) {
        incoming += TotalGpus(e->job);
      }
    }
    reclaim = st.queues.AllocGpus(job.queue) + incoming + gpus <= st.queues.Quota(job.queue);
    if (!reclaim && st.preemptible_priorities.begin()->first >= j.priority) return false;
    for (int32_t q = 0; q < static_cast<int32_t>(st.running_by_queue.size()); ++q) {
      bool over = st.queues.AllocGpus(q) - st.Freeing(q) > st.queues.Quota(q);
      if (q != job.queue && !over) continue;
      for (JobId id : st.running_by_queue[q]) {
        ++st.work;
        RunEntry& r = st.running.at(id);
        if (Spared(st, r)) continue;
        bool lower = r.job.priority < j.priority;
        if (q == job.queue ? !(lower || (over && reclaim)) : !(lower || reclaim)) continue;
        if (TouchesMatching(st, r, s)) cands.push_back(&r);
      }
    }
  } else if (IsPreemptive(policy)) {
    for (auto& [id, r] : st.running) {
      ++st.work;
      if (Spared(st, r)) continue;
      DurationMs attained =
          r.job.attained_ms + r.gpus * std::max<DurationMs>(0, st.now - r.started_at);
      if (!BaselinePreempts(policy, job.key, StaticKey(st.config, r.job, attained))) continue;
      if (TouchesMatching(st, r, s)) cands.push_back(&r);
    }
  }
  if (cands.empty()) return false;
  auto cheaper = [&](const RunEntry* a, const RunEntry* b) {
    DurationMs la = LostWork(st, *a), lb = LostWork(st, *b);
    if (la != lb) return la < lb;
    if (a->job.priority != b->job.priority) return a->job.priority < b->job.priority;
    if (a->started_at != b->started_at) return a->started_at > b->started_at;
    return a->job.id > b->job.id;
  };
  std::sort(cands.begin(), cands.end(), cheaper);

  Placer placer(st.model, &st.work);
  std::vector<RunEntry*> released;
  std::map<int32_t, int64_t> taken;  // queue -> GPUs released from it here
  bool ok = false;
  size_t next_try = 1;
  for (RunEntry* r : cands) {
    if (st.work > st.config.max_work_per_pass) break;
    bool own_lower = r->queue == job.queue && r->job.priority < j.priority;
    if (policy == OrderPolicy::kCorral && !own_lower &&
        st.queues.AllocGpus(r->queue) - st.Freeing(r->queue) - taken[r->queue] <=
            st.queues.Quota(r->queue)) {
      continue;  // its queue is no longer over quota
    }
    st.BindRun(*r, -1);
    released.push_back(r);
    taken[r->queue] += r->gpus;
    ++st.work;
    if (st.model.free_gpus() < s.TotalGpus() || released.size() < next_try) continue;
    if (placer.Place(s, kUnknownTime, false, placement)) {
      ok = true;
      break;
    }
    next_try = released.size() + std::max<size_t>(1, released.size() / 8);
  }
  if (!ok && !released.empty() && released.size() < next_try) {
    ok = placer.Place(s, kUnknownTime, false, placement);
  }
  if (!ok) {
    for (RunEntry* r : released) st.BindRun(*r, +1);
    return false;
  }
  // Give back what the placement does not need: first runs off its nodes (no check needed),
  // then the costliest runs on its nodes while the placement still fits.
  std::vector<NodeDemand> demand = DemandOf(st.model, s, *placement);
  std::vector<RunEntry*> needed;
  for (RunEntry* r : released) {
    if (TouchesAny(st, *r, demand)) {
      needed.push_back(r);
    } else {
      st.BindRun(*r, +1);
    }
  }
  std::sort(needed.begin(), needed.end(), [&](auto* a, auto* b) { return cheaper(b, a); });
  std::vector<RunEntry*> chosen;
  for (RunEntry* r : needed) {
    ++st.work;
    st.BindRun(*r, +1);
    if (!Satisfied(st, demand)) {
      st.BindRun(*r, -1);
      chosen.push_back(r);
    }
  }
  // The victims keep their resources until the driver removes them.
  for (RunEntry* r : chosen) st.BindRun(*r, +1);
  std::sort(chosen.begin(), chosen.end(), [](auto* a, auto* b) { return a->job.id < b->job.id; });
  victims->clear();
  for (RunEntry* r : chosen) victims->push_back(r->job.id);
  return !victims->empty();
}

}  // namespace corral::sched
