#include "sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <queue>
#include <random>
#include <set>
#include <tuple>

#include "head/change.h"
#include "head/head_core.h"
#include "sched/policy.h"
#include "sim/emulated_node.h"
#include "sim/head_port.h"

namespace corral::sim {

bool IsPreemptivePolicy(sched::OrderPolicy p) {
  sched::SchedulerConfig config;
  config.policy = p;
  return sched::MakePolicy(config)->Preemptive();
}

namespace {

using head::Change;
using head::CoreConfig;
using head::CoreOutput;
using head::JobResized;
using head::JobSubmitted;
using head::RunEnded;
using head::RunPlaced;
using head::StopRequested;

// The core runs on Unix-like times (0 means "not yet" in its records); the trace's clock starts
// at 0. Every time the core sees is the trace's plus this.
constexpr TimeMs kEpoch = 18599 * kDay;  // 2020-12-03 (a whole number of weeks)

// The simulation's events, in time order and then in the order they were planned. A process
// exit or a node event names the node by index.
// A fetch-done event is the source's next completion as planned when `plan` was its plan.
enum class EventKind { kExit, kTick, kNodeFail, kNodeRepair, kFetchDone };

struct Event {
  TimeMs at = 0;  // trace time
  uint64_t seq = 0;
  EventKind kind = EventKind::kExit;
  size_t node = 0;
  uint64_t process = 0;
  int32_t exit_code = 0;
  // An elastic run's planned end (ElasticWorld): void once a later plan replaced it.
  JobId job = 0;
  uint64_t plan = 0;
  bool operator>(const Event& o) const { return std::tie(at, seq) > std::tie(o.at, o.seq); }
};

// What a job's processes have done with their time: the work a checkpoint keeps, and the run
// under way. It is the job's checkpoint directory, as it were: it survives the job's runs.
struct Work {
  DurationMs progress_ms = 0;         // checkpointed useful work
  DurationMs run_progress_start = 0;  // progress_ms when the current run started
  TimeMs run_start = 0;               // trace time the current run was placed
  int32_t attempt = 0;                // the current run's
  bool stopped = false;               // the current run was asked to stop: its work is saved
  // A run that reads datasets begins its work once every replica has its data (run_start is
  // kNotBegun until then): its replicas' processes and how many have their data.
  std::vector<std::pair<size_t, uint64_t>> processes;  // (node, process)
  int32_t ready = 0;
};

// Work::run_start of a run whose replicas still wait for their data: far enough ahead that
// the run has made no progress, near enough that no difference overflows.
constexpr TimeMs kNotBegun = INT64_MAX / 4;

// An elastic job's current world (SimConfig::elastic): its replicas' live processes and the
// stretch since its last change of membership, whose rate the scaling model gives.
struct ElasticWorld {
  ElasticShape shape;  // max == 0: a rigid job
  // (node, process) -> the plan of the exit planned for it.
  std::map<std::pair<size_t, uint64_t>, uint64_t> processes;
  TimeMs since = 0;         // the last change of membership
  DurationMs overhead = 0;  // without progress after `since`
  uint64_t plan = 0;        // numbers the planned ends: a later one voids the earlier
};

// A job's current run as the report records it: its record in SimResult::runs, and why it was
// asked to stop.
struct OpenRun {
  size_t run = 0;
  StopCause stop_cause = StopCause::kNone;
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

sched::SchedulerConfig SchedulerConfigOf(const SimConfig& c) {
  sched::SchedulerConfig s;
  s.policy = c.policy;
  s.preemption = IsPreemptivePolicy(c.policy);
  if (c.min_runtime_before_preempt_ms >= 0) {
    s.min_runtime_before_preempt_ms = c.min_runtime_before_preempt_ms;
  }
  if (c.fair_share_half_life_ms != 0) s.fair_share_half_life_ms = c.fair_share_half_life_ms;
  if (!c.las_thresholds_gpu_ms.empty()) s.las_thresholds_gpu_ms = c.las_thresholds_gpu_ms;
  s.corral = c.corral;
  return s;
}

// The simulation: a head (its core with its scheduler, through a HeadPort), one emulated agent
// per node, and the trace's jobs submitted at their times. The core decides everything a head
// decides (placement, preemption, time limits, lost nodes, requeues); the loop only moves time and
// plays the processes.
class Loop {
 public:
  Loop(const std::vector<TraceJob>& jobs, const SimConfig& config, HeadPortFactory make_port)
      : jobs_(jobs), config_(config), make_port_(std::move(make_port)), rng_(config.failure_seed) {
    result_.jobs.resize(jobs.size());
    const OracleBound b = config.predict.bound;
    if (config.policy == sched::OrderPolicy::kCorral && !config.predict.oracle &&
        (b == OracleBound::kUserGpus || b == OracleBound::kWindow)) {
      bound_dists_ = BoundDistributions(
          jobs, b, static_cast<size_t>(std::max(1, config.predict.bound_window)));
    }
  }

  Result<SimResult> Run() {
    const ClusterSpec& c = config_.cluster;
    if (c.registered.empty() && (c.nodes <= 0 || c.gpus_per_node <= 0)) {
      return InvalidArgument("the cluster needs --nodes > 0 and --gpus-per-node > 0");
    }
    CORRAL_RETURN_IF_ERROR(CheckData());
    Result<std::unique_ptr<HeadPort>> port = make_port_(MakeCoreConfig(), kEpoch);
    if (!port.ok()) return port.status();
    port_ = std::move(*port);
    MakeNodes();
    CORRAL_RETURN_IF_ERROR(StartData());
    result_.total_gpus = static_cast<int64_t>(c.nodes) * c.gpus_per_node;
    if (!c.registered.empty()) {
      result_.total_gpus = 0;
      for (const RegisterRequest& r : c.registered) {
        result_.total_gpus += static_cast<int64_t>(r.gpus.size());
      }
    }
    if (!config_.queues.empty()) {
      for (const QueueConfig& q : config_.queues) {
        result_.quotas[q.name] = q.quota_gpus;
        CORRAL_RETURN_IF_ERROR(port_->SetQueue(q, kEpoch));
      }
    } else if (config_.policy == sched::OrderPolicy::kCorral) {
      result_.quotas =
          config_.quotas.empty() ? QuotasByDemand(jobs_, result_.total_gpus) : config_.quotas;
      for (const auto& [name, quota] : result_.quotas) {
        QueueConfig q;
        q.name = name;
        q.quota_gpus = quota;
        CORRAL_RETURN_IF_ERROR(port_->SetQueue(q, kEpoch));
      }
    }
    for (NodeReservationSpec r : config_.reservations) {
      // A pass when it starts and when it ends: jobs kept off its nodes may start then.
      Plan({r.start_ms, 0, EventKind::kTick});
      Plan({r.end_ms, 0, EventKind::kTick});
      reservations_end_ = std::max(reservations_end_, r.end_ms);
      r.start_ms += kEpoch;
      r.end_ms += kEpoch;
      CORRAL_RETURN_IF_ERROR(port_->CreateReservation(r, kEpoch));
    }
    Pump(0);

    size_t next_arrival = 0;
    while (true) {
      // Node events go on forever; the simulation ends with its jobs.
      if (next_arrival >= jobs_.size() && pending_ == 0 && running_ == 0) break;
      TimeMs now = kNever;
      if (next_arrival < jobs_.size()) now = jobs_[next_arrival].submit_ms;
      if (!events_.empty()) now = std::min(now, events_.top().at);
      if (next_pass_ != kNever) now = std::min(now, next_pass_);
      if (now == kNever) break;
      const bool timer_pass = next_pass_ == now;
      next_pass_ = kNever;
      const int64_t passes_before = port_->pass_stats().passes;
      bool tick = false;
      while (!events_.empty() && events_.top().at == now) {
        Event e = events_.top();
        events_.pop();
        switch (e.kind) {
          case EventKind::kExit:
            Exit(e, now);
            break;
          case EventKind::kTick:
            tick = true;
            break;
          case EventKind::kNodeFail:
            FailNode(e.node, now);
            break;
          case EventKind::kNodeRepair:
            RepairNode(e.node, now);
            break;
          case EventKind::kFetchDone:
            if (e.plan == fetch_plan_) FetchesDone(now);
            break;
        }
      }
      if (tick) Tick(now);
      while (next_arrival < jobs_.size() && jobs_[next_arrival].submit_ms == now) {
        Arrive(next_arrival++, now);
      }
      // The timer's pass, where no command of the instant ran one.
      if (timer_pass && port_->pass_stats().passes == passes_before) TimerPass(now);
      if (port_->core().schedule_wanted() && pending_ > 0) {
        return Internal("the scheduler exhausted its work budget in every pass at t=" +
                        std::to_string(now) + " ms without finishing one");
      }
      if (!to_estimate_.empty()) Estimate(now);
      // Node events never run out: a scheduler that places nothing on an idle, whole cluster
      // would otherwise keep the loop going forever (without failures, the loop ends below).
      // (A reservation not over yet may be what keeps them waiting: its end brings a pass.)
      if (pending_ > 0 && running_ == 0 && down_nodes_ == 0 && next_arrival >= jobs_.size() &&
          now >= reservations_end_) {
        break;
      }
      if (IsPreemptivePolicy(config_.policy) && config_.tick_ms > 0 && pending_ > 0 &&
          running_ > 0) {
        next_pass_ = (now / config_.tick_ms + 1) * config_.tick_ms;
      }
    }
    if (pending_ > 0 || running_ > 0) {
      return Internal("the simulation stopped with " + std::to_string(pending_) +
                      " job(s) pending and " + std::to_string(running_) +
                      " running: the scheduler placed nothing on an idle cluster");
    }
    if (data_) result_.data = data_->stats();
    HeadPort::PassStats passes = port_->pass_stats();
    result_.schedule_calls = passes.passes;
    if (config_.profile) result_.schedule_seconds = passes.seconds;
    std::stable_sort(result_.runs.begin(), result_.runs.end(),
                     [](const RunRecord& a, const RunRecord& b) {
                       return std::tie(a.start, a.job) < std::tie(b.start, b.job);
                     });
    return std::move(result_);
  }

 private:
  static constexpr TimeMs kNever = INT64_MAX;

  CoreConfig MakeCoreConfig() {
    CoreConfig c;
    c.scheduler = SchedulerConfigOf(config_);
    c.estimator = config_.predict.estimator;
    c.start_estimates = config_.start_estimates;
    c.start_estimates.victim_grace_ms = config_.preempt_grace_ms;
    c.retain_finished_ms = 0;  // every job stays in memory: there is no store to answer
    c.adjust_scheduler_input = [this](const Job& job, sched::PendingJob* p) { Adjust(job, p); };
    return c;
  }

  // What the simulator knows and the head cannot: for the baselines, the true duration and
  // progress; for the corral policy, the inputs `predict` leaves out, or the oracle or one of
  // its bounds (oracle_bounds.h).
  void Adjust(const Job& job, sched::PendingJob* p) const {
    // Cache-blind placement: the scheduler does not know what the job reads.
    if (config_.data.on() && !config_.data.placement_aware) p->datasets.clear();
    if (job.id == 0 || job.id > index_.size()) return;
    const TraceJob& t = jobs_[index_[job.id - 1]];
    const Work& w = work_[job.id - 1];
    const PredictionInputs& in = config_.predict;
    if (config_.policy != sched::OrderPolicy::kCorral) {
      p->oracle_duration_ms = t.duration_ms;
      p->attained_ms = w.progress_ms * HeldMilliGpus(t, config_.round_shares_up) / kGpuMilli;
    } else if (in.oracle || in.bound == OracleBound::kNoisy) {
      // The true duration (an upper bound of what predictions buy), or it with a known error.
      const DurationMs d = in.oracle
                               ? t.duration_ms
                               : NoisyDuration(t.duration_ms, index_[job.id - 1], in.noise_sigma);
      p->predicted_ms = d;
      p->run_quantiles = {};
      // Estimates count on it too, not on the recent runs (estimate_state.cc); the policy's
      // decisions do not read it.
      if (in.oracle) p->oracle_duration_ms = d;
    } else if (in.bound != OracleBound::kNone) {
      const sched::RunTimeQuantiles& d = bound_dists_[index_[job.id - 1]];
      p->predicted_ms = sched::ConditionalRemainingMs(d, 0, sched::PredictionRule::kQuantile, 0.5);
      p->run_quantiles = d;
    } else if (!in.history) {
      p->predicted_ms = in.time_limit ? job.spec.time_limit_ms : 0;
      p->run_quantiles = {};
    } else if (!in.time_limit) {
      const sched::RuntimeEstimator& estimator = port_->core().estimator();
      p->predicted_ms = estimator.Estimate(p->user, p->name, p->queue, t.num_gpus);
      p->run_quantiles = estimator.Quantiles(p->user, p->name, t.num_gpus, 0,
                                             p->attained_ms / std::max<int64_t>(1, t.num_gpus));
    }
  }

  void MakeNodes() {
    const ClusterSpec& c = config_.cluster;
    for (const RegisterRequest& r : c.registered) {
      by_name_[r.name] = nodes_.size();
      nodes_.emplace_back(r);
      Register(nodes_.size() - 1, 0);
    }
    int32_t racks = std::max(1, std::min(c.racks, c.nodes));
    int32_t nodes_per_rack = (c.nodes + racks - 1) / racks;
    for (int32_t n = 0; c.registered.empty() && n < c.nodes; ++n) {
      RegisterRequest r;
      char name[32];
      std::snprintf(name, sizeof name, "n%05d", n);
      r.name = name;
      r.address = r.name + ":7071";
      char rack[32];
      std::snprintf(rack, sizeof rack, "r%03d", n / nodes_per_rack);
      r.labels["rack"] = rack;
      r.labels["gpu_model"] = "V100";
      r.cpu_milli = 64 * 1000;
      r.memory_mb = 512 * 1024;
      for (int32_t g = 0; g < c.gpus_per_node; ++g) {
        Gpu gpu;
        gpu.index = g;
        gpu.uuid = r.name + "-gpu" + std::to_string(g);
        gpu.model = "V100";
        gpu.memory_mb = c.gpu_memory_mb;
        gpu.group = c.gpus_per_node >= 8 ? g / (c.gpus_per_node / 2) : 0;
        r.gpus.push_back(gpu);
      }
      by_name_[r.name] = nodes_.size();
      nodes_.emplace_back(std::move(r));
      Register(nodes_.size() - 1, 0);
    }
    if (config_.node_mtbf_ms > 0) {
      for (size_t n = 0; n < nodes_.size(); ++n) Plan({UpTime(0), 0, EventKind::kNodeFail, n});
    }
  }

  // The node's agent (re)starts empty and registers, then reports.
  void Register(size_t n, TimeMs now) {
    EmulatedNode& node = nodes_[n];
    node.Registered(port_->Register(node.registration(), kEpoch + now));
    Report(n, now);
  }

  void Report(size_t n, TimeMs now) {
    if (data_) nodes_[n].SetDatasets(data_->Held(n));
    port_->Report(nodes_[n].Report(), kEpoch + now);
    Pump(now);
  }

  void Plan(Event e) {
    e.seq = seq_++;
    events_.push(e);
  }

  // Records what changed, and answers the nodes whose orders changed, as the shell answers
  // their held syncs; until nothing more changes.
  void Pump(TimeMs now) {
    while (true) {
      CoreOutput out = port_->TakeOutput();
      for (const Change& c : out.changes) Record(c, now);
      if (out.nodes_to_notify.empty()) return;
      for (const std::string& name : out.nodes_to_notify) Answer(by_name_.at(name), now);
    }
  }

  void Answer(size_t n, TimeMs now) {
    EmulatedNode& node = nodes_[n];
    if (!node.up()) return;
    std::vector<ProcessChange> changes;
    if (!node.Apply(port_->OrdersFor(node.name(), node.desired_version()), kEpoch + now,
                    &changes)) {
      CORRAL_CHECK(node.Apply(port_->OrdersFor(node.name(), 0), kEpoch + now, &changes),
                   "emulated node " + node.name() + " refused a full answer");
    }
    for (const ProcessChange& c : changes) {
      switch (c.kind) {
        case ProcessChange::Kind::kStarted:
          Started(n, c, now);
          break;
        case ProcessChange::Kind::kStopOrdered:
          StopOrdered(n, c, now);
          break;
        case ProcessChange::Kind::kGone:
          if (data_) ReleaseData(n, c.process, now);
          break;
      }
    }
    // The agent reports what it started at once (its next sync); a stop changes nothing to
    // report until the process exits.
    for (const ProcessChange& c : changes) {
      if (c.kind == ProcessChange::Kind::kStarted) {
        Report(n, now);
        return;
      }
    }
    port_->AwaitOrders(node.Report(), kEpoch + now);
  }

  size_t Row(JobId id) const { return index_.at(id - 1); }
  Work& WorkOf(JobId id) { return work_.at(id - 1); }
  OpenRun& Open(JobId id) { return open_runs_.at(id - 1); }

  DurationMs Overhead(int32_t attempt) const {
    return attempt > 1 ? config_.restart_overhead_ms : 0;
  }

  // A replica's process starts: it ends by itself once it has done the rest of the job's work.
  void Started(size_t n, const ProcessChange& c, TimeMs now) {
    if (data_ && !c.datasets.empty() && !IsElastic(c.job)) {
      StartedWithData(n, c, now);
      return;
    }
    Work& w = WorkOf(c.job);
    const TraceJob& t = jobs_[Row(c.job)];
    if (w.attempt != c.attempt) {  // the run's first replica to start
      w.attempt = c.attempt;
      w.run_start = now;
      w.run_progress_start = w.progress_ms;
      w.stopped = false;
      // The head kills a run once it has run its job's limit: it looks when the time comes.
      if (t.time_limit_ms > 0) Plan({now + t.time_limit_ms, 0, EventKind::kTick});
      if (IsElastic(c.job)) {
        ElasticWorld& x = World(c.job);
        x.processes.clear();
        x.since = now;
        x.overhead = Overhead(c.attempt);
      }
    }
    if (IsElastic(c.job)) {
      ElasticKeep(c.job, now);
      World(c.job).processes[{n, c.process}] = 0;
      ElasticResized(c.job, now);
      return;
    }
    TimeMs end = w.run_start + Overhead(c.attempt) + t.duration_ms - w.progress_ms;
    Plan({std::max(now, end), 0, EventKind::kExit, n, c.process, 0});
  }

  // SimConfig::data's settings a simulation cannot run with.
  Status CheckData() const {
    if (!config_.data.on()) return Status::Ok();
    if (config_.data.source_bytes_per_s <= 0) {
      return InvalidArgument(
          "field 'source_bytes_per_s': the data source needs a bandwidth "
          "above 0 bytes/s");
    }
    if (config_.elastic.on) {
      return InvalidArgument("datasets are staged for rigid runs only: leave out --elastic");
    }
    return Status::Ok();
  }

  // The nodes' caches and the source, and every dataset registered as `corral datasets add`
  // does, before the first submission.
  Status StartData() {
    if (!config_.data.on()) return Status::Ok();
    data_.emplace(config_.data, nodes_.size());
    for (const SimDataset& s : config_.data.datasets) {
      Dataset d;
      d.name = s.name;
      d.version = "v1";
      d.source = "/shared/" + s.name;
      d.digest = s.digest;
      d.files = 1;
      d.bytes = s.bytes;
      CORRAL_RETURN_IF_ERROR(port_->AddDataset(d, kEpoch));
    }
    Pump(0);
    return Status::Ok();
  }

  // A replica that reads datasets starts on node n: it stages them (data_world.h) and begins
  // once they are all in place.
  void StartedWithData(size_t n, const ProcessChange& c, TimeMs now) {
    Work& w = WorkOf(c.job);
    if (w.attempt != c.attempt) {  // the run's first replica to start
      w.attempt = c.attempt;
      w.run_start = kNotBegun;
      w.run_progress_start = w.progress_ms;
      w.stopped = false;
      w.processes.clear();
      w.ready = 0;
    }
    w.processes.emplace_back(n, c.process);
    data_process_[{n, c.process}] = {c.job, c.attempt};
    if (data_->Stage(n, c.process, c.datasets, now)) {
      ReplicaReady(n, c.process, now);
    } else {
      nodes_[n].Staging(c.process,
                        "staging " + data_->Awaited(n, c.process) + " on " + nodes_[n].name());
    }
    PlanFetch();
  }

  // The replica's data is all on its node: its process starts; once every replica's is, the
  // run's work begins and its processes end when the rest of the job's work is done.
  void ReplicaReady(size_t n, uint64_t process, TimeMs now) {
    auto it = data_process_.find({n, process});
    if (it == data_process_.end() || !nodes_[n].Begin(process, kEpoch + now)) return;
    const auto [job, attempt] = it->second;
    Work& w = WorkOf(job);
    if (w.attempt != attempt || w.stopped) return;
    const TraceJob& t = jobs_[Row(job)];
    // The head counts the limit from the run's start, its first replica's.
    if (++w.ready == 1 && t.time_limit_ms > 0) Plan({now + t.time_limit_ms, 0, EventKind::kTick});
    if (w.ready < static_cast<int32_t>(result_.runs[Open(job).run].placement.size())) return;
    w.run_start = now;
    const TimeMs end = now + Overhead(attempt) + t.duration_ms - w.progress_ms;
    for (const auto& [node, p] : w.processes) Plan({end, 0, EventKind::kExit, node, p, 0});
  }

  // The process is over (or gone): its pins go, it waits for nothing.
  void ReleaseData(size_t n, uint64_t process, TimeMs now) {
    data_->Release(n, process, now);
    data_process_.erase({n, process});
  }

  // The source's completions at `now`: published on their nodes, whose agents report their
  // caches; the replicas whose data is now in place start.
  void FetchesDone(TimeMs now) {
    fetch_at_ = -1;
    std::set<size_t> changed;
    for (const auto& [n, p] : data_->FetchesDone(now, &changed)) ReplicaReady(n, p, now);
    for (size_t n : changed) {
      if (nodes_[n].up()) Report(n, now);
    }
    PlanFetch();
  }

  // The event of the source's next completion, planned again where it moved.
  void PlanFetch() {
    const TimeMs at = data_->NextFetchEnd();
    if (at == fetch_at_) return;
    fetch_at_ = at;
    ++fetch_plan_;
    if (at >= 0) Plan({at, 0, EventKind::kFetchDone, 0, 0, 0, 0, fetch_plan_});
  }

  // The run's work up to `now`, as a checkpoint keeps it.
  DurationMs WorkAt(const Work& w, const TraceJob& t, TimeMs now, bool checkpoint_now) const {
    DurationMs ran = now - w.run_start - Overhead(w.attempt);
    DurationMs total = std::min(t.duration_ms, w.progress_ms + std::max<DurationMs>(0, ran));
    if (!checkpoint_now || config_.checkpoint_interval_ms > 0) {
      DurationMs every = config_.checkpoint_interval_ms;
      DurationMs kept = every > 0 ? total / every * every : w.progress_ms;
      total = std::max(w.progress_ms, kept);
    }
    return total;
  }

  // A stop order (preemption, time limit): the process checkpoints (its work up to now, or its
  // last periodic checkpoint) and exits at the end of its grace.
  void StopOrdered(size_t n, const ProcessChange& c, TimeMs now) {
    Work& w = WorkOf(c.job);
    if (IsElastic(c.job)) {  // a replica leaves the world: the others go on without it
      if (w.attempt == c.attempt && World(c.job).processes.count({n, c.process})) {
        ElasticKeep(c.job, now);
        World(c.job).processes.erase({n, c.process});
        ElasticResized(c.job, now);
      }
    } else if (w.attempt == c.attempt && !w.stopped) {
      w.progress_ms = WorkAt(w, jobs_[Row(c.job)], now, /*checkpoint_now=*/true);
      w.stopped = true;
    }
    if (data_) data_->StopWaiting(n, c.process);
    Plan({now + config_.preempt_grace_ms, 0, EventKind::kExit, n, c.process, -15});
  }

  void Exit(const Event& e, TimeMs now) {
    if (e.plan != 0 && !ElasticPlanHolds(e)) return;  // the world changed since it was planned
    if (data_) ReleaseData(e.node, e.process, now);
    EmulatedNode& node = nodes_[e.node];
    if (!node.up() || !node.Exit(e.process, e.exit_code, kEpoch + now)) return;  // killed meanwhile
    Report(e.node, now);
  }

  // Liveness, time limits and stops as the head's timer does them; every agent that is up has
  // just synced (as it does every few seconds), a failed one has not since it failed.
  void Tick(TimeMs now) {
    for (size_t n = 0; n < nodes_.size(); ++n) {
      if (nodes_[n].up()) port_->Report(nodes_[n].Report(), kEpoch + now);
    }
    port_->Tick(kEpoch + now);
    Pump(now);
  }

  void Arrive(size_t i, TimeMs now) {
    const TraceJob& t = jobs_[i];
    int32_t replicas = 1, per_replica = 0;
    Shape(t.num_gpus, config_.cluster.gpus_per_node, &replicas, &per_replica);
    // The job as a user would submit it: the trace row's queue, user and GPUs as a gang of
    // equal replicas, preemptible, with its name and time limit where it has them.
    JobSpec spec;
    if (t.spec) {
      spec = *t.spec;
    } else {
      spec.replicas = replicas;
      spec.per_replica.gpu_milli = per_replica * kGpuMilli;
      if ((t.gpu_milli > 0 || t.gpu_memory_mb > 0) && !config_.round_shares_up) {
        // A share of one GPU, isolated by memory (the default for shares), as `--gpus 0.25
        // --gpu-memory 8G` asks for it.
        spec.per_replica.gpu_milli = t.gpu_milli;
        spec.per_replica.gpu_memory_mb = t.gpu_memory_mb;
      }
      spec.per_replica.cpu_milli = 0;
      spec.preemptible = true;
      spec.grace_ms = config_.preempt_grace_ms;
    }
    ElasticShape elastic;
    if (ElasticShapeOf(t, config_.cluster.gpus_per_node, config_.elastic, &elastic)) {
      spec.replicas = elastic.max;
      spec.min_replicas = elastic.min;
      spec.per_replica.gpu_milli = elastic.per_replica * kGpuMilli;
    }
    if (data_ && !t.dataset.empty()) {
      DatasetRef d;
      d.name = t.dataset;
      spec.datasets = {d};
    }
    spec.command = {"trace-job"};
    spec.name = t.name;
    spec.time_limit_ms = t.time_limit_ms;
    spec.queue = t.queue;
    bool by_name = PredictedByName(t.user, t.name);
    JobId id = port_->core().state().next_job_id;
    CORRAL_CHECK(id == index_.size() + 1, "the core numbers jobs one by one");
    index_.push_back(i);
    work_.push_back(Work{});
    worlds_.push_back(ElasticWorld{elastic});
    open_runs_.emplace_back();
    // The owner is the trace's user, which may be none.
    Result<Job> job = port_->Submit(std::move(spec), t.user, kEpoch + now);
    if (!job.ok()) {
      index_.pop_back();
      work_.pop_back();
      worlds_.pop_back();
      open_runs_.pop_back();
      result_.jobs[i].rejected = true;
      result_.jobs[i].why_rejected = job.status().message();
      Pump(now);
      return;
    }
    CORRAL_CHECK(job->id == id, "the head numbers jobs one by one");
    if (config_.estimate_every > 0 && i % static_cast<size_t>(config_.estimate_every) == 0) {
      to_estimate_.emplace_back(i, id);
    }
    if (by_name) {
      ++result_.predicted_by_name_at_submit;
      CountByName(i);
    }
    Pump(now);
  }

  // Whether the corral policy's prediction for a job of this user and name comes from the
  // history of their ended jobs.
  bool PredictedByName(const std::string& user, const std::string& name) const {
    return config_.policy == sched::OrderPolicy::kCorral && config_.corral.predict.on &&
           config_.predict.history && !config_.predict.oracle &&
           config_.predict.bound == OracleBound::kNone &&
           port_->core().estimator().HasNameHistory(user, name);
  }
  void CountByName(size_t i) {
    if (!predicted_by_name_.insert(i).second) return;
    ++result_.predicted_by_name;
  }

  // What the core decided, as the report counts it.
  void Record(const Change& c, TimeMs now) {
    if (std::holds_alternative<JobSubmitted>(c.what)) {
      ++pending_;
    } else if (const auto* e = std::get_if<RunPlaced>(&c.what)) {
      size_t i = Row(e->job);
      Open(e->job).run = result_.runs.size();
      RunRecord r;
      r.job = i;
      r.start = now;
      r.end = -1;
      r.gpus = jobs_[i].num_gpus;
      r.gpu_milli = HeldMilliGpus(jobs_[i], config_.round_shares_up);
      if (IsElastic(e->job)) {
        r.gpus = World(e->job).shape.per_replica * static_cast<int32_t>(e->placement.size());
        r.gpu_milli = int64_t{r.gpus} * kGpuMilli;
      }
      r.placement = e->placement;
      result_.runs.push_back(std::move(r));
      if (result_.jobs[i].first_start < 0) result_.jobs[i].first_start = now;
      --pending_;
      ++running_;
    } else if (const auto* e = std::get_if<JobResized>(&c.what)) {
      ElasticRecordResize(*e, now);
    } else if (const auto* e = std::get_if<StopRequested>(&c.what)) {
      Open(e->job).stop_cause = e->cause;
    } else if (const auto* e = std::get_if<RunEnded>(&c.what)) {
      Ended(*e, now);
    }
  }

  void Ended(const RunEnded& e, TimeMs now) {
    size_t i = Row(e.job);
    RunRecord& r = result_.runs[Open(e.job).run];
    StopCause stop = std::exchange(Open(e.job).stop_cause, StopCause::kNone);
    Work& w = WorkOf(e.job);
    if (IsElastic(e.job)) {  // what its world did is kept (a checkpoint every step)
      ElasticKeep(e.job, now);
      World(e.job).processes.clear();
      w.stopped = true;
    }
    if (e.run_state == RunState::kSucceeded) w.progress_ms = jobs_[i].duration_ms;
    if (e.run_state == RunState::kLost && !w.stopped) {
      // Its node failed (or went silent): only the last periodic checkpoint is kept.
      w.progress_ms = WorkAt(w, jobs_[i], now, /*checkpoint_now=*/false);
    }
    r.end = now;
    r.lost = e.run_state == RunState::kLost;
    r.preempted = e.run_state == RunState::kPreempted || (r.lost && stop == StopCause::kPreempted);
    r.timeout = stop == StopCause::kTimeLimit;
    // GPU time the run held beyond the progress it kept (an elastic world's pauses are counted
    // as they pass: ElasticKeep), apart from its replicas' waits for their data.
    DurationMs gain = w.progress_ms - w.run_progress_start;
    DurationMs staged = 0;
    if (!w.processes.empty()) {
      staged = std::clamp<DurationMs>(std::min(now, w.run_start) - r.start, 0, now - r.start);
      result_.staging_gpu_ms += r.gpu_milli * staged / kGpuMilli;
    }
    if (!IsElastic(e.job)) {
      result_.lost_gpu_ms +=
          r.gpu_milli * std::max<DurationMs>(0, now - r.start - gain - staged) / kGpuMilli;
    }
    JobOutcome& o = result_.jobs[i];
    o.preemptions += r.preempted;
    o.lost_runs += r.lost;
    --running_;
    if (e.job_state == JobState::kPending) {
      ++pending_;
      if (PredictedByName(jobs_[i].user, jobs_[i].name)) CountByName(i);
      return;
    }
    o.end = now;
    o.timeout = r.timeout;
  }

  bool IsElastic(JobId id) const { return worlds_.at(id - 1).shape.max > 0; }
  ElasticWorld& World(JobId id) { return worlds_.at(id - 1); }

  // The work an elastic world did since its last change, kept: its workers checkpoint every
  // step. REQUIRES: before its membership changes.
  void ElasticKeep(JobId id, TimeMs now) {
    ElasticWorld& x = World(id);
    Work& w = WorkOf(id);
    const DurationMs ran = now - x.since - x.overhead;
    const auto n = static_cast<int32_t>(x.processes.size());
    // The GPUs it held without progress (a restart, a resize) are lost GPU time.
    const DurationMs paused = std::min(now - x.since, x.overhead);
    if (n > 0 && paused > 0) result_.lost_gpu_ms += paused * n * x.shape.per_replica;
    if (n == 0 || ran <= 0) return;
    const double rate = ElasticRate(x.shape, n, config_.elastic.alpha);
    const auto done = static_cast<DurationMs>(std::llround(static_cast<double>(ran) * rate));
    w.progress_ms = std::min(jobs_[Row(id)].duration_ms, w.progress_ms + done);
  }

  // The world's membership changed at `now`: it restarts (the resize overhead, unless the change
  // is at the instant of the last one, as a placement's replicas start together) and its
  // processes end once the rest of the work is done at the new rate.
  void ElasticResized(JobId id, TimeMs now) {
    ElasticWorld& x = World(id);
    if (now != x.since) x.overhead = config_.elastic.resize_overhead_ms;
    x.since = now;
    const auto n = static_cast<int32_t>(x.processes.size());
    if (n == 0) {
      WorkOf(id).stopped = true;
      return;
    }
    const double rate = ElasticRate(x.shape, n, config_.elastic.alpha);
    const DurationMs left = jobs_[Row(id)].duration_ms - WorkOf(id).progress_ms;
    const TimeMs end =
        now + x.overhead + static_cast<DurationMs>(std::ceil(static_cast<double>(left) / rate));
    ++x.plan;
    for (auto& [key, plan] : x.processes) {
      plan = x.plan;
      Plan({end, 0, EventKind::kExit, key.first, key.second, 0, id, x.plan});
    }
  }

  bool ElasticPlanHolds(const Event& e) {
    const ElasticWorld& x = World(e.job);
    auto it = x.processes.find({e.node, e.process});
    return it != x.processes.end() && it->second == e.plan;
  }

  // Node n failed under a replica of elastic job id: the world goes on without it (the head
  // drops it, or ends the run below its minimum).
  void ElasticNodeFailed(JobId id, size_t n, TimeMs now) {
    ElasticWorld& x = World(id);
    ElasticKeep(id, now);
    for (auto it = x.processes.begin(); it != x.processes.end();) {
      it = it->first.first == n ? x.processes.erase(it) : std::next(it);
    }
    ElasticResized(id, now);
  }

  // A resize ends the run's record and opens one of its new size, so that the report counts
  // the GPUs it held over time.
  void ElasticRecordResize(const JobResized& e, TimeMs now) {
    const corral::Run* run = port_->core().state().jobs.at(e.job).CurrentRun();
    if (!IsElastic(e.job) || run == nullptr) return;
    RunRecord next = result_.runs[Open(e.job).run];
    result_.runs[Open(e.job).run].end = now;
    next.start = now;
    next.end = -1;
    next.placement = run->HeldPlacement();
    next.gpus = World(e.job).shape.per_replica * static_cast<int32_t>(next.placement.size());
    next.gpu_milli = int64_t{next.gpus} * kGpuMilli;
    Open(e.job).run = result_.runs.size();
    result_.runs.push_back(std::move(next));
  }

  // A uniformly distributed double in [0, 1) from the raw mt19937_64 stream (the same on
  // every platform, unlike std::exponential_distribution).
  double Uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }
  TimeMs UpTime(TimeMs from) {
    auto up = static_cast<DurationMs>(-std::log(1.0 - Uniform()) *
                                      static_cast<double>(config_.node_mtbf_ms));
    return from + std::max<DurationMs>(1, up);
  }

  // The node dies with its processes (their work since the last checkpoint lost) and falls
  // silent; the head finds out as it would, when the node misses its syncs.
  void FailNode(size_t n, TimeMs now) {
    ++result_.node_failures;
    // Its last sync: an agent syncs every few seconds, so the head heard from it until now.
    Report(n, now);
    for (const RunReport& r : nodes_[n].Report().runs) {
      RunId id;
      if (!r.running || !ParseRunId(r.run_id, &id)) continue;
      Work& w = WorkOf(id.job);
      if (IsElastic(id.job)) {
        if (w.attempt == id.attempt) ElasticNodeFailed(id.job, n, now);
      } else if (w.attempt == id.attempt && !w.stopped) {
        w.progress_ms = WorkAt(w, jobs_[Row(id.job)], now, /*checkpoint_now=*/false);
        w.stopped = true;
      }
    }
    nodes_[n].Fail();
    if (data_) {
      data_->NodeFailed(n, now);
      std::erase_if(data_process_, [n](const auto& p) { return p.first.first == n; });
      PlanFetch();
    }
    ++down_nodes_;
    const CoreConfig& c = port_->core().config();
    Plan({now + c.unreachable_after_ms + 1, 0, EventKind::kTick});
    Plan({now + c.down_after_ms + 1, 0, EventKind::kTick});
    Plan({now + config_.node_repair_ms, 0, EventKind::kNodeRepair, n});
  }

  void RepairNode(size_t n, TimeMs now) {
    --down_nodes_;
    Register(n, now);
    Plan({UpTime(now), 0, EventKind::kNodeFail, n});
  }

  // The estimates a user sees after submitting: the head's refresh once the instant's passes
  // are done. A job placed by them started at once and has none to judge.
  void Estimate(TimeMs now) {
    std::vector<JobId> watch;
    for (const auto& [row, id] : to_estimate_) {
      if (result_.jobs[row].first_start < 0) watch.push_back(id);
    }
    port_->EstimateStarts(kEpoch + now, watch);
    const std::map<JobId, sched::StartEstimate>& estimates = port_->core().start_estimates();
    for (const auto& [row, id] : to_estimate_) {
      JobOutcome& o = result_.jobs[row];
      o.estimate_sampled = true;
      if (o.first_start >= 0) continue;
      auto e = estimates.find(id);
      if (e != estimates.end() && e->second.start != sched::kUnknownTime) {
        o.estimated_start = e->second.start - kEpoch;
        o.estimate_confidence = e->second.confidence;
      }
    }
    to_estimate_.clear();
  }

  // The pass a head's timer runs while jobs wait (the commands' passes run in the port).
  void TimerPass(TimeMs now) {
    port_->Schedule(kEpoch + now);
    Pump(now);
  }

  const std::vector<TraceJob>& jobs_;
  SimConfig config_;
  // By job id - 1 (the core numbers jobs from 1, one per accepted submission): the trace row
  // (kNoRow: none, a refused submission) and what its processes did.
  std::vector<size_t> index_;
  std::vector<Work> work_;
  std::vector<ElasticWorld> worlds_;  // by job id - 1, as work_
  // By trace row: the distributions of PredictionInputs::bound (kUserGpus, kWindow).
  std::vector<sched::RunTimeQuantiles> bound_dists_;
  HeadPortFactory make_port_;
  std::unique_ptr<HeadPort> port_;
  std::vector<EmulatedNode> nodes_;
  std::map<std::string, size_t> by_name_;
  std::vector<OpenRun> open_runs_;  // by job id - 1
  std::set<size_t> predicted_by_name_;
  std::mt19937_64 rng_;  // node up times
  SimResult result_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t seq_ = 0;
  int64_t pending_ = 0;
  int64_t running_ = 0;
  TimeMs next_pass_ = kNever;
  TimeMs reservations_end_ = 0;  // of the last admin reservation (SimConfig::reservations)
  int64_t down_nodes_ = 0;       // failed, not yet repaired
  // SimConfig::data: the caches and the source, the run (job, attempt) of each process that
  // reads datasets, and the plan of the source's next completion (its time; -1: none).
  std::optional<DataWorld> data_;
  std::map<std::pair<size_t, uint64_t>, std::pair<JobId, int32_t>> data_process_;
  uint64_t fetch_plan_ = 0;
  TimeMs fetch_at_ = -1;
  std::vector<std::pair<size_t, JobId>> to_estimate_;  // submitted this instant: (row, id)
};

}  // namespace

Result<SimResult> Simulate(const std::vector<TraceJob>& jobs, const SimConfig& config,
                           HeadPortFactory head) {
  for (size_t i = 1; i < jobs.size(); ++i) {
    CORRAL_CHECK(jobs[i - 1].submit_ms <= jobs[i].submit_ms, "jobs must be sorted by submit");
  }
  if (!head) {
    head = [](head::CoreConfig c, TimeMs now) -> Result<std::unique_ptr<HeadPort>> {
      return MakeCorePort(std::move(c), now);
    };
  }
  Loop loop(jobs, config, std::move(head));
  return loop.Run();
}

}  // namespace corral::sim
