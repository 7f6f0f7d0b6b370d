// Victim selection (DESIGN §6.7). A blocked job may displace preemptible runs that
// (kCorral) are lower priority in its own queue (a service's replica also outranks training of
// its own priority: Outranks), or of its own queue and priority in a
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

// Does `job` outrank `r` for priority preemption: a lower priority, or (a service's replica
// against training) the same one; serving comes first (PendingJob::serving).
bool Outranks(const PendingJob& job, const PendingJob& r) {
  return r.priority < job.priority || (r.priority == job.priority && job.serving && !r.serving);
}

// Is there a preemptible run that `job` outranks (the bound before any victim search)?
bool OutranksAnyRun(const SchedState& st, const PendingJob& job) {
  if (!st.preemptible_priorities.empty() && st.preemptible_priorities.begin()->first < job.priority)
    return true;
  return job.serving && !st.preemptible_training_priorities.empty() &&
         st.preemptible_training_priorities.begin()->first <= job.priority;
}

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
  if (st.policy->displacement() != Displacement::kByClaim || !c.corral.las_within_queue ||
      r.queue != job.queue || r.job.priority != job.job.priority || r.job.serving) {
    return false;
  }
  return LasLevelsAllow(st, r, job);
}

// las_across_queues: `r` is of another queue (the caller checks that it is over its quota)
// and of `job`'s priority, and the levels allow it as inside a queue.
bool BorrowedLasVictim(const SchedState& st, const RunEntry& r, const PendingEntry& job) {
  const SchedulerConfig& c = st.config;
  if (st.policy->displacement() != Displacement::kByClaim || !c.corral.las_within_queue ||
      !c.corral.las_across_queues || r.queue == job.queue || r.job.priority != job.job.priority ||
      r.job.serving) {
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
  if (job.aged && c.corral.aged_may_displace) return true;
  DurationMs attained = AttainedNow(r.job, r.gpus, r.started_at, st.now);
  if (LasLevel(c, r.job, attained) <= job.key.level) return false;
  // A job without the history levels cannot displace a run past its own top level.
  const DurationMs threshold = LasThresholdAt(c, job.job, job.key.level);
  if (threshold <= 0) return false;
  const double t = static_cast<double>(threshold);
  const double h = std::max(1.0, c.corral.las_preempt_hysteresis);
  if (static_cast<double>(attained) < h * t || static_cast<double>(job.job.attained_ms) * h >= t) {
    return false;
  }
  // Predictions (use_predictions): a run predicted to end before the job would is spared;
  // displacing it loses its work and frees its GPUs no sooner than waiting would. Only when
  // both have a prediction; a run that outlived its own is guessed to run as long again.
  if (c.corral.predict.on && HasPrediction(r.job) && HasPrediction(job.job) &&
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
    if (st.policy->displacement() != Displacement::kByClaim) {
      DurationMs attained =
          r.job.attained_ms + r.gpus * std::max<DurationMs>(0, st.now - r.started_at);
      key_a = st.policy->Key(r.job, attained).a;
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

namespace {

// One victim search, as steps: the bounds that rule most jobs out at once; the candidates
// (kCorral: by quota levels, budgets and queues; the baselines: by key); the candidates
// released on the scratch until the job fits; the released runs the placement does not need
// given back; the budgets checked against the victims chosen.
class VictimSearch {
 public:
  VictimSearch(SchedState& st, const PendingEntry& job)
      : st_(st),
        job_(job),
        j_(job.job),
        s_(ShapeOf(job.job)),
        gpus_(TotalGpus(job.job)),
        displacement_(st.policy->displacement()),
        end_(ExpectedEndOf(job.job, st.now)) {}

  bool Find(std::vector<JobId>* victims, std::vector<ReplicaPlacement>* placement) {
    if (!AnyVictimPossible()) return false;
    if (displacement_ == Displacement::kByClaim) {
      if (!CorralCandidates()) return false;
    } else if (!KeyCandidates()) {
      return false;
    }
    if (cands_.empty()) return Infeasible();
    // Even releasing every candidate would leave too few free GPUs: no try could succeed.
    int64_t cand_gpus = 0;
    for (const RunEntry* r : cands_) cand_gpus += r->gpus;
    if (st_.model.free_gpus() + cand_gpus < s_.TotalGpus()) return Infeasible();
    st_.what_if.Reset(&st_.model, s_, end_);
    switch (ReleaseUntilFits()) {
      case Released::kFits:
        break;
      case Released::kNeverFits:
        return Infeasible();
      case Released::kCutShort:
        return false;
    }
    PlaceOnScratch(placement);
    std::vector<RunEntry*> chosen = GiveBackUnneeded(*placement);
    if (!BudgetsTake(chosen)) return false;
    // The victims keep their resources until the driver removes them.
    std::sort(chosen.begin(), chosen.end(), [](auto* a, auto* b) { return a->job.id < b->job.id; });
    victims->clear();
    for (RunEntry* r : chosen) victims->push_back(r->job.id);
    return !victims->empty();
  }

 private:
  // Upper bounds first: most blocked jobs have no possible victims at all.
  bool AnyVictimPossible() const {
    if (st_.preemptible_priorities.empty()) return false;
    int64_t bound = st_.model.free_gpus();
    for (int32_t q = 0; q < static_cast<int32_t>(st_.preemptible_gpus.size()); ++q) {
      bound += st_.preemptible_gpus[q] - st_.PlacedPreemptible(q);
    }
    if (bound < gpus_) return false;
    if (displacement_ == Displacement::kNever) return false;
    return !st_.NoVictimYet();
  }

  // kCorral: whether the job reclaims at each of its quota levels: the job, with the jobs of
  // that subtree already waiting for their victims, stays within the level's quota.
  std::vector<uint8_t> ReclaimFits() {
    std::vector<int32_t> levels;
    st_.queues.QuotaLevels(job_.queue, &levels);
    std::vector<uint8_t> fits(levels.size(), 0);
    for (size_t k = 0; k < levels.size(); ++k) {
      int64_t incoming = 0;
      for (const auto& [id, vs] : st_.victims_of) {
        (void)vs;
        if (const PendingEntry* e = st_.pending.Find(id);
            e && st_.queues.Within(e->queue, levels[k])) {
          incoming += TotalGpus(e->job);
        }
      }
      fits[k] = st_.queues.AllocGpus(levels[k]) + incoming + gpus_ <= st_.queues.Quota(levels[k]);
      reclaim_ = reclaim_ || fits[k];
    }
    return fits;
  }

  // Without reclaim every victim spends its queue's budget, and victims come only from the
  // job's own queue or (lower priority, or LAS across queues) queues over their quota: when
  // all of those budgets are closed, the scan could only be denied. Skipping it keeps a pass
  // that visits many blocked jobs while the budgets are spent from scanning every run for
  // each of them.
  bool AnyBudgetOpenToTake() const {
    bool any = (las_ || by_priority_) && st_.QueueBudgetOpen(job_.queue);
    for (int32_t q = 0; !any && (by_priority_ || borrowed_las_) &&
                        q < static_cast<int32_t>(st_.preemptible_gpus.size());
         ++q) {
      any = q != job_.queue && st_.preemptible_gpus[q] > 0 &&
            st_.OverQuota(st_.queues.QuotaMeet(job_.queue, q).holder) && st_.QueueBudgetOpen(q);
    }
    return any;
  }

  bool CorralCandidates() {
    const std::vector<uint8_t> fits = ReclaimFits();
    // Priority and LAS preemption spend the budgets; reclaim does not need them.
    const bool open = st_.ClusterBudgetOpen();
    las_ = open && st_.config.corral.las_within_queue && st_.PreemptibleGpus(job_.queue) > 0;
    by_priority_ = open && j_.may_preempt && OutranksAnyRun(st_, j_);
    borrowed_las_ =
        open && st_.config.corral.las_within_queue && st_.config.corral.las_across_queues;
    if (!reclaim_ && !las_ && !by_priority_ && !borrowed_las_) {
      if (!open) ++st_.budget_denied;
      return false;
    }
    if (!reclaim_ && !AnyBudgetOpenToTake()) {
      ++st_.budget_denied;
      return false;
    }
    if (st_.victim_order_pass != st_.pass) BuildVictimOrder(st_);
    queue_open_.assign(st_.running_by_queue.size(), -1);
    MarkSearchedQueues(fits);
    ScanCandidates(ScanPositions(PlanScan()));
    if (denied_ && cands_.empty()) ++st_.budget_denied;
    // A child reclaims first from borrowers farthest from it: those outside its parent use
    // its subtree's idle share, its siblings only their own subtree's.
    bool deep = false;
    for (const RunEntry* r : cands_) deep = deep || meet_depth_[r->queue] > 0;
    if (deep) {
      std::stable_sort(cands_.begin(), cands_.end(), [&](const RunEntry* a, const RunEntry* b) {
        return meet_depth_[a->queue] > meet_depth_[b->queue];
      });
    }
    return true;
  }

  bool BudgetAllows(int32_t q) {
    if (queue_open_[q] < 0) queue_open_[q] = st_.QueueBudgetOpen(q) ? 1 : 0;
    return queue_open_[q] == 1;
  }

  // The queues searched: the job's own, and those over their quota where they meet the job's
  // (the run's side of the meet; for flat queues, its queue); and for each, whether the job
  // reclaims from it and how far up its quota levels they meet (QueueBook::QuotaMeet).
  void MarkSearchedQueues(const std::vector<uint8_t>& fits) {
    const size_t n = st_.running_by_queue.size();
    searched_.assign(n, 0);
    reclaim_from_.assign(n, 0);
    meet_depth_.assign(n, 0);
    holder_level_.assign(n, -1);
    for (int32_t q = 0; q < static_cast<int32_t>(n); ++q) {
      QueueBook::Meet m = st_.queues.QuotaMeet(job_.queue, q);
      bool over = st_.OverQuota(m.holder);
      if (q != job_.queue && !over) continue;
      searched_[q] = over ? 2 : 1;
      reclaim_from_[q] = over && fits[m.taker_depth];
      meet_depth_[q] = m.taker_depth;
      holder_level_[q] = m.holder;
    }
  }

  // By queue: 0 not scanned, 1 every run, 2 only runs of the job's priority. The job's own
  // queue, and the other searched queues only if it may take from them (reclaim, lower
  // priority, LAS across queues); a run of any other queue could be neither a reclaim, a
  // priority nor a LAS victim. A queue that could offer only LAS victims contributes only its
  // runs of the job's priority, and none when none of them has attained the hysteresis
  // threshold or its budget is closed.
  std::vector<uint8_t> PlanScan() {
    DurationMs las_needs = INT64_MAX;  // GPU-ms a LAS victim must have attained
    const DurationMs threshold = LasThresholdAt(st_.config, j_, job_.key.level);
    if (borrowed_las_ && job_.aged && st_.config.corral.aged_may_displace) {
      las_needs = 0;
    } else if (borrowed_las_ && threshold > 0) {
      const double t = static_cast<double>(threshold);
      const double h = std::max(1.0, st_.config.corral.las_preempt_hysteresis);
      if (static_cast<double>(j_.attained_ms) * h < t) las_needs = static_cast<DurationMs>(h * t);
    }
    std::vector<uint8_t> scan(searched_.size(), 0);
    for (int32_t q = 0; q < static_cast<int32_t>(searched_.size()); ++q) {
      if (!searched_[q] || q >= static_cast<int32_t>(st_.victim_order_by_queue.size())) continue;
      if (st_.victim_order_by_queue[q].empty()) continue;
      if (q == job_.queue || reclaim_from_[q] || by_priority_) {
        scan[q] = 1;
        continue;
      }
      if (!borrowed_las_) continue;
      auto it = st_.victim_order_by_queue_priority.find({q, j_.priority});
      if (it == st_.victim_order_by_queue_priority.end() || it->second.max_attained < las_needs) {
        continue;
      }
      if (!BudgetAllows(q)) {
        denied_ = true;
        continue;
      }
      scan[q] = 2;
    }
    return scan;
  }

  // The positions in victim_order the plan names, in victim order: filtered from the whole
  // order when another queue is scanned whole, else merged from the queues' own lists.
  std::vector<int32_t> ScanPositions(const std::vector<uint8_t>& scan) const {
    bool other_whole = false;
    for (int32_t q = 0; q < static_cast<int32_t>(scan.size()); ++q) {
      other_whole = other_whole || (scan[q] == 1 && q != job_.queue);
    }
    std::vector<int32_t> positions;
    if (other_whole) {
      for (size_t i = 0; i < st_.victim_order.size(); ++i) {
        const RunEntry& r = *st_.victim_order[i].run;
        int32_t q = r.queue;
        if (q < 0 || q >= static_cast<int32_t>(scan.size()) || !scan[q]) continue;
        if (scan[q] == 2 && r.job.priority != j_.priority) continue;
        positions.push_back(static_cast<int32_t>(i));
      }
      return positions;
    }
    for (int32_t q = 0; q < static_cast<int32_t>(scan.size()); ++q) {
      if (scan[q] == 0) continue;
      const std::vector<int32_t>& of_q =
          scan[q] == 1 ? st_.victim_order_by_queue[q]
                       : st_.victim_order_by_queue_priority.at({q, j_.priority}).positions;
      positions.insert(positions.end(), of_q.begin(), of_q.end());
    }
    std::sort(positions.begin(), positions.end());
    return positions;
  }

  // The runs at `positions` this job may displace: reclaimed, or budgeted (lower priority,
  // LAS inside its queue or across queues) where their queue's budget is open.
  void ScanCandidates(const std::vector<int32_t>& positions) {
    st_.work += static_cast<int64_t>(positions.size());
    for (int32_t pos : positions) {
      RunEntry& r = *st_.victim_order[pos].run;
      int32_t q = r.queue;
      if (r.preempted_for != 0) continue;  // spared since the order was built
      bool over = searched_[q] == 2;
      bool lower = by_priority_ && Outranks(j_, r.job);
      bool reclaims = reclaim_from_[q];
      bool budgeted = lower || (q == job_.queue && las_ && LasVictim(st_, r, job_)) ||
                      (over && borrowed_las_ && BorrowedLasVictim(st_, r, job_));
      if (!reclaims && !budgeted) continue;
      if (!reclaims && !BudgetAllows(q)) {
        denied_ = true;
        continue;
      }
      if (!TouchesMatching(st_, r, s_, end_)) continue;
      cands_.push_back(&r);
      // Only candidates can be chosen, so only they need to be told apart.
      if (!reclaims) budgeted_runs_.insert(&r);
    }
  }

  // Displacement::kByKey (srtf, las): only runs with a strictly worse key, unless a search of a job
  // no harder than this one already failed in this pass.
  bool KeyCandidates() {
    if (st_.victim_order_pass != st_.pass) BuildVictimOrder(st_);
    st_.work += static_cast<int64_t>(st_.running.size());
    if (st_.victim_max_key_a <= job_.key.a) return false;
    for (const SchedState::FailedSearch& f : st_.failed_searches) {
      if (job_.key.a >= f.key_a && s_.replicas >= f.replicas && s_.gpus >= f.gpus &&
          s_.cpu >= f.cpu && s_.mem >= f.mem && s_.share == f.share &&
          s_.share_milli >= f.share_milli && s_.share_mem >= f.share_mem &&
          s_.isolation == f.isolation && j_.gpu_model == f.gpu_model &&
          j_.node_labels == f.node_labels && end_ >= f.end) {
        return false;
      }
    }
    for (const SchedState::VictimEntry& v : st_.victim_order) {
      if (v.key_a <= job_.key.a || v.run->preempted_for != 0) continue;
      if (TouchesMatching(st_, *v.run, s_, end_)) cands_.push_back(v.run);
    }
    return true;
  }

  // The job does not fit even with every candidate gone (see SchedState::failed_searches).
  bool Infeasible() {
    if (displacement_ != Displacement::kByClaim) {
      st_.failed_searches.push_back({s_.replicas, s_.gpus, s_.cpu, s_.mem, s_.share, s_.share_milli,
                                     s_.share_mem, s_.isolation, j_.gpu_model, j_.node_labels,
                                     job_.key.a, end_});
    }
    return false;
  }

  void Release(const RunEntry& r, int sign) {
    st_.what_if.Release(r.placement, st_.SlotsOf(r), r.job.per_replica, r.job.user, sign);
  }

  enum class Released { kFits, kNeverFits, kCutShort };
  // Releases candidates on the scratch, the least lost work first, until the job fits.
  // kNeverFits: no set of them fits; kCutShort: the pass's work budget ended the search.
  Released ReleaseUntilFits() {
    WhatIf& w = st_.what_if;
    std::map<int32_t, int64_t> taken;  // queue -> GPUs released from its subtree here
    bool all_released = true;          // not cut short by the pass budget
    size_t next_try = 1;
    for (RunEntry* r : cands_) {
      if (st_.work > st_.config.max_work_per_pass) {
        all_released = false;
        break;
      }
      bool own_lower = r->queue == job_.queue && Outranks(j_, r->job);
      if (displacement_ == Displacement::kByClaim && !own_lower && !LasVictim(st_, *r, job_)) {
        int32_t level = holder_level_[r->queue];
        if (!st_.OverQuota(level, taken[level])) continue;  // no longer over its quota
      }
      Release(*r, -1);
      released_.push_back(r);
      for (int32_t a = r->queue; a >= 0; a = st_.queues.Parent(a)) taken[a] += r->gpus;
      ++st_.work;
      // Trying after every release would make the search quadratic; the tries thin out.
      if (w.free_gpus() < s_.TotalGpus() || released_.size() < next_try) continue;
      ++st_.work;
      if (w.Fits()) return Released::kFits;
      next_try = released_.size() + std::max<size_t>(1, released_.size() / 8);
    }
    if (!released_.empty() && released_.size() < next_try && w.Fits()) return Released::kFits;
    // Capacity only grows as runs are released, so a failed last try means no set fits.
    return all_released && (released_.empty() || !w.Fits()) ? Released::kNeverFits
                                                            : Released::kCutShort;
  }

  void PlaceOnScratch(std::vector<ReplicaPlacement>* placement) {
    Placer placer(st_.model, &st_.work);
    st_.what_if.Apply();
    bool placed = placer.Place(s_, kUnknownTime, false, placement);
    st_.what_if.Restore();
    CORRAL_CHECK(placed,
                 "WhatIf::Fits disagrees with Placer::Place for job " + std::to_string(j_.id));
  }

  // Gives back what the placement does not need: runs off its nodes need no check (they
  // cannot change its nodes' room), then the costliest runs on its nodes while the placement
  // still fits. Only the scratch changes: the model still has every run bound.
  std::vector<RunEntry*> GiveBackUnneeded(const std::vector<ReplicaPlacement>& placement) {
    std::vector<NodeDemand> demand = DemandOf(st_.model, s_, placement);
    std::vector<RunEntry*> needed;
    for (RunEntry* r : released_) {
      if (TouchesAny(st_, *r, demand)) needed.push_back(r);
    }
    std::sort(needed.begin(), needed.end(), [&](auto* a, auto* b) { return Cheaper(st_, *b, *a); });
    std::vector<RunEntry*> chosen;
    for (RunEntry* r : needed) {
      ++st_.work;
      Release(*r, +1);
      if (!st_.what_if.Satisfied(demand)) {
        Release(*r, -1);
        chosen.push_back(r);
      }
    }
    return chosen;
  }

  // A decision may overshoot the cluster's runs-per-minute budget only when it is the first
  // in the window (so a gang needing many victims is delayed, never starved): otherwise the
  // budgeted victims must fit what is left.
  bool BudgetsTake(const std::vector<RunEntry*>& chosen) {
    if (displacement_ != Displacement::kByClaim || budgeted_runs_.empty()) return true;
    int64_t budgeted = 0;
    for (const RunEntry* r : chosen) budgeted += budgeted_runs_.count(r) ? 1 : 0;
    if (budgeted > 0 && !st_.ClusterBudgetTakes(budgeted)) {
      ++st_.budget_denied;
      return false;
    }
    return true;
  }

  SchedState& st_;
  const PendingEntry& job_;
  const PendingJob& j_;
  const Shape s_;
  const int64_t gpus_;
  const Displacement displacement_;
  // Victims on nodes an admin reservation keeps from the job free nothing it may use.
  const TimeMs end_;
  std::vector<RunEntry*> cands_;
  std::set<const RunEntry*> budgeted_runs_;  // kCorral: candidates taken for priority or LAS
  std::vector<RunEntry*> released_;
  // kCorral: the ways this job may take runs, and by queue what the search found.
  bool reclaim_ = false;
  bool las_ = false;
  bool by_priority_ = false;
  bool borrowed_las_ = false;
  bool denied_ = false;
  std::vector<int8_t> queue_open_;  // -1: not asked yet
  // By queue: 0 not searched, 1 searched and not over its quota, 2 searched and over.
  std::vector<uint8_t> searched_;
  std::vector<uint8_t> reclaim_from_;
  std::vector<int32_t> meet_depth_;
  std::vector<int32_t> holder_level_;  // the run's side of the meet, which must stay over quota
};

}  // namespace

bool FindVictims(SchedState& st, const PendingEntry& job, std::vector<JobId>* victims,
                 std::vector<ReplicaPlacement>* placement) {
  return VictimSearch(st, job).Find(victims, placement);
}

}  // namespace corral::sched
