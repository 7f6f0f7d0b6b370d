// The scheduler's state as the input of a start-time sweep (start_estimate.h).
#include <utility>

#include <algorithm>
#include <cmath>
#include <map>

#include "sched/order_policy.h"
#include "sched/pass_order.h"
#include "sched/run_time_quantiles.h"
#include "sched/start_estimate.h"
#include "sched/state.h"

namespace corral::sched {
namespace {

int32_t GpusPerReplica(const PendingJob& j) {
  return j.per_replica.IsShare() ? 1 : j.per_replica.WholeGpus();
}

// Whether a job has run longer than all its prediction allowed: longer than every run time of
// its owner's history, or than its predicted run time. What is left of it is then a guess (as
// long again as it has run, order_policy.h), which a time limit beats.
bool Outlived(const PendingJob& j, DurationMs attained_gpu_ms) {
  DurationMs done = attained_gpu_ms / std::max<int64_t>(1, TotalGpus(j));
  if (!j.run_quantiles.empty()) return done >= j.run_quantiles.get().at.back();
  return j.predicted_ms > 0 && done >= j.predicted_ms;
}

// How long a job still runs, and what that rests on.
struct Left {
  DurationMs ms = kUnknownTime;
  EstimateConfidence confidence = EstimateConfidence::kHigh;
};

// A prediction's worth: its owner's ended jobs behind it (PendingJob::prediction_jobs).
EstimateConfidence PredictionConfidence(const PendingJob& j) {
  return j.prediction_jobs >= kConfidentPredictionJobs ? EstimateConfidence::kMedium
                                                       : EstimateConfidence::kLow;
}

// What is left of a job that has run `done` ms, as an estimate counts on it: with a run-time
// distribution, the mean of what its owner's runs that outlived `done` had left (the policy
// orders by their median, PredictionConfig::rule: the median ranks jobs as well, but run times
// are skewed, so a run ends after its median more often than not, and estimates resting on it
// told too early a time: on the philly-users test half at 640 GPUs 41.6% started more than a
// minute later than told, 28.0% with the mean; docs/simulation.md). Without one, a run under
// way (`under_way`) ends at the geometric mean of what the last runs of its keys that outlived
// `done` had left (run_history.h: Philly's runs, predicted by their queue's running mean alone,
// told a median error of 273 s at 640 GPUs, 205 s so); else, and a job not started yet, at the
// policy's prediction (the recent runs for those too made the estimates worse there).
DurationMs CentreRemainingMs(const SchedulerConfig& cfg, const RunHistory& history,
                             const PendingJob& j, DurationMs attained_gpu_ms, bool under_way) {
  const DurationMs done = attained_gpu_ms / std::max<int64_t>(1, TotalGpus(j));
  if (!j.run_quantiles.empty()) {
    return ConditionalRemainingMs(j.run_quantiles.get(), done, PredictionRule::kMean, 0);
  }
  // A true duration (the simulator's oracle_duration_ms: its baselines and --predict oracle)
  // keeps the prediction: an oracle is not to be second-guessed.
  if (under_way && j.oracle_duration_ms <= 0) {
    const DurationMs recent = history.RemainingMs(j, done);
    if (recent != kUnknownTime) return recent;
  }
  return PredictedRemainingMs(cfg, j, attained_gpu_ms);
}

// What is left of a job, as an estimate counts on it: the centre above, or, for a run under way,
// the rule that was closest lately for its owner's runs (RunHistory::RuleFor: as long again as
// it has run, or the geometric mean of that and the centre, where those were closer). Heavy
// tails: on the philly-users test half at 640 GPUs the median error fell from 168 to 159 s, on
// Philly at 768 GPUs from 166 to 157 s (the rule alone; docs/simulation.md). A true duration is
// kept.
DurationMs EstimatedRemainingMs(const SchedulerConfig& cfg, const RunHistory& history,
                                const PendingJob& j, DurationMs attained_gpu_ms, bool under_way) {
  const DurationMs centre = CentreRemainingMs(cfg, history, j, attained_gpu_ms, under_way);
  if (!under_way || j.oracle_duration_ms > 0 || centre <= 0) return centre;
  const DurationMs done = attained_gpu_ms / std::max<int64_t>(1, TotalGpus(j));
  return ApplyRemainingRule(history.RuleFor(j), centre, done);
}

// How long a job that has attained `attained_gpu_ms` before now still runs (`under_way`: a run
// now, not a job the estimate starts): its predicted remaining time where known and shorter than
// `limit_left` (kUnknownTime: no limit); what its limit leaves once it has outlived its
// prediction (a bound: kHigh).
Left Remaining(const SchedulerConfig& cfg, const RunHistory& history, const PendingJob& j,
               DurationMs attained_gpu_ms, DurationMs limit_left, bool use_predictions,
               bool under_way) {
  Left left{limit_left, EstimateConfidence::kHigh};
  if (limit_left != kUnknownTime && Outlived(j, attained_gpu_ms)) return left;
  if (use_predictions && HasPrediction(j)) {
    DurationMs predicted = EstimatedRemainingMs(cfg, history, j, attained_gpu_ms, under_way);
    if (predicted > 0 && predicted < left.ms) left = {predicted, PredictionConfidence(j)};
  }
  return left;
}

// A run's ranks as its service grows, from `attained` GPU-ms on `gpus` GPUs at `now`: the
// number of thresholds T with service >= h x T (the LAS level below which it may be displaced,
// preemption.cc LasLevelsAllow; h = 1: its kLas level), once preemptible and at each crossing.
void RankAsItRuns(const std::vector<DurationMs>& thresholds, double hysteresis, DurationMs attained,
                  int64_t gpus, TimeMs now, EstimateRun* run) {
  const double h = std::max(1.0, hysteresis);
  const DurationMs at_preemptible = attained + gpus * (run->preemptible_at - now);
  run->rank = 0;
  for (DurationMs t : thresholds) {
    const double need = h * static_cast<double>(t);
    if (static_cast<double>(at_preemptible) >= need) {
      ++run->rank;
      continue;
    }
    const double wait_ms = (need - static_cast<double>(at_preemptible)) / static_cast<double>(gpus);
    run->later_ranks.push_back({run->preemptible_at + static_cast<DurationMs>(std::ceil(wait_ms)),
                                run->rank + static_cast<int64_t>(run->later_ranks.size()) + 1});
  }
}

// Whether a pending job may displace LAS victims at all: its level has a threshold above it,
// and it is far enough below it (hysteresis).
bool MayDisplace(const SchedulerConfig& c, const PendingEntry& e) {
  const DurationMs t = LasThresholdAt(c, e.job, e.key.level);
  if (t <= 0) return false;
  const double h = std::max(1.0, c.corral.las_preempt_hysteresis);
  return static_cast<double>(e.job.attained_ms) * h < static_cast<double>(t);
}

}  // namespace

EstimatedLeft RunLeft(const SchedState& st, const RunEntry& r, TimeMs now, bool use_predictions) {
  const int64_t gpus = std::max<int64_t>(1, r.gpus);
  const DurationMs attained =
      r.job.attained_ms + gpus * std::max<DurationMs>(0, now - r.started_at);
  const DurationMs limit_left =
      r.expected_end == kUnknownTime ? kUnknownTime : std::max<DurationMs>(0, r.expected_end - now);
  const Left left =
      Remaining(st.config, st.ended_runs, r.job, attained, limit_left, use_predictions, true);
  return {left.ms, left.confidence};
}

EstimatedLeft PendingLeft(const SchedState& st, const PendingJob& j, bool use_predictions) {
  const DurationMs limit = j.time_limit_ms > 0 ? j.time_limit_ms : kUnknownTime;
  const Left left =
      Remaining(st.config, st.ended_runs, j, j.attained_ms, limit, use_predictions, false);
  return {left.ms == kUnknownTime ? kUnknownTime : std::max<DurationMs>(1, left.ms),
          left.confidence};
}

namespace {

// The sweep's input, made from the scheduler's state a step at a time: the nodes and their
// free GPUs, the releases of reserved nodes and of running runs, and the pending jobs in pass
// order.
class SweepInput {
 public:
  SweepInput(SchedState& st, TimeMs now, const EstimateOptions& options)
      : st_(st),
        cfg_(st.config),
        now_(now),
        options_(options),
        // Preemption: kCorral's LAS victims inside a queue and priority (rank class), ranked by
        // the level below which they may be displaced; kSrtf and kLas by key, one class.
        policy_(*st.policy),
        corral_las_(cfg_.preemption && policy_.displacement() == Displacement::kByClaim &&
                    cfg_.corral.las_within_queue && !cfg_.las_thresholds_gpu_ms.empty()),
        baseline_(cfg_.preemption && policy_.displacement() == Displacement::kByKey) {}

  std::vector<StartEstimate> Estimate() {
    AddNodes();
    HoldReservedNodes();
    for (const auto& [id, r] : st_.running) AddRunning(r);
    AddPending();
    std::vector<StartEstimate> out =
        SweepStarts(nodes_, releases_, jobs_, now_, runs_, /*not_now=*/!st_.changed_since_pass);
    for (StartEstimate& e : in_reservations_) out.push_back(std::move(e));
    return out;
  }

 private:
  void AddNodes() {
    index_of_slot_.assign(st_.model.slot_count(), -1);
    for (int32_t s = 0; s < st_.model.slot_count(); ++s) {
      const NodeSlot& n = st_.model.slot(s);
      if (!n.live || !n.info.schedulable) continue;
      index_of_slot_[s] = static_cast<int32_t>(nodes_.size());
      nodes_.push_back({n.info.name, n.common_model, n.free_gpus});
    }
  }

  // A node of an admin reservation not over yet gives no GPU before the reservation ends: an
  // upper bound (jobs that would end before it starts may still backfill there).
  void HoldReservedNodes() {
    reserved_until_.assign(nodes_.size(), kUnknownTime);
    for (const auto& [name, r] : st_.node_reservations) {
      if (r.end <= now_) continue;
      for (const std::string& node : r.nodes) {
        int32_t slot = st_.model.Find(node);
        if (slot < 0 || index_of_slot_[slot] < 0) continue;
        TimeMs& until = reserved_until_[index_of_slot_[slot]];
        until = until == kUnknownTime ? r.end : std::max(until, r.end);
      }
    }
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (reserved_until_[i] == kUnknownTime) continue;
      if (nodes_[i].free_gpus > 0) {
        releases_.push_back({reserved_until_[i], static_cast<int32_t>(i), nodes_[i].free_gpus});
      }
      nodes_[i].free_gpus = 0;
    }
  }

  // How a running run may be displaced, if it may: its rank class and rank.
  EstimateRun RunAsVictim(const RunEntry& r, DurationMs attained, int64_t gpus) {
    EstimateRun run;
    run.preemptible_at = std::max(now_, r.started_at + cfg_.min_runtime_before_preempt_ms);
    if (!r.job.preemptible || r.preempted_for != 0 || r.aged || !(corral_las_ || baseline_)) {
      return run;
    }
    run.rank_class = corral_las_ ? class_of_
                                       .try_emplace({r.queue, r.job.priority},
                                                    static_cast<int32_t>(class_of_.size()))
                                       .first->second
                                 : 0;
    if (const std::vector<DurationMs>* levels = policy_.LevelsAsItRuns(r.job)) {
      RankAsItRuns(*levels, policy_.LevelHysteresis(), attained, gpus, now_, &run);
    } else {
      run.rank = policy_.Key(r.job, attained).a;  // srtf: its key only falls
    }
    if (corral_las_ && cfg_.corral.predict.on && HasPrediction(r.job)) {
      run.predicted_left_ms = std::max<DurationMs>(1, PredictedRemainingMs(cfg_, r.job, attained));
    }
    return run;
  }

  // A running run, and the GPUs it releases on each of its nodes when it is expected to end.
  void AddRunning(const RunEntry& r) {
    int64_t gpus = std::max<int64_t>(1, r.gpus);
    DurationMs attained = r.job.attained_ms + gpus * std::max<DurationMs>(0, now_ - r.started_at);
    const int32_t run_index = static_cast<int32_t>(runs_.size());
    runs_.push_back(RunAsVictim(r, attained, gpus));
    DurationMs limit_left = r.expected_end == kUnknownTime
                                ? kUnknownTime
                                : std::max<DurationMs>(0, r.expected_end - now_);
    const Left left = Remaining(cfg_, st_.ended_runs, r.job, attained, limit_left,
                                options_.use_predictions, true);
    TimeMs end = left.ms == kUnknownTime ? kUnknownTime : now_ + left.ms;
    const std::vector<int32_t>& slots = st_.SlotsOf(r);
    for (size_t k = 0; k < r.placement.size() && k < slots.size(); ++k) {
      int32_t slot = slots[k];
      if (slot < 0 || index_of_slot_[slot] < 0) continue;
      const ReplicaPlacement& p = r.placement[k];
      int32_t g = p.gpu_milli.empty() ? static_cast<int32_t>(p.gpus.size()) : 0;
      int32_t i = index_of_slot_[slot];
      const bool reserved = reserved_until_[i] != kUnknownTime;
      TimeMs at = !reserved || end == kUnknownTime ? end : std::max(end, reserved_until_[i]);
      // Preempting it frees nothing on a reserved node before the reservation ends: that part
      // is no victim's, it is released then.
      if (g > 0) {
        // Held until a reservation's end: that instant is known.
        releases_.push_back({at, i, g, reserved ? -1 : run_index,
                             at == end ? left.confidence : EstimateConfidence::kHigh});
      }
    }
  }

  // A job waiting for a reservation starts when it does, on its nodes (if it exists and takes
  // jobs).
  StartEstimate InReservation(const PendingJob& j) const {
    auto r = st_.node_reservations.find(j.reservation);
    StartEstimate est{j.id, kUnknownTime, {}};
    if (r != st_.node_reservations.end() && !r->second.maintenance && r->second.end > now_) {
      est.start = std::max(now_, r->second.start);
      est.nodes = r->second.nodes;
      std::sort(est.nodes.begin(), est.nodes.end());
    }
    return est;
  }

  EstimateJob JobToPlace(const PendingEntry& e) {
    const PendingJob& j = e.job;
    DurationMs limit = j.time_limit_ms > 0 ? j.time_limit_ms : kUnknownTime;
    const Left left =
        Remaining(cfg_, st_.ended_runs, j, j.attained_ms, limit, options_.use_predictions, false);
    EstimateJob job = {j.id,
                       j.replicas,
                       GpusPerReplica(j),
                       j.max_replicas_per_node,
                       j.gpu_model,
                       left.ms == kUnknownTime ? 0 : std::max<DurationMs>(1, left.ms)};
    job.duration_confidence = left.confidence;
    if (corral_las_ && MayDisplace(cfg_, e)) {
      auto c = class_of_.find({e.queue, j.priority});
      if (c != class_of_.end()) {
        job.rank_class = c->second;
        job.rank = e.key.level;
        if (cfg_.corral.predict.on && HasPrediction(j)) {
          job.predicted_left_ms = std::max<DurationMs>(1, e.key.pred);
        }
      }
    } else if (baseline_) {
      job.rank_class = 0;
      job.rank = e.key.a;
    }
    return job;
  }

  // The pending jobs in the pass's order (at most options.max_jobs of them placed).
  void AddPending() {
    PassOrder order(st_.pending, st_.queues);
    while (PendingEntry* e = order.Next()) {
      if (!e->job.reservation.empty()) {
        in_reservations_.push_back(InReservation(e->job));
      } else if (static_cast<int64_t>(jobs_.size()) < options_.max_jobs) {
        jobs_.push_back(JobToPlace(*e));
      }
      st_.pending.HideJob(e);
      order.Done();
    }
    st_.pending.RestoreAll();
  }

  SchedState& st_;
  const SchedulerConfig& cfg_;
  const TimeMs now_;
  const EstimateOptions& options_;
  const Policy& policy_;
  const bool corral_las_, baseline_;
  std::vector<EstimateNode> nodes_;
  std::vector<int32_t> index_of_slot_;
  std::vector<TimeMs> reserved_until_;
  std::vector<EstimateRelease> releases_;
  std::map<std::pair<int32_t, int32_t>, int32_t> class_of_;  // (queue, priority)
  std::vector<EstimateRun> runs_;
  std::vector<EstimateJob> jobs_;
  std::vector<StartEstimate> in_reservations_;
};

}  // namespace

std::vector<StartEstimate> EstimateFromState(SchedState& st, TimeMs now,
                                             const EstimateOptions& options) {
  return SweepInput(st, now, options).Estimate();
}

}  // namespace corral::sched
