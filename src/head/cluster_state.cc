#include "head/cluster_state.h"

#include <algorithm>

#include "core/spec.h"
#include "sched/job_input.h"

namespace corral::head {
namespace {

std::string DescribePlacement(const std::vector<ReplicaPlacement>& placement) {
  std::string out;
  for (const ReplicaPlacement& p : placement) {
    if (!out.empty()) out += " ";
    out += p.node + "[";
    for (size_t i = 0; i < p.gpus.size(); ++i) out += (i ? "," : "") + std::to_string(p.gpus[i]);
    out += "]";
    if (p.tasks > 1) out += "x" + std::to_string(p.tasks) + " tasks";
  }
  return out;
}

Job& JobAt(ClusterState& s, JobId id) {
  auto it = s.jobs.find(id);
  CORRAL_CHECK(it != s.jobs.end(), "change names unknown job " + std::to_string(id));
  return it->second;
}

Run& RunAt(ClusterState& s, JobId id, int32_t attempt) {
  Job& job = JobAt(s, id);
  CORRAL_CHECK(attempt >= 1 && attempt <= static_cast<int32_t>(job.runs.size()),
               "change names unknown run " + ToString(RunId{id, attempt}));
  return job.runs[attempt - 1];
}

struct Applier {
  ClusterState& s;
  TimeMs at;

  void Event(Job& job, std::string what, std::string reason) {
    job.events.push_back({at, std::move(what), std::move(reason)});
  }

  void operator()(const HeadStarted& c) {
    s.epoch = c.epoch;
    if (!c.step_key.empty()) s.step_key = c.step_key;
  }
  void operator()(const RunSignalled& c) {
    Run& run = RunAt(s, c.job, c.attempt);
    if (c.to_replicas) {
      ++run.signals;
      run.last_signal = c.signal;
    }
    if (c.to_steps) {
      ++run.step_signals;
      run.last_step_signal = c.signal;
    }
    Event(JobAt(s, c.job), "signalled",
          "signal " + std::to_string(c.signal) +
              (c.to_replicas && c.to_steps ? ""
               : c.to_steps                ? " to its steps"
                                           : " to its batch step"));
  }
  void operator()(const JobHoldSet& c) {
    Job& job = JobAt(s, c.job);
    job.held = c.held;
    Event(job, c.held ? "held" : "released", "");
  }
  void operator()(const JobUpdated& c) {
    Job& job = JobAt(s, c.job);
    std::string what;
    auto note = [&what](const std::string& field, const std::string& from, const std::string& to) {
      if (from != to) what += (what.empty() ? "" : ", ") + field + " " + from + " -> " + to;
    };
    auto limit = [](DurationMs ms) { return ms > 0 ? std::to_string(ms / 1000) + " s" : "none"; };
    note("time limit", limit(job.spec.time_limit_ms), limit(c.time_limit_ms));
    note("priority", std::to_string(job.spec.priority), std::to_string(c.priority));
    note("queue", job.spec.queue, c.queue);
    job.spec.time_limit_ms = c.time_limit_ms;
    job.spec.priority = c.priority;
    job.spec.queue = c.queue;
    Event(job, "updated", what);
  }
  void operator()(const StepStarted& c) {
    Run& run = RunAt(s, c.job, c.attempt);
    CORRAL_CHECK(c.step.id == static_cast<int32_t>(run.steps.size()), "step out of order");
    run.steps.push_back(c.step);
  }
  void operator()(const StepExited& c) {
    Run& run = RunAt(s, c.job, c.attempt);
    CORRAL_CHECK(c.step >= 0 && c.step < static_cast<int32_t>(run.steps.size()), "unknown step");
    Step& step = run.steps[c.step];
    CORRAL_CHECK(c.index >= 0 && c.index < static_cast<int32_t>(step.exit_codes.size()),
                 "step index out of range");
    step.exit_codes[c.index] = c.exit_code;
    if (std::find(step.exit_codes.begin(), step.exit_codes.end(), kNotExited) ==
        step.exit_codes.end()) {
      step.ended_at = at;
    }
  }
  void operator()(const JobSubmitted& c) { Submitted(*c.job); }
  void operator()(const ArraySubmitted& c) {
    for (size_t i = 0; i < c.size(); ++i) Submitted(c.Element(i));
  }
  void Submitted(Job job) {
    job.state = JobState::kPending;
    Event(job, "submitted", "by " + job.owner + " to queue " + job.spec.queue);
    s.next_job_id = std::max(s.next_job_id, job.id + 1);
    JobId id = job.id;
    s.jobs.insert_or_assign(s.jobs.end(), id, std::move(job));
  }
  void operator()(const RunPlaced& c) {
    Job& job = JobAt(s, c.job);
    Run run;
    run.attempt = c.attempt;
    run.placement = c.placement;
    run.state = RunState::kScheduled;
    run.scheduled_at = at;
    run.exit_codes.assign(c.placement.size(), kNotExited);
    run.master_port = c.master_port;
    job.runs.push_back(std::move(run));
    job.state = JobState::kScheduled;
    job.pending_code = PendingCode::kNone;
    job.pending_reason.clear();
    Event(job, "scheduled", DescribePlacement(c.placement));
  }
  void operator()(const RunStarted& c) {
    Job& job = JobAt(s, c.job);
    Run& run = RunAt(s, c.job, c.attempt);
    run.state = RunState::kRunning;
    run.started_at = c.started_at;
    job.state = JobState::kRunning;
    job.events.push_back({c.started_at, "running", ""});
  }
  void operator()(const ReplicaExited& c) {
    Run& run = RunAt(s, c.job, c.attempt);
    CORRAL_CHECK(c.replica >= 0 && c.replica < static_cast<int32_t>(run.exit_codes.size()),
                 "replica out of range");
    run.exit_codes[c.replica] = c.exit_code;
    // A replica taken from an elastic run held its GPUs until now (through its grace).
    if (run.Departed(c.replica) && static_cast<size_t>(c.replica) < run.left_at.size() &&
        run.left_at[c.replica] == 0) {
      run.left_at[c.replica] = at;
    }
    run.peak_memory_bytes = std::max(run.peak_memory_bytes, c.peak_memory_bytes);
    run.cpu_ms += c.cpu_ms;
    // The cause of a failed run: the first replica to fail before anyone asked it to stop.
    if (c.exit_code != 0 && !run.stop_requested && run.failed_replica < 0 &&
        !run.Departed(c.replica)) {
      run.failed_replica = c.replica;
      run.failed_task = c.task;
    }
  }
  void operator()(const StopRequested& c) {
    Run& run = RunAt(s, c.job, c.attempt);
    run.stop_requested = true;
    run.stop_requested_at = at;
    run.reason = c.reason;
    run.cause = c.cause;
    Event(JobAt(s, c.job), "stopping", c.reason);
  }
  void operator()(const RunEnded& c) {
    Job& job = JobAt(s, c.job);
    Run& run = RunAt(s, c.job, c.attempt);
    run.state = c.run_state;
    run.ended_at = at;
    if (!c.reason.empty()) run.reason = c.reason;
    run.cause = c.cause;
    job.state = c.job_state;
    if (c.job_state == JobState::kPending) {
      // A preempted run's reason says so itself ("preempted: for job 7 ...", "requeued: ...").
      std::string what = "run " + std::to_string(run.attempt);
      if (c.run_state != RunState::kPreempted || run.reason.empty()) {
        what += std::string(" ") + RunStateName(c.run_state);
      }
      Event(job, "requeued", what + ": " + run.reason);
      return;
    }
    job.ended_at = at;
    job.exit_code = c.exit_code;
    Event(job, JobStateName(c.job_state), run.reason);
  }
  void operator()(const JobEnded& c) {
    Job& job = JobAt(s, c.job);
    job.state = c.state;
    job.ended_at = at;
    Event(job, JobStateName(c.state), c.reason);
  }
  void operator()(const CheckpointReported& c) {
    RunAt(s, c.job, c.attempt).last_checkpoint_at = at;
  }
  void operator()(const RunNoted& c) { Event(JobAt(s, c.job), c.what, c.note); }
  void operator()(const RunUsageSampled& c) {
    Run& run = RunAt(s, c.job, c.attempt);
    auto it = std::find_if(run.usage.begin(), run.usage.end(),
                           [&](const ReplicaUsage& u) { return u.replica == c.replica; });
    if (it == run.usage.end()) {
      // Kept in replica order.
      it = run.usage.insert(
          std::find_if(run.usage.begin(), run.usage.end(),
                       [&](const ReplicaUsage& u) { return u.replica > c.replica; }),
          ReplicaUsage{c.replica, 0, {}});
    }
    AppendUsage(&*it, c.points);
  }
  void operator()(const JobResized& c) {
    Job& job = JobAt(s, c.job);
    Run& run = RunAt(s, c.job, c.attempt);
    const int32_t before = run.LiveReplicas();
    // From the first resize on, each replica's time in the run is kept (GPU time counts the
    // replicas held, not the run's largest size).
    run.joined_at.resize(run.placement.size(), 0);
    run.left_at.resize(run.placement.size(), 0);
    for (const ReplicaPlacement& p : c.added) {
      run.placement.push_back(p);
      run.exit_codes.push_back(kNotExited);
      run.joined_at.push_back(at);
      run.left_at.push_back(0);
    }
    for (int32_t r : c.removed) {
      CORRAL_CHECK(r >= 0 && r < static_cast<int32_t>(run.placement.size()) &&
                       !std::binary_search(run.departed.begin(), run.departed.end(), r),
                   "job_resized removes a replica the run does not hold");
      run.departed.insert(std::upper_bound(run.departed.begin(), run.departed.end(), r), r);
      // A lost node's replica holds nothing from now; one asked to leave, until it exits.
      if (c.cause == ResizeCause::kNodeLost) {
        run.exit_codes[r] = kReplicaLost;
        run.left_at[r] = at;
      }
    }
    ++run.resizes;
    if (c.cause == ResizeCause::kNodeLost) ++run.peers_lost;
    std::string what = c.added.empty() ? "shrunk" : "grown";
    std::string sizes = std::to_string(before) + " -> " + std::to_string(run.LiveReplicas()) +
                        " replicas (" + std::to_string(job.spec.min_replicas) + ":" +
                        std::to_string(job.spec.replicas) + ")";
    std::string where = c.added.empty() ? "" : " on " + DescribePlacement(c.added);
    Event(job, std::move(what), sizes + where + (c.reason.empty() ? "" : ": " + c.reason));
  }
  void operator()(const IdleWarned& c) {
    Job& job = JobAt(s, c.job);
    if (job.spec.interactive) {  // a session past its queue's idle_timeout (core_sessions.cc)
      Event(job, "idle warning",
            "no terminal input and its GPUs (if any) unused for " +
                FormatDuration(at - c.idle_since) + "; the session ends in " +
                FormatDuration(c.stop_at - at) + " unless used (its queue's idle_timeout)");
      return;
    }
    Event(job, "idle warning",
          "its GPUs have been idle for " + FormatDuration(at - c.idle_since) +
              "; it will be stopped in " + FormatDuration(c.stop_at - at) +
              " unless they are used (its queue stops idle runs)");
  }
  void operator()(const NodeRegistered& c) {
    for (auto it = s.credentials.begin(); it != s.credentials.end();) {
      bool old = it->second.who.kind == Caller::Kind::kNode && it->second.who.name == c.node.name;
      it = old ? s.credentials.erase(it) : std::next(it);
    }
    s.credentials[c.credential.hash] = c.credential;
    s.nodes[c.node.name] = c.node;
  }
  void operator()(const NodeRemoved& c) {
    CORRAL_CHECK(s.nodes.count(c.node), "change names unknown node " + c.node);
    for (auto it = s.credentials.begin(); it != s.credentials.end();) {
      bool its = it->second.who.kind == Caller::Kind::kNode && it->second.who.name == c.node;
      it = its ? s.credentials.erase(it) : std::next(it);
    }
    s.nodes.erase(c.node);
  }
  void operator()(const NodeLivenessSet& c) {
    auto it = s.nodes.find(c.node);
    CORRAL_CHECK(it != s.nodes.end(), "change names unknown node " + c.node);
    it->second.liveness = c.liveness;
  }
  void operator()(const NodeDrainSet& c) {
    auto it = s.nodes.find(c.node);
    CORRAL_CHECK(it != s.nodes.end(), "change names unknown node " + c.node);
    // The operator's words stay while draining becomes drained (its last run ended).
    if (c.drain == Drain::kNone || it->second.drain == Drain::kNone) {
      it->second.drain_reason = c.drain == Drain::kNone ? "" : c.reason;
    }
    it->second.drain = c.drain;
  }
  void operator()(const GpuDrainSet& c) {
    auto it = s.nodes.find(c.node);
    CORRAL_CHECK(it != s.nodes.end(), "change names unknown node " + c.node);
    if (c.drain.source == DrainSource::kNone) {
      it->second.gpu_drains.erase(c.gpu);
    } else {
      it->second.gpu_drains[c.gpu] = c.drain;
    }
  }
  void operator()(const NodeHealthSet& c) {
    auto it = s.nodes.find(c.node);
    CORRAL_CHECK(it != s.nodes.end(), "change names unknown node " + c.node);
    for (Gpu& g : it->second.gpus) g.healthy = !c.faults.count(g.index);
    it->second.unhealthy = UnhealthyReason(c.faults);
  }
  void operator()(const QueueSet& c) { s.queues[c.queue.name] = c.queue; }
  void operator()(const QosSet& c) { s.qos[c.qos.name] = c.qos; }
  void operator()(const QosDeleted& c) { s.qos.erase(c.name); }
  void operator()(const ReservationSet& c) { s.reservations[c.reservation.name] = c.reservation; }
  void operator()(const ReservationDeleted& c) { s.reservations.erase(c.name); }
  void operator()(const DatasetAdded& c) { s.datasets.Apply(c); }
  void operator()(const DatasetRemoved& c) { s.datasets.Apply(c); }
  void operator()(const SourceRateMeasured& c) { s.datasets.Apply(c, at); }
  void operator()(const SourceLimitSet& c) { s.datasets.Apply(c); }
  void operator()(const StageInQueued& c) { s.datasets.Apply(c); }
  void operator()(const StageInAdmitted& c) { s.datasets.Apply(c); }
  void operator()(const ServiceCreated& c) { s.services[c.service->spec.name] = *c.service; }
  void operator()(const ServiceUpdated& c) { s.services[c.service->spec.name] = *c.service; }
  void operator()(const ServiceRemoved& c) { s.services.erase(c.name); }
  void operator()(const ServiceRolloutStarted& c) {
    StartRollout(ServiceNamed(c.name), *c.spec, c.ready_timeout_ms, at, s.next_job_id);
  }
  void operator()(const ServiceRolloutEnded& c) {
    EndRollout(ServiceNamed(c.name), c.rolled_back, c.reason, s.next_job_id);
  }
  void operator()(const ServiceReplicaMarked& c) {
    Service& service = ServiceNamed(c.name);
    ForgetEndedReplicas(service, [&](JobId id) {
      auto job = s.jobs.find(id);
      return job != s.jobs.end() && !IsTerminal(job->second.state);
    });
    MarkReplica(service, c.job, c.mark, c.until);
  }
  void operator()(const ServiceScaled& c) { ServiceNamed(c.name).desired = c.to; }
  Service& ServiceNamed(const std::string& name) {
    auto it = s.services.find(name);
    CORRAL_CHECK(it != s.services.end(), "change names unknown service " + name);
    return it->second;
  }
  void operator()(const JobsRetired& c) {
    // The store marks the rows retired, and keeps the usage, in the change's own commit: on
    // recovery the jobs are already out of the rows loaded, their usage already counted.
    std::vector<JobId> ids;
    for (JobId id : c.jobs) {
      if (s.jobs.count(id)) {
        ids.push_back(id);
      } else {
        CORRAL_CHECK(s.retired.count(id), "change retires unknown job " + std::to_string(id));
      }
    }
    for (JobId id : ids) {
      const Job& job = JobAt(s, id);
      for (const sched::PastUsage& u : sched::PastUsageOf(job, at)) {
        RetiredUsage& r = s.retired_usage[{u.queue, u.user, u.to / kDay}];
        DurationMs ms = u.to - u.from;
        r.gpu_ms += u.gpu_milli * ms / kGpuMilli;
        r.cpu_milli_ms += u.cpu_milli * ms;
        r.memory_mb_ms += u.memory_mb * ms;
        r.last_end = std::max(r.last_end, u.to);
      }
      s.retired[id] = job.state;
    }
    for (JobId id : ids) {  // an array's id answers for the whole array
      const Job& job = s.jobs.at(id);
      if (job.array_id != id) continue;
      bool all_ok = true;
      for (auto it = s.jobs.find(id); it != s.jobs.end() && it->second.array_id == id; ++it) {
        all_ok &= it->second.state == JobState::kSucceeded;
      }
      s.retired[id] = all_ok ? JobState::kSucceeded : JobState::kFailed;
    }
    for (JobId id : ids) s.jobs.erase(id);
    int64_t oldest = at / kDay - kRetiredUsageDays;
    while (!s.retired_usage.empty() && s.retired_usage.begin()->first.day < oldest) {
      s.retired_usage.erase(s.retired_usage.begin());
    }
  }
  void operator()(const TokenIssued& c) { s.credentials[c.credential.hash] = c.credential; }
  void operator()(const TokenRevoked& c) {
    for (auto it = s.credentials.begin(); it != s.credentials.end(); ++it) {
      if (it->second.id == c.id) {
        s.credentials.erase(it);
        return;
      }
    }
  }
};

}  // namespace

void ApplyChange(ClusterState& state, const Change& change) {
  CORRAL_CHECK(change.revision == state.revision + 1, "change " + std::to_string(change.revision) +
                                                          " applied at revision " +
                                                          std::to_string(state.revision));
  std::visit(Applier{state, change.at}, change.what);
  // A stage-in leaves its sources' line once its run starts or ends, whichever change did it.
  if (!state.datasets.stage_ins().empty()) state.datasets.PruneStageIns(state.jobs);
  state.revision = change.revision;
}

Json StateToJson(const ClusterState& s) {
  Json jobs = Json::array();
  for (const auto& [id, job] : s.jobs) {
    Json j = ToJson(job);
    j.erase("pending_reason");
    j.erase("pending_code");
    jobs.push_back(std::move(j));
  }
  Json nodes = Json::array();
  for (const auto& [name, node] : s.nodes) {
    Json j = ToJson(node);
    j.erase("last_heartbeat");
    nodes.push_back(std::move(j));
  }
  Json queues = Json::array();
  for (const auto& [name, q] : s.queues) queues.push_back(ToJson(q));
  Json creds = Json::array();
  for (const auto& [hash, c] : s.credentials) creds.push_back(ToJson(c));
  Json qos = Json::array();
  for (const auto& [name, q] : s.qos) qos.push_back(ToJson(q));
  Json reservations = Json::array();
  for (const auto& [name, r] : s.reservations) reservations.push_back(ToJson(r));
  Json services = Json::array();
  for (const auto& [name, v] : s.services) services.push_back(ToJson(v));
  Json retired = Json::array();
  for (const auto& [id, state] : s.retired) retired.push_back(Json{id, JobStateName(state)});
  return Json{{"revision", s.revision},
              {"epoch", s.epoch},
              {"next_job_id", s.next_job_id},
              {"jobs", jobs},
              {"nodes", nodes},
              {"queues", queues},
              {"credentials", creds},
              {"step_key", s.step_key},
              {"retired", retired},
              {"retired_usage", RetiredUsageToJson(s.retired_usage)},
              {"qos", qos},
              {"reservations", reservations},
              {"datasets", s.datasets.ToJson()},
              {"dataset_sources", s.datasets.SourcesToJson()},
              {"dataset_budgets", s.datasets.BudgetsToJson()},
              {"services", services}};
}

Json RetiredUsageToJson(const std::map<RetiredUsageKey, RetiredUsage>& usage) {
  Json out = Json::array();
  for (const auto& [k, u] : usage) {
    out.push_back(Json::array(
        {k.queue, k.user, k.day, u.gpu_ms, u.cpu_milli_ms, u.memory_mb_ms, u.last_end}));
  }
  return out;
}

Result<std::map<RetiredUsageKey, RetiredUsage>> RetiredUsageFromJson(const Json& j) {
  std::map<RetiredUsageKey, RetiredUsage> out;
  try {
    for (const Json& row : j) {
      if (!row.is_array() || row.size() != 7) throw std::runtime_error("a row is not 7 values");
      out[{row[0].get<std::string>(), row[1].get<std::string>(), row[2].get<int64_t>()}] = {
          row[3].get<int64_t>(), row[4].get<int64_t>(), row[5].get<int64_t>(),
          row[6].get<int64_t>()};
    }
  } catch (const std::exception& e) {
    return Internal(std::string("store meta 'retired_usage': ") + e.what());
  }
  return out;
}

}  // namespace corral::head
