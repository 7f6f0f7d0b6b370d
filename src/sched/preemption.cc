// Victim selection (DESIGN §6.7). A blocked job may displace preemptible runs that
// (kCorral) are lower priority in its own queue, or of its own queue and priority in a
// strictly higher LAS level (las_within_queue), or belong to a queue over its quota when
// the job is higher priority, or its queue reclaims its quota (the job fits within the
// quota), or (las_across_queues) they are of its priority in a strictly higher LAS level;
// or (kSrtf, kLas) have a strictly worse key. Runs that ran less than
// min_runtime_before_preempt_ms, were placed in this pass or are already being preempted are
// spared; kCorral takes priority and LAS victims only within the preemption budgets
// (preempt_budget.h), quota reclaim always. Candidates are released from the least lost work
// (GPU-ms since the run's last checkpoint, or its start: a run that just checkpointed loses
// least) up
// until the job fits; then every released run that the found placement does not need is
// given back, the most lost work first. The placement is simulated, so a victim is only
// named when the job then fits.
//
// The search runs on a WhatIf scratch (what_if.h), not on the model: releasing a candidate
// costs its replicas, and "does the job fit now?" is one comparison. The model is touched
// only once the job fits, to find the placement itself.
#include <algorithm>
#include <set>
#include <string>

#include "core/status.h"
#include "sched/state.h"

namespace corral::sched {

namespace {

bool Spared(const SchedState& st, const RunEntry& r) {
  return !r.job.preemptible || r.preempted_for != 0 || r.placed_in_pass == st.pass ||
         st.now - r.started_at < st.config.min_runtime_before_preempt_ms;
}

// Does `r` run on a node that a job of shape `s` ending at `end` could use (not reserved
// against it by an admin reservation)?
bool TouchesMatching(const SchedState& st, const RunEntry& r, const Shape& s, TimeMs end) {
  for (int32_t slot : st.SlotsOf(r)) {
    if (slot < 0) continue;
    const NodeSlot& n = st.model.slot(slot);
    if (n.info.schedulable && !ReservedAgainst(n, end) && Matches(n, s)) return true;
  }
  return false;
}

bool TouchesAny(const SchedState& st, const RunEntry& r, const std::vector<NodeDemand>& nodes) {
  for (int32_t slot : st.SlotsOf(r)) {
    for (const NodeDemand& d : nodes) {
      if (d.slot == slot) return true;
    }
  }
  return false;
}

// las_within_queue: `r` is of `job`'s queue and priority, in a strictly higher LAS level, and
// far enough from the job across the threshold between them.
//
// Hysteresis. A level is a guess at remaining service from attained service (long jobs have
// attained more); a run just past a threshold T and a job just below it are nearly the same
// guess, and swapping them throws the run's work away for nothing: the job crosses T soon
// after and both wait in one level, where the order is FIFO again. So the run must have
// attained at least h x T and the job less than T / h (h = las_preempt_hysteresis, 2 by
// default): the job then gets at least T (1 - 1/h) of service before it reaches the level it
// displaced, and the run it displaced, requeued at h x T or more, never preempts it back (LAS
// displaces only strictly higher levels). With h = 1 this is plain Tiresias LAS.
bool LasLevelsAllow(const SchedState& st, const RunEntry& r, const PendingEntry& job);

bool LasVictim(const SchedState& st, const RunEntry& r, const PendingEntry& job) {
  const SchedulerConfig& c = st.config;
  if (c.policy != OrderPolicy::kCorral || !c.las_within_queue || r.queue != job.queue ||
      r.job.priority != job.job.priority) {
    return false;
  }
  return LasLevelsAllow(st, r, job);
}

// las_across_queues: `r` is of another queue (the caller checks that it is over its quota)
// and of `job`'s priority, and the levels allow it as inside a queue.
bool BorrowedLasVictim(const SchedState& st, const RunEntry& r, const PendingEntry& job) {
  const SchedulerConfig& c = st.config;
  if (c.policy != OrderPolicy::kCorral || !c.las_within_queue || !c.las_across_queues ||
      r.queue == job.queue || r.job.priority != job.job.priority) {
    return false;
  }
  return LasLevelsAllow(st, r, job);
}

// The LAS rules shared by both: a strictly higher level, hysteresis, and the sparing rule.
bool LasLevelsAllow(const SchedState& st, const RunEntry& r, const PendingEntry& job) {
  const SchedulerConfig& c = st.config;
  // A run that waited past its age bound is not sent back behind the jobs it waited for; a
  // job past it may displace the others (aged_may_displace).
  if (r.aged) return false;
  if (job.aged && c.aged_may_displace) return true;
  DurationMs attained = AttainedNow(r.job, r.gpus, r.started_at, st.now);
  if (LasLevel(c, r.job, attained) <= job.key.level) return false;
  // A job without the history levels cannot displace a run past its own top level.
  const DurationMs threshold = LasThresholdAt(c, job.job, job.key.level);
  if (threshold <= 0) return false;
  const double t = static_cast<double>(threshold);
  const double h = std::max(1.0, c.las_preempt_hysteresis);
  if (static_cast<double>(attained) < h * t || static_cast<double>(job.job.attained_ms) * h >= t) {
    return false;
  }
  // Predictions (use_predictions): a run predicted to end before the job would is spared;
  // displacing it loses its work and frees its GPUs no sooner than waiting would. Only when
  // both have a prediction; a run that outlived its own is guessed to run as long again.
  if (c.use_predictions && HasPrediction(r.job) && HasPrediction(job.job) &&
      PredictedRemainingMs(c, r.job, attained) <= job.key.pred) {
    return false;
  }
  return true;
}

DurationMs LostWork(const SchedState& st, const RunEntry& r) { return st.LostWork(r); }

// The order victims are tried in: the least lost work first (a total order).
bool Cheaper(const SchedState& st, const RunEntry& a, const RunEntry& b) {
  DurationMs la = LostWork(st, a), lb = LostWork(st, b);
  if (la != lb) return la < lb;
  if (a.job.priority != b.job.priority) return a.job.priority < b.job.priority;
  if (a.started_at != b.started_at) return a.started_at > b.started_at;
  return a.job.id > b.job.id;
}

// Orders a pass's possible victims (see SchedState::victim_order).
void BuildVictimOrder(SchedState& st) {
  uint64_t last_pass = st.victim_order_pass;
  size_t last_size = st.victim_order.size();
  st.victim_order_pass = st.pass;
  st.victim_order.clear();
  st.failed_searches.clear();
  st.victim_max_key_a = INT64_MIN;
  // Runs of the last order by their place in it, then the others.
  std::vector<SchedState::VictimEntry> fresh;
  std::vector<SchedState::VictimEntry> by_rank(last_size, {nullptr, 0, 0});
  for (auto& [id, r] : st.running) {
    if (Spared(st, r)) continue;
    int64_t key_a = 0;
    if (st.config.policy != OrderPolicy::kCorral) {
      DurationMs attained =
          r.job.attained_ms + r.gpus * std::max<DurationMs>(0, st.now - r.started_at);
      key_a = StaticKey(st.config, r.job, attained).a;
      st.victim_max_key_a = std::max(st.victim_max_key_a, key_a);
    }
    SchedState::VictimEntry e{&r, key_a, LostWork(st, r)};
    bool ranked = r.victim_rank_pass == last_pass && r.victim_rank >= 0 &&
                  static_cast<size_t>(r.victim_rank) < last_size;
    if (ranked) {
      by_rank[r.victim_rank] = e;
    } else {
      fresh.push_back(e);
    }
  }
  for (const auto& e : by_rank) {
    if (e.run) st.victim_order.push_back(e);
  }
  st.victim_order.insert(st.victim_order.end(), fresh.begin(), fresh.end());
  // Cheaper(), with the lost work computed once.
  auto less = [](const SchedState::VictimEntry& x, const SchedState::VictimEntry& y) {
    if (x.lost != y.lost) return x.lost < y.lost;
    const RunEntry& a = *x.run;
    const RunEntry& b = *y.run;
    if (a.job.priority != b.job.priority) return a.job.priority < b.job.priority;
    if (a.started_at != b.started_at) return a.started_at > b.started_at;
    return a.job.id > b.job.id;
  };
  // Insertion sort: lost work grows with time at a rate of each run's GPUs, so from one
  // pass to the next few pairs swap. Falls back to a full sort when many do. Either way the
  // result is the one order `less` defines (it is total: ids are unique).
  std::vector<SchedState::VictimEntry>& v = st.victim_order;
  int64_t moves_left = 8 * static_cast<int64_t>(v.size()) + 64;
  bool sorted = true;
  for (size_t i = 1; i < v.size() && sorted; ++i) {
    SchedState::VictimEntry e = v[i];
    size_t k = i;
    while (k > 0 && less(e, v[k - 1])) {
      v[k] = v[k - 1];
      --k;
      if (--moves_left < 0) break;
    }
    v[k] = e;
    sorted = moves_left >= 0;
  }
  if (!sorted) std::sort(v.begin(), v.end(), less);
  for (auto& positions : st.victim_order_by_queue) positions.clear();
  st.victim_order_by_queue_priority.clear();
  for (size_t i = 0; i < v.size(); ++i) {
    RunEntry& r = *v[i].run;
    r.victim_rank = static_cast<int32_t>(i);
    r.victim_rank_pass = st.pass;
    int32_t q = r.queue;
    if (q < 0) continue;
    if (static_cast<int32_t>(st.victim_order_by_queue.size()) <= q) {
      st.victim_order_by_queue.resize(q + 1);
    }
    st.victim_order_by_queue[q].push_back(static_cast<int32_t>(i));
    SchedState::VictimsOfPriority& of_p = st.victim_order_by_queue_priority[{q, r.job.priority}];
    of_p.positions.push_back(static_cast<int32_t>(i));
    of_p.max_attained =
        std::max(of_p.max_attained, AttainedNow(r.job, r.gpus, r.started_at, st.now));
  }
}

}  // namespace

bool FindVictims(SchedState& st, const PendingEntry& job, std::vector<JobId>* victims,
                 std::vector<ReplicaPlacement>* placement) {
  const PendingJob& j = job.job;
  Shape s = ShapeOf(j);
  int64_t gpus = TotalGpus(j);
  OrderPolicy policy = st.config.policy;
  // Victims on nodes an admin reservation keeps from the job free nothing it may use.
  const TimeMs end = ExpectedEndOf(j, st.now);
  std::vector<RunEntry*> cands;
  std::set<const RunEntry*> budgeted_runs;  // kCorral: candidates taken for priority or LAS
  bool reclaim = false;
  // kCorral, by queue: does the job reclaim from its runs, and how far up its quota levels
  // does it meet them (QueueBook::QuotaMeet)?
  std::vector<uint8_t> reclaim_from;
  std::vector<int32_t> meet_depth;
  std::vector<int32_t> holder_level;  // the run's side of the meet, which must stay over quota
  // Upper bounds first: most blocked jobs have no possible victims at all.
  if (st.preemptible_priorities.empty()) return false;
  int64_t bound = st.model.free_gpus();
  for (int32_t q = 0; q < static_cast<int32_t>(st.preemptible_gpus.size()); ++q) {
    bound += st.preemptible_gpus[q] - st.PlacedPreemptible(q);
  }
  if (bound < gpus) return false;
  if (policy != OrderPolicy::kCorral && !IsPreemptive(policy)) return false;
  if (st.NoVictimYet()) return false;
  // Candidates: the pass's possible victims that this job may displace, in victim order.
  if (policy == OrderPolicy::kCorral) {
    // Reclaim at each of the job's quota levels: the job, with the jobs of that subtree already
    // waiting for their victims, stays within the level's quota.
    std::vector<int32_t> levels;
    st.queues.QuotaLevels(job.queue, &levels);
    std::vector<uint8_t> fits(levels.size(), 0);
    for (size_t k = 0; k < levels.size(); ++k) {
      int64_t incoming = 0;
      for (const auto& [id, vs] : st.victims_of) {
        (void)vs;
        if (const PendingEntry* e = st.pending.Find(id);
            e && st.queues.Within(e->queue, levels[k])) {
          incoming += TotalGpus(e->job);
        }
      }
      fits[k] = st.queues.AllocGpus(levels[k]) + incoming + gpus <= st.queues.Quota(levels[k]);
      reclaim = reclaim || fits[k];
    }
    // Priority and LAS preemption spend the budgets; reclaim does not need them.
    bool open = st.ClusterBudgetOpen();
    bool las = open && st.config.las_within_queue && st.PreemptibleGpus(job.queue) > 0;
    bool by_priority =
        open && j.may_preempt && st.preemptible_priorities.begin()->first < j.priority;
    bool borrowed_las = open && st.config.las_within_queue && st.config.las_across_queues;
    if (!reclaim && !las && !by_priority && !borrowed_las) {
      if (!open) ++st.budget_denied;
      return false;
    }
    // Without reclaim every victim spends its queue's budget, and victims come only from the
    // job's own queue or (lower priority, or LAS across queues) queues over their quota: when
    // all of those budgets are closed, the scan below could only be denied. Skipping it keeps
    // a pass that visits many blocked jobs while the budgets are spent from scanning every
    // run for each of them.
    if (!reclaim) {
      bool any = (las || by_priority) && st.QueueBudgetOpen(job.queue);
      for (int32_t q = 0; !any && (by_priority || borrowed_las) &&
                          q < static_cast<int32_t>(st.preemptible_gpus.size());
           ++q) {
        any = q != job.queue && st.preemptible_gpus[q] > 0 &&
              st.OverQuota(st.queues.QuotaMeet(job.queue, q).holder) && st.QueueBudgetOpen(q);
      }
      if (!any) {
        ++st.budget_denied;
        return false;
      }
    }
    if (st.victim_order_pass != st.pass) BuildVictimOrder(st);
    std::vector<int8_t> queue_open(st.running_by_queue.size(), -1);  // -1: not asked yet
    auto budget_allows = [&](int32_t q) {
      if (queue_open[q] < 0) queue_open[q] = st.QueueBudgetOpen(q) ? 1 : 0;
      return queue_open[q] == 1;
    };
    bool denied = false;
    // By queue: 0 not searched, 1 searched and not over its quota, 2 searched and over.
    // Over its quota: the run's side of the meet with the job (for flat queues, its queue).
    std::vector<uint8_t> searched(st.running_by_queue.size(), 0);
    reclaim_from.assign(searched.size(), 0);
    meet_depth.assign(searched.size(), 0);
    holder_level.assign(searched.size(), -1);
    for (int32_t q = 0; q < static_cast<int32_t>(st.running_by_queue.size()); ++q) {
      QueueBook::Meet m = st.queues.QuotaMeet(job.queue, q);
      bool over = st.OverQuota(m.holder);
      if (q != job.queue && !over) continue;
      searched[q] = over ? 2 : 1;
      reclaim_from[q] = over && fits[m.taker_depth];
      meet_depth[q] = m.taker_depth;
      holder_level[q] = m.holder;
    }
    // The positions in victim_order to scan: the job's own queue, and the other searched
    // queues only if it may take from them (reclaim, lower priority, LAS across queues); a
    // run of any other queue could be neither a reclaim, a priority nor a LAS victim. A queue
    // that could offer only LAS victims contributes only its runs of the job's priority, and
    // none when none of them has attained the hysteresis threshold or its budget is closed.
    // The positions are in victim order either way, so the candidates are too.
    DurationMs las_needs = INT64_MAX;  // GPU-ms a LAS victim must have attained
    const DurationMs threshold = LasThresholdAt(st.config, j, job.key.level);
    if (borrowed_las && job.aged && st.config.aged_may_displace) {
      las_needs = 0;
    } else if (borrowed_las && threshold > 0) {
      const double t = static_cast<double>(threshold);
      const double h = std::max(1.0, st.config.las_preempt_hysteresis);
      if (static_cast<double>(j.attained_ms) * h < t) las_needs = static_cast<DurationMs>(h * t);
    }
    // By queue: 0 not scanned, 1 every run, 2 only runs of the job's priority.
    std::vector<uint8_t> scan(searched.size(), 0);
    bool other_whole = false;  // another queue is scanned whole: filter the whole order
    for (int32_t q = 0; q < static_cast<int32_t>(searched.size()); ++q) {
      if (!searched[q] || q >= static_cast<int32_t>(st.victim_order_by_queue.size())) continue;
      if (st.victim_order_by_queue[q].empty()) continue;
      if (q == job.queue || reclaim_from[q] || by_priority) {
        scan[q] = 1;
        other_whole = other_whole || q != job.queue;
        continue;
      }
      if (!borrowed_las) continue;
      auto it = st.victim_order_by_queue_priority.find({q, j.priority});
      if (it == st.victim_order_by_queue_priority.end() || it->second.max_attained < las_needs) {
        continue;
      }
      if (!budget_allows(q)) {
        denied = true;
        continue;
      }
      scan[q] = 2;
    }
    std::vector<int32_t> positions;
    if (other_whole) {
      for (size_t i = 0; i < st.victim_order.size(); ++i) {
        const RunEntry& r = *st.victim_order[i].run;
        int32_t q = r.queue;
        if (q < 0 || q >= static_cast<int32_t>(scan.size()) || !scan[q]) continue;
        if (scan[q] == 2 && r.job.priority != j.priority) continue;
        positions.push_back(static_cast<int32_t>(i));
      }
    } else {
      for (int32_t q = 0; q < static_cast<int32_t>(scan.size()); ++q) {
        if (scan[q] == 0) continue;
        const std::vector<int32_t>& of_q =
            scan[q] == 1 ? st.victim_order_by_queue[q]
                         : st.victim_order_by_queue_priority.at({q, j.priority}).positions;
        positions.insert(positions.end(), of_q.begin(), of_q.end());
      }
      std::sort(positions.begin(), positions.end());
    }
    st.work += static_cast<int64_t>(positions.size());  // the scan below
    for (int32_t pos : positions) {
      RunEntry& r = *st.victim_order[pos].run;
      int32_t q = r.queue;
      if (r.preempted_for != 0) continue;  // spared since the order was built
      bool over = searched[q] == 2;
      bool lower = by_priority && r.job.priority < j.priority;
      bool reclaims = reclaim_from[q];
      bool budgeted = lower || (q == job.queue && las && LasVictim(st, r, job)) ||
                      (over && borrowed_las && BorrowedLasVictim(st, r, job));
      if (!reclaims && !budgeted) continue;
      if (!reclaims && !budget_allows(q)) {
        denied = true;
        continue;
      }
      if (!TouchesMatching(st, r, s, end)) continue;
      cands.push_back(&r);
      // Only candidates can be chosen, so only they need to be told apart.
      if (!reclaims) budgeted_runs.insert(&r);
    }
    if (denied && cands.empty()) ++st.budget_denied;
    // A child reclaims first from borrowers farthest from it: those outside its parent use
    // its subtree's idle share, its siblings only their own subtree's.
    bool deep = false;
    for (const RunEntry* r : cands) deep = deep || meet_depth[r->queue] > 0;
    if (deep) {
      std::stable_sort(cands.begin(), cands.end(), [&](const RunEntry* a, const RunEntry* b) {
        return meet_depth[a->queue] > meet_depth[b->queue];
      });
    }
  } else {
    if (st.victim_order_pass != st.pass) BuildVictimOrder(st);
    st.work += static_cast<int64_t>(st.running.size());
    // Only runs with a strictly worse key may be displaced.
    if (st.victim_max_key_a <= job.key.a) return false;
    for (const SchedState::FailedSearch& f : st.failed_searches) {
      if (job.key.a >= f.key_a && s.replicas >= f.replicas && s.gpus >= f.gpus && s.cpu >= f.cpu &&
          s.mem >= f.mem && s.share == f.share && s.share_milli >= f.share_milli &&
          s.share_mem >= f.share_mem && s.isolation == f.isolation && j.gpu_model == f.gpu_model &&
          j.node_labels == f.node_labels && end >= f.end) {
        return false;
      }
    }
    for (const SchedState::VictimEntry& v : st.victim_order) {
      if (v.key_a <= job.key.a || v.run->preempted_for != 0) continue;
      if (TouchesMatching(st, *v.run, s, end)) cands.push_back(v.run);
    }
  }
  // The job does not fit even with every candidate gone (see SchedState::failed_searches).
  auto infeasible = [&] {
    if (policy != OrderPolicy::kCorral) {
      st.failed_searches.push_back({s.replicas, s.gpus, s.cpu, s.mem, s.share, s.share_milli,
                                    s.share_mem, s.isolation, j.gpu_model, j.node_labels, job.key.a,
                                    end});
    }
    return false;
  };
  if (cands.empty()) return infeasible();
  // Even releasing every candidate would leave too few free GPUs: no try could succeed.
  int64_t cand_gpus = 0;
  for (const RunEntry* r : cands) cand_gpus += r->gpus;
  if (st.model.free_gpus() + cand_gpus < s.TotalGpus()) return infeasible();
  auto cheaper = [&](const RunEntry* a, const RunEntry* b) { return Cheaper(st, *a, *b); };

  WhatIf& w = st.what_if;
  w.Reset(&st.model, s, end);
  auto release = [&](const RunEntry& r, int sign) {
    w.Release(r.placement, st.SlotsOf(r), r.job.per_replica, r.job.user, sign);
  };
  std::vector<RunEntry*> released;
  std::map<int32_t, int64_t> taken;  // queue -> GPUs released from its subtree here
  bool ok = false;
  bool all_released = true;  // not cut short by the pass budget
  size_t next_try = 1;
  for (RunEntry* r : cands) {
    if (st.work > st.config.max_work_per_pass) {
      all_released = false;
      break;
    }
    bool own_lower = r->queue == job.queue && r->job.priority < j.priority;
    if (policy == OrderPolicy::kCorral && !own_lower && !LasVictim(st, *r, job)) {
      int32_t level = holder_level[r->queue];
      if (!st.OverQuota(level, taken[level])) continue;  // no longer over its quota
    }
    release(*r, -1);
    released.push_back(r);
    for (int32_t a = r->queue; a >= 0; a = st.queues.Parent(a)) taken[a] += r->gpus;
    ++st.work;
    // Trying after every release would make the search quadratic; the tries thin out.
    if (w.free_gpus() < s.TotalGpus() || released.size() < next_try) continue;
    ++st.work;
    if (w.Fits()) {
      ok = true;
      break;
    }
    next_try = released.size() + std::max<size_t>(1, released.size() / 8);
  }
  if (!ok && !released.empty() && released.size() < next_try) ok = w.Fits();
  // Capacity only grows as runs are released, so a failed last try means no set fits.
  if (!ok) return all_released && (released.empty() || !w.Fits()) ? infeasible() : false;
  Placer placer(st.model, &st.work);
  w.Apply();
  bool placed = placer.Place(s, kUnknownTime, false, placement);
  w.Restore();
  CORRAL_CHECK(placed, "WhatIf::Fits disagrees with Placer::Place for job " + std::to_string(j.id));
  // Give back what the placement does not need: runs off its nodes need no check (they
  // cannot change its nodes' room), then the costliest runs on its nodes while the placement
  // still fits. Only the scratch changes: the model still has every run bound.
  std::vector<NodeDemand> demand = DemandOf(st.model, s, *placement);
  std::vector<RunEntry*> needed;
  for (RunEntry* r : released) {
    if (TouchesAny(st, *r, demand)) needed.push_back(r);
  }
  std::sort(needed.begin(), needed.end(), [&](auto* a, auto* b) { return cheaper(b, a); });
  std::vector<RunEntry*> chosen;
  for (RunEntry* r : needed) {
    ++st.work;
    release(*r, +1);
    if (!w.Satisfied(demand)) {
      release(*r, -1);
      chosen.push_back(r);
    }
  }
  // A decision may overshoot the cluster's runs-per-minute budget only when it is the first
  // in the window (so a gang needing many victims is delayed, never starved): otherwise the
  // budgeted victims must fit what is left.
  if (policy == OrderPolicy::kCorral && !budgeted_runs.empty()) {
    int64_t budgeted = 0;
    for (const RunEntry* r : chosen) budgeted += budgeted_runs.count(r) ? 1 : 0;
    if (budgeted > 0 && !st.ClusterBudgetTakes(budgeted)) {
      ++st.budget_denied;
      return false;
    }
  }
  // The victims keep their resources until the driver removes them.
  std::sort(chosen.begin(), chosen.end(), [](auto* a, auto* b) { return a->job.id < b->job.id; });
  victims->clear();
  for (RunEntry* r : chosen) victims->push_back(r->job.id);
  return !victims->empty();
}

}  // namespace corral::sched
