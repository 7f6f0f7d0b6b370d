// Start-time estimates from the scheduler's own pass run forward on a fork of its state
// (start_estimate.h, ForwardStarts).
#include <utility>

#include <algorithm>
#include <cmath>
#include <deque>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "sched/arrival_history.h"
#include "sched/order_policy.h"
#include "sched/start_estimate.h"
#include "sched/state.h"

namespace corral::sched {
namespace {

// A job the forward run has not started within its bound gets the sweep's estimate, no earlier
// than the instant the run reached. Where the sweep would have started it by that instant,
// the run, with its arrivals and preemption, had not: it is told that instant's lead from now
// stretched by this. Told the instant itself, on the philly-users test half at 512 GPUs 61% of
// the `low` estimates and 32.7% of all started later than told; 2 is the smallest of 1.5, 1.75
// and 2 that brought the share of all within 30% there (29.9%, median error 224 to 233 s;
// docs/simulation.md). A later start of the sweep's own is left as it is (stretching those too
// doubled the p90 error on Philly).
inline constexpr double kPastBoundStretch = 2;

TimeMs PastBoundStart(TimeMs now, TimeMs sweep_start, TimeMs reached) {
  if (sweep_start > reached || reached <= now) return std::max(sweep_start, reached);
  const double lead = static_cast<double>(reached - now) * kPastBoundStretch;
  return now + static_cast<DurationMs>(lead);
}

// A job the forward run knows: running at `now`, or started by it.
struct FwdRun {
  const PendingJob* job = nullptr;  // in the live state (unchanged while the fork runs)
  DurationMs attained_extra = 0;    // GPU-ms attained in the fork's earlier runs (requeued)
  TimeMs started_at = 0;
  int64_t gpus = 0;
  TimeMs end = kUnknownTime;  // when it ends in the fork; kUnknownTime: never
  EstimateConfidence end_confidence = EstimateConfidence::kHigh;
  DurationMs left_when_requeued = 0;  // > 0: a victim back in the queue with this much to do
  bool running = false;
};

// The instants at which the fork is driven: ends (with their confidence) and wake-ups.
class FwdTimeline {
 public:
  void End(TimeMs at, JobId job) {
    if (at != kUnknownTime) ends_.push({at, job});
  }
  void Wake(TimeMs at, TimeMs now) {
    if (at > now && at != kUnknownTime) wakes_.insert(at);
  }
  // The next instant after `now` (kUnknownTime: nothing left to end or wake for), or an idle
  // step when that comes sooner.
  TimeMs Next(TimeMs now, DurationMs idle_step, bool* idle) const {
    TimeMs next = kUnknownTime;
    if (!ends_.empty()) next = ends_.top().first;
    auto w = wakes_.upper_bound(now);
    if (w != wakes_.end()) next = std::min(next, *w);
    *idle = false;
    if (next != kUnknownTime && idle_step > 0 && next > now + idle_step) {
      *idle = true;
      return now + idle_step;
    }
    return next;
  }
  // The ends due at or before `at` (some may be stale: the caller checks FwdRun::end).
  std::vector<JobId> EndsBy(TimeMs at) {
    std::vector<JobId> due;
    while (!ends_.empty() && ends_.top().first <= at) {
      due.push_back(ends_.top().second);
      ends_.pop();
    }
    return due;
  }

 private:
  using Entry = std::pair<TimeMs, JobId>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ends_;
  std::set<TimeMs> wakes_;
};

int64_t FwdGpusOf(const std::vector<ReplicaPlacement>& placement) {
  int64_t gpus = 0;
  for (const ReplicaPlacement& p : placement) {
    gpus += p.gpu_milli.empty() ? static_cast<int64_t>(p.gpus.size()) : 1;
  }
  return gpus;
}

std::vector<std::string> FwdNodesOf(const std::vector<ReplicaPlacement>& placement) {
  std::vector<std::string> nodes;
  for (const ReplicaPlacement& p : placement) nodes.push_back(p.node);
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  return nodes;
}

class ForwardRun {
 public:
  ForwardRun(SchedState& st, Scheduler& fork, TimeMs now, const EstimateOptions& options)
      : st_(st),
        fork_(fork),
        now_(now),
        options_(options),
        arrivals_(st.arrivals.Within(now, std::min(options.arrival_window_ms, kArrivalKeepMs)), now,
                  std::min(options.arrival_window_ms, kArrivalKeepMs), options.arrival_step_ms,
                  kExpectedArrivalWindows) {}

  std::vector<StartEstimate> Run();

 private:
  void Seed();
  // A preemptible run may become a victim once it has run the minimum runtime, and (LAS) as
  // its service crosses each level threshold times the hysteresis: a pass then.
  void WakeAsItRuns(const PendingJob& job, DurationMs attained, int64_t gpus, TimeMs started_at,
                    TimeMs t);
  // The expected arrivals due by `t` join the fork's queue.
  void ArriveBy(TimeMs t);
  // The next instant to drive the fork at after `t`: an end, a wake-up or an idle step
  // (`idle`), or an expected arrival before them (`arrival`); kUnknownTime once nothing is
  // left to end or wake for (arrivals alone start nothing that was waiting).
  TimeMs NextInstant(TimeMs t, bool* idle, bool* arrival) const;
  // Passes at `t` until one decides nothing; false once the budget is spent.
  bool PassesAt(TimeMs t, EstimateConfidence instant);
  void Placed(const PlaceDecision& p, TimeMs t, EstimateConfidence instant);
  void Preempted(JobId victim, TimeMs t);
  // Ends the runs due by `t`: the weakest confidence of the ends that are really due, and
  // whether one was a victim's.
  EstimateConfidence EndsAt(TimeMs t, bool* victim_ended);
  bool Done() const { return waiting_ == 0; }
  std::vector<StartEstimate> Results(TimeMs reached, bool budget_spent);

  SchedState& st_;
  Scheduler& fork_;
  const TimeMs now_;
  const EstimateOptions& options_;
  std::unordered_map<JobId, FwdRun> runs_;
  std::unordered_map<JobId, StartEstimate> started_;  // first start of each pending job
  std::vector<JobId> pending_;                        // pending at now, ascending
  std::unordered_set<JobId> watched_;                 // those whose start stops the run
  std::unordered_set<JobId> victims_;                 // ending as victims, at their end
  int64_t waiting_ = 0;                               // watched jobs not started yet
  int64_t passes_ = 0;
  int64_t work_ = 0;  // of the passes run
  FwdTimeline timeline_;
  ExpectedArrivals arrivals_;
  std::deque<PendingJob> arrived_;  // the expected arrivals injected (FwdRun::job points here)
  bool arrivals_placed_ = false;    // an expected arrival has started in the fork
};

void ForwardRun::Seed() {
  const SchedulerConfig& cfg = st_.config;
  const bool preempts = cfg.preemption;
  for (const auto& [id, r] : st_.running) {
    FwdRun& run = runs_[id];
    run.job = &r.job;
    run.started_at = r.started_at;
    run.gpus = r.gpus;
    run.running = true;
    if (r.preempted_for != 0) {
      // A victim in its grace: its GPUs free once it has stopped.
      run.end = now_ + options_.victim_grace_ms;
      run.end_confidence = EstimateConfidence::kMedium;
      run.left_when_requeued = RunLeft(st_, r, now_, options_.use_predictions).ms;
      victims_.insert(id);
    } else {
      const EstimatedLeft left = RunLeft(st_, r, now_, options_.use_predictions);
      run.end = left.ms == kUnknownTime ? kUnknownTime : now_ + left.ms;
      run.end_confidence = left.confidence;
      if (preempts) WakeAsItRuns(r.job, r.job.attained_ms, r.gpus, r.started_at, now_);
    }
    timeline_.End(run.end, id);
  }
  for (const auto& [name, r] : st_.node_reservations) {
    timeline_.Wake(r.start, now_);
    timeline_.Wake(r.end, now_);
  }
  pending_ = st_.pending.Ids();
  for (JobId id : pending_) {
    FwdRun& run = runs_[id];
    run.job = &st_.pending.Find(id)->job;
  }
  const std::vector<JobId>& watch =
      options_.stop_when_started.empty() ? pending_ : options_.stop_when_started;
  for (JobId id : watch) {
    if (st_.pending.Find(id) != nullptr && watched_.insert(id).second) ++waiting_;
  }
}

void ForwardRun::WakeAsItRuns(const PendingJob& job, DurationMs attained, int64_t gpus,
                              TimeMs started_at, TimeMs t) {
  if (!job.preemptible) return;
  const SchedulerConfig& cfg = st_.config;
  timeline_.Wake(started_at + cfg.min_runtime_before_preempt_ms, t);
  const std::vector<DurationMs>* thresholds = st_.policy->LevelsAsItRuns(job);
  if (thresholds == nullptr) return;
  const double h = std::max(1.0, st_.policy->LevelHysteresis());
  const double g = static_cast<double>(std::max<int64_t>(1, gpus));
  for (DurationMs threshold : *thresholds) {
    const double need = h * static_cast<double>(threshold) - static_cast<double>(attained);
    if (need <= 0) continue;
    timeline_.Wake(started_at + static_cast<DurationMs>(std::ceil(need / g)), t);
  }
}

void ForwardRun::Placed(const PlaceDecision& p, TimeMs t, EstimateConfidence instant) {
  FwdRun& run = runs_[p.job];
  if (run.job == nullptr) return;  // not a job the live state knows: cannot happen
  run.running = true;
  run.started_at = t;
  run.gpus = FwdGpusOf(p.placement);
  DurationMs left = run.left_when_requeued;
  EstimateConfidence duration_confidence = run.end_confidence;
  if (left == 0) {
    const EstimatedLeft l = PendingLeft(st_, *run.job, options_.use_predictions);
    left = l.ms;
    duration_confidence = l.confidence;
  }
  run.end = left == kUnknownTime ? kUnknownTime : t + left;
  run.end_confidence = Weakest(instant, duration_confidence);
  timeline_.End(run.end, p.job);
  if (st_.config.preemption) {
    WakeAsItRuns(*run.job, run.job->attained_ms + run.attained_extra, run.gpus, t, t);
  }
  if (p.job >= kSyntheticJobIdBase) {
    arrivals_placed_ = true;
    return;
  }
  auto [it, first] = started_.try_emplace(p.job);
  if (!first) return;
  // After expected arrivals took GPUs, a start rests on the arrival model too.
  it->second = {p.job, t, FwdNodesOf(p.placement),
                arrivals_placed_ ? Weakest(instant, EstimateConfidence::kMedium) : instant};
  if (watched_.count(p.job) > 0) --waiting_;
}

void ForwardRun::Preempted(JobId victim, TimeMs t) {
  auto it = runs_.find(victim);
  if (it == runs_.end()) return;
  FwdRun& run = it->second;
  const TimeMs stop = t + options_.victim_grace_ms;
  // What it still had to do, done again after the requeue (lost work is not modelled).
  run.left_when_requeued =
      run.end == kUnknownTime ? kUnknownTime : std::max<DurationMs>(1, run.end - stop);
  run.end = stop;
  run.end_confidence = Weakest(run.end_confidence, EstimateConfidence::kMedium);
  victims_.insert(victim);
  timeline_.End(stop, victim);
}

EstimateConfidence ForwardRun::EndsAt(TimeMs t, bool* victim_ended) {
  EstimateConfidence instant = EstimateConfidence::kHigh;
  *victim_ended = false;
  for (JobId id : timeline_.EndsBy(t)) {
    auto it = runs_.find(id);
    if (it == runs_.end() || !it->second.running || it->second.end > t) continue;  // stale
    FwdRun& run = it->second;
    instant = Weakest(instant, run.end_confidence);
    run.running = false;
    fork_.RemoveRunning(id);
    if (victims_.erase(id) > 0) {
      *victim_ended = true;
      // Requeued with the service it attained, as the driver re-adds a victim.
      run.attained_extra += run.gpus * std::max<DurationMs>(0, t - run.started_at);
      PendingJob again = *run.job;
      again.attained_ms += run.attained_extra;
      fork_.AddPending(again);
    }
  }
  return instant;
}

void ForwardRun::ArriveBy(TimeMs t) {
  while (arrivals_.Next() != kUnknownTime && arrivals_.Next() <= t) {
    arrived_.push_back(arrivals_.Take());
    const PendingJob& job = arrived_.back();
    runs_[job.id].job = &job;
    fork_.AddPending(job);
  }
}

TimeMs ForwardRun::NextInstant(TimeMs t, bool* idle, bool* arrival) const {
  *arrival = false;
  TimeMs next = timeline_.Next(t, options_.idle_step_ms, idle);
  if (next == kUnknownTime) return next;
  const TimeMs arrive = arrivals_.Next();
  if (arrive != kUnknownTime && arrive < next) {
    *idle = false;
    *arrival = true;
    return arrive;
  }
  return next;
}

bool ForwardRun::PassesAt(TimeMs t, EstimateConfidence instant) {
  for (int32_t k = 0; k < std::max(1, options_.max_passes_per_instant); ++k) {
    if (passes_ >= options_.max_passes || work_ >= options_.max_work) return false;
    ++passes_;
    Decisions d = fork_.Schedule(t);
    work_ += fork_.GetStats().last_pass_work;
    for (const PlaceDecision& p : d.place) Placed(p, t, instant);
    for (const PreemptDecision& p : d.preempt) Preempted(p.job, t);
    if (d.place.empty() && d.preempt.empty()) return true;
    if (Done()) return true;
    if (options_.victim_grace_ms == 0 && !d.preempt.empty()) {
      bool victim_ended = false;
      instant = Weakest(instant, EndsAt(t, &victim_ended));
      if (victim_ended) instant = Weakest(instant, EstimateConfidence::kMedium);
    }
  }
  return true;
}

std::vector<StartEstimate> ForwardRun::Results(TimeMs reached, bool budget_spent) {
  std::vector<StartEstimate> out;
  std::vector<JobId> missing;
  for (JobId id : pending_) {
    auto it = started_.find(id);
    if (it != started_.end()) {
      out.push_back(std::move(it->second));
    } else {
      missing.push_back(id);
    }
  }
  if (missing.empty()) return out;
  if (!budget_spent && !options_.stop_when_started.empty()) {
    // Stopped early: the others are not asked about.
    for (JobId id : missing) out.push_back({id, kUnknownTime, {}, EstimateConfidence::kLow});
    return out;
  }
  // Past the bound: the sweep's estimate, no earlier than where the run stopped. (Not past
  // it, nothing was left to end: those never start in this model, no estimate.)
  std::unordered_map<JobId, StartEstimate> sweep;
  if (budget_spent) {
    for (StartEstimate& e : EstimateFromState(st_, now_, options_)) sweep[e.job] = std::move(e);
  }
  for (JobId id : missing) {
    StartEstimate e{id, kUnknownTime, {}, EstimateConfidence::kLow};
    auto it = sweep.find(id);
    if (it != sweep.end() && it->second.start != kUnknownTime) {
      e = std::move(it->second);
      e.start = PastBoundStart(now_, e.start, reached);
      e.confidence = EstimateConfidence::kLow;
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<StartEstimate> ForwardRun::Run() {
  Seed();
  TimeMs t = now_;
  EstimateConfidence instant = EstimateConfidence::kHigh;
  bool budget_spent = false;
  while (true) {
    if (!PassesAt(t, instant)) {
      budget_spent = true;
      break;
    }
    if (Done()) break;
    bool idle = false;
    bool arrival = false;
    const TimeMs next = NextInstant(t, &idle, &arrival);
    // Nothing left to end or wake for: what has not started never will in this model.
    if (next == kUnknownTime) break;
    t = next;
    bool victim_ended = false;
    instant = EndsAt(t, &victim_ended);
    ArriveBy(t);
    if (victim_ended) instant = Weakest(instant, EstimateConfidence::kMedium);
    // An idle step's or an arrival's instant is the model's, not a known one.
    if (idle || arrival) instant = Weakest(instant, EstimateConfidence::kMedium);
  }
  return Results(t, budget_spent);
}

}  // namespace

std::vector<StartEstimate> ForwardStarts(SchedState& st, Scheduler& fork, TimeMs now,
                                         const EstimateOptions& options) {
  return ForwardRun(st, fork, now, options).Run();
}

}  // namespace corral::sched
