// The head's Prometheus metrics (DESIGN §11): counters fed by committed changes, gauges taken
// from the state when scraped.
#include <set>

#include "core/version.h"
#include "head/head.h"

namespace corral::head {

namespace {

// The label of a preemption's rule: LAS within and across queues together, the rules of the
// other orders and the age bound as "other".
const char* PreemptClass(PreemptKind kind) {
  switch (kind) {
    case PreemptKind::kLas:
    case PreemptKind::kLasAcrossQueues:
      return "las";
    case PreemptKind::kQuota:
      return "quota";
    case PreemptKind::kPriority:
      return "priority";
    default:
      return "other";
  }
}

}  // namespace

void Head::DescribeMetrics() {
  using T = MetricsRegistry::Type;
  auto& m = metrics_;
  m.Describe("corral_build_info", T::kGauge, "Always 1; the labels say which Corral this is.");
  m.Set("corral_build_info", {{"version", Version()}}, 1);
  m.Describe("corral_head_epoch", T::kGauge, "Leadership epoch of this head.");
  m.Describe("corral_state_revision", T::kGauge, "Revision of the last durable change.");
  m.Describe("corral_jobs", T::kGauge, "Jobs in memory by state.");
  m.Describe("corral_jobs_retired", T::kGauge,
             "Jobs that ended longer ago than --retain-finished: out of memory, in the store.");
  m.Describe("corral_pending_jobs", T::kGauge, "Pending jobs by queue and reason.");
  m.Describe("corral_queue_gpus_allocated", T::kGauge, "GPUs held by the runs of each queue.");
  m.Describe("corral_queue_gpu_quota", T::kGauge, "Guaranteed GPUs of each queue.");
  m.Describe("corral_nodes", T::kGauge, "Nodes by state.");
  m.Describe("corral_gpu_health", T::kGauge,
             "Each GPU's last health check: 0 ok, 1 warn, 2 critical (agents that check).");
  m.Describe("corral_gpu_drained", T::kGauge,
             "1 for each GPU out of service, by who drained it (source admin or health).");
  m.Describe("corral_gpu_xid_total", T::kCounter,
             "Xid events the agents reported since this head started, by node and Xid.");
  m.Describe("corral_idle_runs", T::kGauge,
             "Running runs whose GPUs have all stayed under the idle threshold long enough.");
  m.Describe("corral_gpus", T::kGauge,
             "GPUs by state (allocated, idle, unavailable); a GPU holding shares is allocated.");
  // Per shared GPU, not per job: /metrics names no jobs or users.
  m.Describe("corral_gpu_shares", T::kGauge, "Shares held on each shared GPU, by isolation.");
  m.Describe("corral_gpu_shared_milli", T::kGauge,
             "Milli-GPUs (of 1000) held by the shares of each shared GPU, by isolation.");
  m.Describe("corral_gpu_shared_memory_bytes", T::kGauge,
             "Device memory the shares of each shared GPU may use together, by isolation.");
  m.Describe("corral_queue_gpu_seconds_total", T::kCounter,
             "GPU-seconds used by each queue's finished runs.");
  m.Describe("corral_jobs_submitted_total", T::kCounter, "Jobs accepted.");
  m.Describe("corral_jobs_finished_total", T::kCounter, "Jobs ended, by final state.");
  m.Describe("corral_elastic_resizes_total", T::kCounter,
             "Elastic runs grown or shrunk, by cause (grow, reclaim, node_lost).");
  m.Describe("corral_preemptions_total", T::kCounter,
             "Runs asked to stop by preemption, by reason.");
  m.Describe("corral_schedule_pass_duration_seconds", T::kHistogram, "Scheduling pass duration.",
             MetricsRegistry::LatencyBuckets());
  m.Describe("corral_job_wait_seconds", T::kHistogram, "Submit-to-start wait of first runs.",
             MetricsRegistry::WaitBuckets());
  m.Describe("corral_store_commit_duration_seconds", T::kHistogram,
             "Group commit duration, hand-off to durable.", MetricsRegistry::LatencyBuckets());
  m.Describe("corral_api_request_duration_seconds", T::kHistogram,
             "API request duration by route and HTTP code.", MetricsRegistry::LatencyBuckets());
  // Services through the head's /v/NAME/ (api/service_proxy.h).
  m.Describe("corral_service_requests_total", T::kCounter,
             "Requests to each service through the head, by HTTP code and its class (2xx...).");
  m.Describe("corral_service_errors_total", T::kCounter,
             "Requests to each service that failed, by kind (no_ready_replica, queue_full, "
             "replica_unreachable, replica_5xx).");
  m.Describe("corral_service_requests_in_flight", T::kGauge,
             "Requests to each service in flight through the head, those held for a replica "
             "included.");
  m.Describe("corral_service_request_duration_seconds", T::kHistogram,
             "Duration of requests to each service through the head.",
             MetricsRegistry::LatencyBuckets());
  m.Describe("corral_service_replicas_ready", T::kGauge,
             "Replicas of each service that answer their health check.");
  m.Describe("corral_service_replicas_desired", T::kGauge, "Replicas each service wants running.");
  m.Describe("corral_dataset_source_rate_bytes_per_second", T::kGauge,
             "Each dataset source's last measured stage-in rate.");
  m.Describe("corral_dataset_source_rate_measured_timestamp_seconds", T::kGauge,
             "When each dataset source's rate was measured (Unix time; 0: not known).");
}

void Head::CountDurable(const Change& c) {
  const ClusterState& s = core_.state();
  if (std::holds_alternative<JobSubmitted>(c.what)) {
    metrics_.Add("corral_jobs_submitted_total", {}, 1);
  } else if (const auto* a = std::get_if<ArraySubmitted>(&c.what)) {
    metrics_.Add("corral_jobs_submitted_total", {}, static_cast<double>(a->size()));
  } else if (const auto* e = std::get_if<RunStarted>(&c.what); e && e->attempt == 1) {
    const Job& job = s.jobs.at(e->job);
    metrics_.Observe("corral_job_wait_seconds", {{"queue", job.spec.queue}},
                     std::max<double>(0, (e->started_at - job.submitted_at) / 1000.0));
  } else if (const auto* e = std::get_if<StopRequested>(&c.what);
             e && e->cause == StopCause::kPreempted) {
    metrics_.Add("corral_preemptions_total", {{"reason", PreemptClass(e->preempt)}}, 1);
  } else if (const auto* e = std::get_if<RunEnded>(&c.what)) {
    const Job& job = s.jobs.at(e->job);
    const corral::Run& run = job.runs[e->attempt - 1];
    if (run.started_at > 0 && run.ended_at > run.started_at) {
      // Per replica held over time: an elastic run's size changes (Run::ReplicaMs).
      const DurationMs replica_ms = run.joined_at.empty()
                                        ? job.spec.replicas * (run.ended_at - run.started_at)
                                        : run.ReplicaMs(run.ended_at);
      double gpus = job.spec.per_replica.gpu_milli / double(kGpuMilli);
      metrics_.Add("corral_queue_gpu_seconds_total", {{"queue", job.spec.queue}},
                   gpus * static_cast<double>(replica_ms) / 1000.0);
    }
    if (IsTerminal(e->job_state)) {
      metrics_.Add("corral_jobs_finished_total", {{"state", JobStateName(e->job_state)}}, 1);
    }
  } else if (const auto* e = std::get_if<JobEnded>(&c.what)) {
    metrics_.Add("corral_jobs_finished_total", {{"state", JobStateName(e->state)}}, 1);
  } else if (const auto* e = std::get_if<JobResized>(&c.what)) {
    metrics_.Add("corral_elastic_resizes_total", {{"cause", ResizeCauseName(e->cause)}}, 1);
  }
}

namespace {

// Jobs by state, and pending jobs by queue and the class of why they wait.
void SetJobGauges(const ClusterState& s, const HeadCore& core, MetricsRegistry& m) {
  std::map<std::string, int64_t> by_state;
  std::map<std::pair<std::string, std::string>, int64_t> pending;
  for (const auto& [id, job] : s.jobs) {
    ++by_state[JobStateName(job.state)];
    if (job.state == JobState::kPending) {
      auto r = core.pending_reasons().find(id);
      PendingCode code = r == core.pending_reasons().end() ? PendingCode::kNone : r->second.code;
      ++pending[{job.spec.queue, PendingCodeName(code)}];
    }
  }
  for (JobState st : {JobState::kPending, JobState::kScheduled, JobState::kRunning,
                      JobState::kSucceeded, JobState::kFailed, JobState::kCancelled}) {
    m.Set("corral_jobs", {{"state", JobStateName(st)}}, by_state[JobStateName(st)]);
  }
  for (const auto& [key, n] : pending) {
    m.Set("corral_pending_jobs", {{"queue", key.first}, {"reason", key.second}}, n);
  }
}

// GPUs held per queue against its quota, and each shared GPU's shares. The GPUs held (whole or
// shared).
int64_t SetAllocationGauges(const ClusterState& s, const HeadCore& core, MetricsRegistry& m) {
  std::map<std::string, double> allocated;
  std::set<std::pair<std::string, int32_t>> held;  // (node, GPU): whole or shared
  struct Shared {
    int64_t shares = 0, milli = 0, memory_mb = 0;
  };
  std::map<MetricLabels, Shared> shared;
  for (JobId id : core.active_jobs()) {
    const Job& job = s.jobs.at(id);
    for (const ReplicaPlacement& p : job.CurrentRun()->placement) {
      for (const GpuShare& g : Shares(p)) {
        allocated[job.spec.queue] += g.milli / double(kGpuMilli);
        held.insert({p.node, g.index});
        if (p.gpu_milli.empty()) continue;
        Shared& sh = shared[{{"node", p.node},
                             {"gpu", std::to_string(g.index)},
                             {"isolation", GpuIsolationName(job.spec.per_replica.gpu_isolation)}}];
        ++sh.shares;
        sh.milli += g.milli;
        sh.memory_mb += g.memory_mb;
      }
    }
  }
  for (const auto& [labels, sh] : shared) {
    m.Set("corral_gpu_shares", labels, static_cast<double>(sh.shares));
    m.Set("corral_gpu_shared_milli", labels, static_cast<double>(sh.milli));
    m.Set("corral_gpu_shared_memory_bytes", labels, double(sh.memory_mb) * 1024 * 1024);
  }
  for (const auto& [name, q] : s.queues) {
    m.Set("corral_queue_gpu_quota", {{"queue", name}}, q.quota_gpus);
    m.Set("corral_queue_gpus_allocated", {{"queue", name}}, allocated[name]);
  }
  return static_cast<int64_t>(held.size());
}

// Nodes by state; GPUs allocated, idle and unavailable; drained GPUs, health checks and Xids.
void SetNodeGauges(const ClusterState& s, const HeadCore& core, int64_t gpus_allocated,
                   MetricsRegistry& m) {
  std::map<std::string, int64_t> nodes;
  int64_t usable = 0, unusable = 0;
  for (const auto& [name, node] : s.nodes) {
    // An unhealthy ready node is counted as unhealthy: it takes no new runs.
    NodeState st = node.state();
    ++nodes[st == NodeState::kReady && !node.unhealthy.empty() ? "unhealthy" : NodeStateName(st)];
    bool ok = st == NodeState::kReady || st == NodeState::kDraining;
    for (const Gpu& g : node.gpus) {
      (ok && g.healthy && !node.gpu_drains.count(g.index) ? usable : unusable) += 1;
    }
    for (const auto& [gpu, d] : node.gpu_drains) {
      m.Set("corral_gpu_drained",
            {{"node", name}, {"gpu", std::to_string(gpu)}, {"source", DrainSourceName(d.source)}},
            1);
    }
  }
  for (const NodeView& v : core.ListNodes()) {
    for (const GpuSample& g : v.gpu_samples) {
      if (g.check == 0) continue;
      m.Set("corral_gpu_health", {{"node", v.node.name}, {"gpu", std::to_string(g.index)}},
            static_cast<int>(g.health));
    }
  }
  for (const auto& [key, n] : core.xid_counts()) {
    m.Set("corral_gpu_xid_total", {{"node", key.first}, {"xid", std::to_string(key.second)}},
          static_cast<double>(n));
  }
  for (NodeState st : {NodeState::kReady, NodeState::kDraining, NodeState::kDrained,
                       NodeState::kUnreachable, NodeState::kDown}) {
    m.Set("corral_nodes", {{"state", NodeStateName(st)}}, nodes[NodeStateName(st)]);
  }
  m.Set("corral_nodes", {{"state", "unhealthy"}}, nodes["unhealthy"]);
  m.Set("corral_gpus", {{"state", "allocated"}}, gpus_allocated);
  m.Set("corral_gpus", {{"state", "idle"}}, std::max<int64_t>(0, usable - gpus_allocated));
  m.Set("corral_gpus", {{"state", "unavailable"}}, unusable);
}

}  // namespace

void Head::RenderMetrics(Callback<std::string> done) {
  Post([this, done = std::move(done)] {
    const ClusterState& s = core_.state();
    auto& m = metrics_;
    for (const char* g :
         {"corral_jobs", "corral_pending_jobs", "corral_queue_gpus_allocated",
          "corral_queue_gpu_quota", "corral_nodes", "corral_gpus", "corral_gpu_shares",
          "corral_gpu_shared_milli", "corral_gpu_shared_memory_bytes",
          "corral_dataset_source_rate_bytes_per_second",
          "corral_dataset_source_rate_measured_timestamp_seconds"}) {
      m.Clear(g);
    }
    m.Set("corral_head_epoch", {}, static_cast<double>(s.epoch));
    m.Set("corral_idle_runs", {}, static_cast<double>(core_.idle_runs().size()));
    m.Set("corral_jobs_retired", {}, static_cast<double>(s.retired.size()));
    m.Set("corral_state_revision", {}, static_cast<double>(durable_revision_));
    SetJobGauges(s, core_, m);
    const int64_t gpus_allocated = SetAllocationGauges(s, core_, m);
    SetNodeGauges(s, core_, gpus_allocated, m);
    for (const DatasetSourceRate& r : s.datasets.SourceRates()) {
      m.Set("corral_dataset_source_rate_bytes_per_second", {{"source", r.source}},
            static_cast<double>(r.bytes_per_second));
      m.Set("corral_dataset_source_rate_measured_timestamp_seconds", {{"source", r.source}},
            static_cast<double>(r.measured_at) / 1000.0);
    }
    done(m.Render());
  });
}

}  // namespace corral::head
