#include "sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <queue>
#include <random>
#include <set>
#include <tuple>

#include "sched/job_input.h"

namespace corral::sim {

bool IsPreemptivePolicy(sched::OrderPolicy p) {
  return p == sched::OrderPolicy::kSrtf || p == sched::OrderPolicy::kLas ||
         p == sched::OrderPolicy::kCorral;
}

std::map<std::string, int32_t> QuotasByDemand(const std::vector<TraceJob>& jobs,
                                              int64_t total_gpus) {
  std::map<std::string, double> demand;
  double sum = 0;
  for (const TraceJob& j : jobs) {
    double d = static_cast<double>(j.duration_ms) * j.num_gpus;
    demand[j.queue] += d;
    sum += d;
  }
  std::map<std::string, int32_t> out;
  if (demand.empty()) return out;
  if (sum <= 0) {  // only zero-length jobs: split evenly
    for (auto& [q, d] : demand) d = 1, sum += 1;
  }
  int64_t given = 0;
  std::vector<std::tuple<double, std::string>> rest;  // (-remainder, name)
  for (const auto& [q, d] : demand) {
    double exact = d / sum * static_cast<double>(total_gpus);
    auto whole = static_cast<int32_t>(exact);
    out[q] = whole;
    given += whole;
    rest.emplace_back(-(exact - whole), q);
  }
  std::sort(rest.begin(), rest.end());
  for (size_t i = 0; given < total_gpus && i < rest.size(); ++i, ++given) {
    ++out[std::get<1>(rest[i])];
  }
  return out;
}

namespace {

enum class JobPhase { kFuture, kPending, kRunning, kStopping, kDone, kRejected };

struct SimJob {
  JobPhase phase = JobPhase::kFuture;
  // The job as the head would hold it (spec and run history): the scheduler's input is made
  // from it by sched::ToPendingJob, the head's own translation.
  Job job;
  DurationMs progress_ms = 0;         // checkpointed useful work
  DurationMs run_progress_start = 0;  // progress_ms when the current run started
  TimeMs run_start = 0;
  bool resumed = false;     // this run follows a preemption: it pays the restart overhead
  uint64_t generation = 0;  // invalidates a stale completion event
  size_t run_record = 0;    // index of the current run in SimResult::runs
  int32_t replicas = 1;
  int32_t gpus_per_replica = 0;
  bool predicted_by_name = false;  // at some queueing, from its (user, name) history
};

// At one instant: ends and timeouts, releases, then node failures and repairs (by seq).
enum class EventKind { kEnd = 0, kRelease = 1, kTimeout = 2, kNodeFail = 3, kNodeRepair = 4 };

struct Event {
  TimeMs at = 0;
  uint64_t seq = 0;
  EventKind kind = EventKind::kEnd;
  size_t job = 0;  // the node's index for node events
  uint64_t generation = 0;
  bool operator>(const Event& o) const { return std::tie(at, seq) > std::tie(o.at, o.seq); }
};

// Splits a request into a gang of whole-node-sized replicas: the fewest replicas r such that
// r divides the GPU count and each replica fits one node.
void Shape(int32_t gpus, int32_t per_node, int32_t* replicas, int32_t* per_replica) {
  if (gpus <= per_node) {
    *replicas = 1, *per_replica = gpus;
    return;
  }
  for (int32_t r = (gpus + per_node - 1) / per_node; r <= gpus; ++r) {
    if (gpus % r == 0 && gpus / r <= per_node) {
      *replicas = r, *per_replica = gpus / r;
      return;
    }
  }
  *replicas = gpus, *per_replica = 1;
}

class Loop {
 public:
  Loop(const std::vector<TraceJob>& jobs, const SimConfig& config)
      : jobs_(jobs),
        config_(config),
        sched_(MakeConfig(config)),
        state_(jobs.size()),
        estimator_(config.predict.estimator),
        rng_(config.failure_seed) {
    result_.jobs.resize(jobs.size());
    if (config.refresh_sibling_predictions) {
      for (size_t i = 0; i < jobs.size(); ++i) {
        if (!jobs[i].user.empty() && !jobs[i].name.empty()) {
          siblings_[{jobs[i].user, jobs[i].name}].push_back(i);
        }
      }
    }
  }

  Result<SimResult> Run() {
    const ClusterSpec& c = config_.cluster;
    if (c.nodes <= 0 || c.gpus_per_node <= 0) {
      return InvalidArgument("the cluster needs --nodes > 0 and --gpus-per-node > 0");
    }
    int32_t racks = std::max(1, std::min(c.racks, c.nodes));
    int32_t nodes_per_rack = (c.nodes + racks - 1) / racks;
    for (int32_t n = 0; n < c.nodes; ++n) {
      sched::NodeInfo node;
      char name[32];
      std::snprintf(name, sizeof name, "n%05d", n);
      node.name = name;
      char rack[32];
      std::snprintf(rack, sizeof rack, "r%03d", n / nodes_per_rack);
      node.labels["rack"] = rack;
      node.labels["gpu_model"] = "V100";
      node.cpu_milli = 64 * 1000;
      node.memory_mb = 512 * 1024;
      for (int32_t g = 0; g < c.gpus_per_node; ++g) {
        Gpu gpu;
        gpu.index = g;
        gpu.uuid = node.name + "-gpu" + std::to_string(g);
        gpu.model = "V100";
        gpu.memory_mb = 32 * 1024;
        gpu.group = c.gpus_per_node >= 8 ? g / (c.gpus_per_node / 2) : 0;
        node.gpus.push_back(gpu);
      }
      sched_.UpsertNode(node);
      nodes_.push_back(std::move(node));
    }
    if (config_.node_mtbf_ms > 0) {
      for (size_t n = 0; n < nodes_.size(); ++n) {
        events_.push({UpTime(0), seq_++, EventKind::kNodeFail, n, 0});
      }
    }
    result_.total_gpus = static_cast<int64_t>(c.nodes) * c.gpus_per_node;
    if (config_.policy == sched::OrderPolicy::kCorral) {
      result_.quotas =
          config_.quotas.empty() ? QuotasByDemand(jobs_, result_.total_gpus) : config_.quotas;
      for (const auto& [name, quota] : result_.quotas) {
        QueueConfig q;
        q.name = name;
        q.quota_gpus = quota;
        sched_.SetQueue(q);
      }
    }
    for (size_t i = 0; i < jobs_.size(); ++i) {
      Shape(jobs_[i].num_gpus, c.gpus_per_node, &state_[i].replicas, &state_[i].gpus_per_replica);
      state_[i].job = MakeJob(i);
    }

    size_t next_arrival = 0;
    while (true) {
      // Node events go on forever; the simulation ends with its jobs.
      if (next_arrival >= jobs_.size() && pending_ == 0 && running_ == 0) break;
      TimeMs now = kNever;
      if (next_arrival < jobs_.size()) now = jobs_[next_arrival].submit_ms;
      if (!events_.empty()) now = std::min(now, events_.top().at);
      if (next_tick_ != kNever) now = std::min(now, next_tick_);
      if (now == kNever) break;
      next_tick_ = kNever;
      while (!events_.empty() && events_.top().at == now) {
        Event e = events_.top();
        events_.pop();
        switch (e.kind) {
          case EventKind::kEnd:
            if (e.generation == state_[e.job].generation) Finish(e.job, now, false);
            break;
          case EventKind::kTimeout:
            if (e.generation == state_[e.job].generation) Finish(e.job, now, true);
            break;
          case EventKind::kRelease:
            if (e.generation == state_[e.job].generation) Release(e.job, now);
            break;
          case EventKind::kNodeFail:
            FailNode(e.job, now);
            break;
          case EventKind::kNodeRepair:
            RepairNode(e.job, now);
            break;
        }
      }
      while (next_arrival < jobs_.size() && jobs_[next_arrival].submit_ms == now) {
        Arrive(next_arrival++, now);
      }
      CORRAL_RETURN_IF_ERROR(SchedulePass(now));
      if (sched_.GetStats().last_pass_budget_exhausted && pending_ > 0) {
        // The pass stopped on its work budget; the head would run the next one at once.
        if (++budget_passes_ > kMaxBudgetPassesPerInstant) {
          return Internal("the scheduler exhausted its work budget " +
                          std::to_string(kMaxBudgetPassesPerInstant) +
                          " times at t=" + std::to_string(now) + " ms without finishing a pass");
        }
        next_tick_ = now;
        continue;
      }
      budget_passes_ = 0;
      // Node events never run out: a scheduler that places nothing on an idle, whole cluster
      // would otherwise keep the loop going forever (without failures, the loop ends below).
      if (pending_ > 0 && running_ == 0 && down_nodes_ == 0 && next_arrival >= jobs_.size()) {
        break;
      }
      if (IsPreemptivePolicy(config_.policy) && config_.tick_ms > 0 && pending_ > 0 &&
          running_ > 0) {
        next_tick_ = (now / config_.tick_ms + 1) * config_.tick_ms;
      }
    }
    if (pending_ > 0 || running_ > 0) {
      return Internal("the simulation stopped with " + std::to_string(pending_) +
                      " job(s) pending and " + std::to_string(running_) +
                      " running: the scheduler placed nothing on an idle cluster");
    }
    std::stable_sort(result_.runs.begin(), result_.runs.end(),
                     [](const RunRecord& a, const RunRecord& b) {
                       return std::tie(a.start, a.job) < std::tie(b.start, b.job);
                     });
    return std::move(result_);
  }

 private:
  static constexpr TimeMs kNever = INT64_MAX;
  static constexpr int64_t kMaxBudgetPassesPerInstant = 1000;

  static sched::SchedulerConfig MakeConfig(const SimConfig& c) {
    sched::SchedulerConfig s;
    s.policy = c.policy;
    s.preemption = IsPreemptivePolicy(c.policy);
    if (c.min_runtime_before_preempt_ms >= 0) {
      s.min_runtime_before_preempt_ms = c.min_runtime_before_preempt_ms;
    }
    if (c.fair_share_half_life_ms != 0) s.fair_share_half_life_ms = c.fair_share_half_life_ms;
    if (!c.las_thresholds_gpu_ms.empty()) s.las_thresholds_gpu_ms = c.las_thresholds_gpu_ms;
    if (c.las_preempt_hysteresis >= 0) s.las_preempt_hysteresis = c.las_preempt_hysteresis;
    s.cluster_budget = c.cluster_budget;
    s.queue_budget = c.queue_budget;
    s.use_predictions = c.use_predictions;
    s.las_across_queues = c.las_across_queues;
    s.backfill_with_predictions = c.backfill_with_predictions;
    s.borrowing_queues_by_level = c.borrowing_queues_by_level;
    if (c.starvation_promote_factor >= 0) s.starvation_promote_factor = c.starvation_promote_factor;
    s.gittins = c.gittins;
    return s;
  }

  // The job as the head would record it at submit: the trace row's queue, user and GPUs as
  // a gang of equal replicas, preemptible, with its name and time limit where it has them.
  Job MakeJob(size_t i) const {
    const TraceJob& t = jobs_[i];
    Job j;
    j.id = i + 1;
    j.owner = t.user;
    j.spec.name = t.name;
    j.spec.time_limit_ms = t.time_limit_ms;
    j.submitted_at = t.submit_ms;
    j.spec.queue = t.queue;
    j.spec.replicas = state_[i].replicas;
    j.spec.per_replica.gpu_milli = state_[i].gpus_per_replica * kGpuMilli;
    j.spec.per_replica.cpu_milli = 0;
    j.spec.preemptible = true;
    return j;
  }

  sched::PendingJob Pending(size_t i) const {
    // As the head: attained_ms is the GPU-time its earlier runs held (restart overhead, grace
    // and work lost to the checkpoint interval included), not the progress they made.
    // The prediction as the head would make it: ToPendingJob with the estimator fed with every
    // job that ended so far.
    const PredictionInputs& in = config_.predict;
    sched::PendingJob p = sched::ToPendingJob(state_[i].job, in.history ? &estimator_ : nullptr);
    if (config_.policy != sched::OrderPolicy::kCorral) {  // the production policy has no oracle
      p.oracle_duration_ms = jobs_[i].duration_ms;
      p.attained_ms = state_[i].progress_ms * jobs_[i].num_gpus;
    } else if (in.oracle) {
      p.predicted_ms = jobs_[i].duration_ms;  // an upper bound of what predictions buy
      // The index of a known service: its remaining GPU-time.
      p.gittins_ms = std::max<DurationMs>(
          1, jobs_[i].duration_ms * std::max<int64_t>(1, jobs_[i].num_gpus) - p.attained_ms);
    } else if (!in.time_limit) {
      p.predicted_ms =
          in.history ? estimator_.Estimate(p.user, p.name, p.queue, jobs_[i].num_gpus) : 0;
    }
    return p;
  }

  void Arrive(size_t i, TimeMs now) {
    (void)now;
    sched::PendingJob p = Pending(i);
    CountNamePrediction(i, p, /*at_submit=*/true);
    std::string why;
    if (sched_.Admit(p, &why) == sched::Fit::kInfeasible) {
      state_[i].phase = JobPhase::kRejected;
      result_.jobs[i].rejected = true;
      result_.jobs[i].why_rejected = why;
      return;
    }
    state_[i].phase = JobPhase::kPending;
    ++pending_;
    sched_.AddPending(p);
  }

  // The job's run ends with the job: done (timeout = false) or killed at its time limit.
  void Finish(size_t i, TimeMs now, bool timeout) {
    SimJob& s = state_[i];
    CORRAL_CHECK(s.phase == JobPhase::kRunning, "completion of a job that is not running");
    sched_.RemoveRunning(i + 1);
    s.phase = JobPhase::kDone;
    if (timeout) {
      DurationMs ran = now - s.run_start - (s.resumed ? config_.restart_overhead_ms : 0);
      s.progress_ms = std::min(jobs_[i].duration_ms, s.progress_ms + std::max<DurationMs>(0, ran));
    } else {
      s.progress_ms = jobs_[i].duration_ms;
    }
    EndRun(s, timeout ? RunState::kFailed : RunState::kSucceeded, now);
    CountLost(i, now);
    active_.erase(i);
    --running_;
    result_.runs[s.run_record].end = now;
    result_.runs[s.run_record].timeout = timeout;
    result_.jobs[i].end = now;
    result_.jobs[i].timeout = timeout;
    estimator_.Observe(sched::EndedJobOf(s.job));  // as the head, when a job ends
    if (config_.refresh_sibling_predictions) RefreshSiblings(i);
  }

  // GPU time the run that ends now held beyond the progress it kept.
  void CountLost(size_t i, TimeMs now) {
    const SimJob& s = state_[i];
    DurationMs gain = s.progress_ms - s.run_progress_start;
    result_.lost_gpu_ms +=
        int64_t{jobs_[i].num_gpus} * std::max<DurationMs>(0, now - s.run_start - gain);
  }

  // A uniformly distributed double in [0, 1) from the raw mt19937_64 stream (the same on
  // every platform, unlike std::exponential_distribution).
  double Uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }
  TimeMs UpTime(TimeMs from) {
    auto up = static_cast<DurationMs>(-std::log(1.0 - Uniform()) *
                                      static_cast<double>(config_.node_mtbf_ms));
    return from + std::max<DurationMs>(1, up);
  }

  void FailNode(size_t n, TimeMs now) {
    ++result_.node_failures;
    sched::NodeInfo& node = nodes_[n];
    // Its runs are lost: in job order, so the requeue order does not depend on the set.
    std::vector<size_t> hit;
    for (size_t i : active_) {
      for (const ReplicaPlacement& p : result_.runs[state_[i].run_record].placement) {
        if (p.node == node.name) {
          hit.push_back(i);
          break;
        }
      }
    }
    for (size_t i : hit) Lose(i, now);
    node.schedulable = false;
    ++down_nodes_;
    sched_.UpsertNode(node);
    events_.push({now + config_.node_repair_ms, seq_++, EventKind::kNodeRepair, n, 0});
  }

  void RepairNode(size_t n, TimeMs now) {
    nodes_[n].schedulable = true;
    --down_nodes_;
    sched_.UpsertNode(nodes_[n]);
    events_.push({UpTime(now), seq_++, EventKind::kNodeFail, n, 0});
  }

  // A run on a failed node ends now, lost: requeued, not the job's failure. A run being
  // preempted keeps what its preemption saved; a running one only its last checkpoint.
  void Lose(size_t i, TimeMs now) {
    SimJob& s = state_[i];
    bool stopping = s.phase == JobPhase::kStopping;
    if (!stopping && config_.checkpoint_interval_ms > 0) {
      DurationMs ran = now - s.run_start - (s.resumed ? config_.restart_overhead_ms : 0);
      DurationMs total =
          std::min(jobs_[i].duration_ms, s.progress_ms + std::max<DurationMs>(0, ran));
      DurationMs kept = total / config_.checkpoint_interval_ms * config_.checkpoint_interval_ms;
      s.progress_ms = std::max(s.progress_ms, kept);
    }
    sched_.RemoveRunning(i + 1);
    RunRecord& r = result_.runs[s.run_record];
    r.end = now;
    r.lost = true;
    r.preempted = stopping;
    EndRun(s, stopping ? RunState::kPreempted : RunState::kLost, now);
    CountLost(i, now);
    if (stopping) ++result_.jobs[i].preemptions;
    ++result_.jobs[i].lost_runs;
    Requeue(i);
  }

  void Requeue(size_t i) {
    SimJob& s = state_[i];
    ++s.generation;  // any completion, timeout or release event of the run is void
    active_.erase(i);
    --running_;
    ++pending_;
    s.phase = JobPhase::kPending;
    s.resumed = true;
    sched::PendingJob p = Pending(i);
    CountNamePrediction(i, p, /*at_submit=*/false);
    sched_.AddPending(p);
  }

  // The pending jobs of ended job i's user and name, predicted again (AddPending replaces).
  void RefreshSiblings(size_t i) {
    auto it = siblings_.find({jobs_[i].user, jobs_[i].name});
    if (it == siblings_.end()) return;
    for (size_t j : it->second) {
      if (state_[j].phase != JobPhase::kPending) continue;
      sched::PendingJob p = Pending(j);
      CountNamePrediction(j, p, /*at_submit=*/false);
      sched_.AddPending(p);
    }
  }

  // Counts the jobs whose prediction came from their (user, job name) history: when first
  // queued, and at any queueing (a requeued job is predicted again, from the history then).
  void CountNamePrediction(size_t i, const sched::PendingJob& p, bool at_submit) {
    if (config_.policy != sched::OrderPolicy::kCorral || !config_.use_predictions ||
        !config_.predict.history || config_.predict.oracle ||
        !estimator_.HasNameHistory(p.user, p.name)) {
      return;
    }
    if (at_submit) ++result_.predicted_by_name_at_submit;
    if (!state_[i].predicted_by_name) ++result_.predicted_by_name;
    state_[i].predicted_by_name = true;
  }

  void Release(size_t i, TimeMs now) {
    SimJob& s = state_[i];
    CORRAL_CHECK(s.phase == JobPhase::kStopping, "release of a job that is not stopping");
    sched_.RemoveRunning(i + 1);
    result_.runs[s.run_record].end = now;
    result_.runs[s.run_record].preempted = true;
    EndRun(s, RunState::kPreempted, now);
    CountLost(i, now);
    ++result_.jobs[i].preemptions;
    Requeue(i);
  }

  Status SchedulePass(TimeMs now) {
    std::chrono::steady_clock::time_point t0;
    if (config_.profile) t0 = std::chrono::steady_clock::now();
    sched::Decisions d = sched_.Schedule(now);
    if (config_.profile) {
      result_.schedule_seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    ++result_.schedule_calls;
    for (const sched::PreemptDecision& p : d.preempt) {
      size_t i = p.job - 1;
      if (p.job == 0 || i >= state_.size() || state_[i].phase != JobPhase::kRunning) {
        return Internal("the scheduler preempted job " + std::to_string(p.job) +
                        ", which is not running");
      }
      Preempt(i, now);
    }
    for (sched::PlaceDecision& pl : d.place) {
      size_t i = pl.job - 1;
      if (pl.job == 0 || i >= state_.size() || state_[i].phase != JobPhase::kPending) {
        return Internal("the scheduler placed job " + std::to_string(pl.job) +
                        ", which is not pending");
      }
      Start(i, now, std::move(pl.placement));
    }
    return Status::Ok();
  }

  void Start(size_t i, TimeMs now, std::vector<ReplicaPlacement> placement) {
    SimJob& s = state_[i];
    s.phase = JobPhase::kRunning;
    s.run_start = now;
    s.run_progress_start = s.progress_ms;
    active_.insert(i);
    ++s.generation;
    --pending_;
    ++running_;
    JobOutcome& o = result_.jobs[i];
    if (o.first_start < 0) o.first_start = now;
    corral::Run run;
    run.attempt = static_cast<int32_t>(s.job.runs.size()) + 1;
    run.state = RunState::kRunning;
    run.scheduled_at = now;
    run.started_at = now;
    s.job.runs.push_back(std::move(run));
    s.run_record = result_.runs.size();
    RunRecord r;
    r.job = i;
    r.start = now;
    r.end = -1;
    r.gpus = jobs_[i].num_gpus;
    r.placement = std::move(placement);
    result_.runs.push_back(std::move(r));
    DurationMs left = jobs_[i].duration_ms - s.progress_ms;
    TimeMs end = now + (s.resumed ? config_.restart_overhead_ms : 0) + left;
    // As the head: a run is killed once it has run its job's time limit.
    const DurationMs limit = s.job.spec.time_limit_ms;
    if (limit > 0 && now + limit < end) {
      events_.push({now + limit, seq_++, EventKind::kTimeout, i, s.generation});
    } else {
      events_.push({end, seq_++, EventKind::kEnd, i, s.generation});
    }
  }

  static void EndRun(SimJob& s, RunState state, TimeMs now) {
    corral::Run& run = *s.job.CurrentRun();
    run.state = state;
    run.ended_at = now;
  }

  void Preempt(size_t i, TimeMs now) {
    SimJob& s = state_[i];
    DurationMs ran = now - s.run_start - (s.resumed ? config_.restart_overhead_ms : 0);
    DurationMs total = s.progress_ms + std::max<DurationMs>(0, ran);
    total = std::min(total, jobs_[i].duration_ms);
    if (config_.checkpoint_interval_ms > 0) {
      DurationMs kept = total / config_.checkpoint_interval_ms * config_.checkpoint_interval_ms;
      total = std::max(s.progress_ms, kept);
    }
    s.progress_ms = total;
    s.phase = JobPhase::kStopping;
    ++s.generation;  // the pending completion event is void
    events_.push({now + config_.preempt_grace_ms, seq_++, EventKind::kRelease, i, s.generation});
  }

  const std::vector<TraceJob>& jobs_;
  SimConfig config_;
  sched::Scheduler sched_;
  std::vector<SimJob> state_;
  // Jobs by (user, name), in submit order (refresh_sibling_predictions only).
  std::map<std::pair<std::string, std::string>, std::vector<size_t>> siblings_;
  sched::RuntimeEstimator estimator_;  // fed with every job that ends
  std::vector<sched::NodeInfo> nodes_;
  std::set<size_t> active_;  // jobs running or stopping
  std::mt19937_64 rng_;      // node up times
  SimResult result_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t seq_ = 0;
  int64_t pending_ = 0;
  int64_t running_ = 0;
  TimeMs next_tick_ = kNever;
  int64_t budget_passes_ = 0;  // consecutive passes cut short by the work budget
  int64_t down_nodes_ = 0;     // failed, not yet repaired
};

}  // namespace

Result<SimResult> Simulate(const std::vector<TraceJob>& jobs, const SimConfig& config) {
  for (size_t i = 1; i < jobs.size(); ++i) {
    CORRAL_CHECK(jobs[i - 1].submit_ms <= jobs[i].submit_ms, "jobs must be sorted by submit");
  }
  Loop loop(jobs, config);
  return loop.Run();
}

}  // namespace corral::sim
