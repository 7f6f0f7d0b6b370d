// Jobs through their lifecycle (DESIGN §5): submit, schedule, run, stop, finish, requeue.
#include <filesystem>

#include "core/spec.h"
#include "head/head.h"

namespace corral::head {
namespace {

constexpr char kReasonCancelled[] = "cancelled";
constexpr char kReasonPreempted[] = "preempted";
constexpr char kReasonTimeLimit[] = "time limit";

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

std::string DescribePlacement(const std::vector<ReplicaPlacement>& placement) {
  std::string out;
  for (const ReplicaPlacement& p : placement) {
    if (!out.empty()) out += " ";
    out += p.node + "[";
    for (size_t i = 0; i < p.gpus.size(); ++i) out += (i ? "," : "") + std::to_string(p.gpus[i]);
    out += "]";
  }
  return out;
}

}  // namespace

void Head::AddEvent(Job& job, TimeMs at, std::string what, std::string reason) {
  job.events.push_back({at, std::move(what), std::move(reason)});
}

sched::PendingJob Head::ToPending(const Job& job) const {
  sched::PendingJob p;
  p.id = job.id;
  p.queue = job.spec.queue;
  p.user = job.owner;
  p.priority = job.spec.priority;
  p.submitted_at = job.submitted_at;
  p.replicas = job.spec.replicas;
  p.per_replica = job.spec.per_replica;
  p.gpu_model = job.spec.gpu_model;
  p.node_labels = job.spec.node_labels;
  p.time_limit_ms = job.spec.time_limit_ms;
  p.preemptible = job.spec.preemptible;
  // GPU-time the job's finished runs held: the scheduler orders a queue by attained service
  // (and adds the current run itself), so a requeued job keeps the level it reached.
  const DurationMs gpus = job.spec.replicas * job.spec.per_replica.WholeGpus();
  for (const Run& r : job.runs) {
    if (IsRunOver(r.state) && r.started_at > 0 && r.ended_at > r.started_at) {
      p.attained_ms += gpus * (r.ended_at - r.started_at);
    }
  }
  return p;
}

void Head::DoSubmit(JobSpec spec, std::string user, Callback<Job> done) {
  Job job;
  job.spec = std::move(spec);
  job.owner = user.empty() ? "admin" : std::move(user);
  sched::PendingJob pending = ToPending(job);
  int32_t total_gpus = job.spec.replicas * job.spec.per_replica.WholeGpus();
  if (auto q = queues_.find(job.spec.queue);
      q != queues_.end() && q->second.limit_gpus >= 0 && total_gpus > q->second.limit_gpus) {
    return Reply<Job>(
        std::move(done),
        InvalidArgument("field 'gpus': the job needs " + std::to_string(total_gpus) +
                        " GPUs, more than queue '" + job.spec.queue + "' may ever use (limit " +
                        std::to_string(q->second.limit_gpus) + ")"));
  }
  std::string why;
  if (scheduler_.Admit(pending, &why) == sched::Fit::kInfeasible) {
    return Reply<Job>(std::move(done), InvalidArgument("job can never fit: " + why));
  }
  TimeMs now = clock_->Now();
  job.id = next_job_id_++;
  job.submitted_at = now;
  job.state = JobState::kPending;
  AddEvent(job, now, "submitted", "by " + job.owner + " to queue " + job.spec.queue);
  pending.id = job.id;
  pending.submitted_at = now;
  scheduler_.AddPending(pending);
  PersistJob(job);
  Job copy = job;
  jobs_[job.id] = std::move(job);
  RequestSchedule();
  Reply<Job>(std::move(done), std::move(copy));
}

void Head::DoCancel(JobId id, Callback<Job> done) {
  auto it = jobs_.find(id);
  if (it == jobs_.end())
    return Reply<Job>(std::move(done), NotFound("no job " + std::to_string(id)));
  Job& job = it->second;
  TimeMs now = clock_->Now();
  if (IsTerminal(job.state)) {
    return Reply<Job>(std::move(done), FailedPrecondition("job " + std::to_string(id) +
                                                          " already " + JobStateName(job.state)));
  }
  if (job.state == JobState::kPending) {
    scheduler_.RemovePending(id);
    job.state = JobState::kCancelled;
    job.ended_at = now;
    AddEvent(job, now, "cancelled", "by user while pending");
    PersistJob(job);
  } else {
    RequestStop(job, kReasonCancelled, now);
  }
  Reply<Job>(std::move(done), job);
}

void Head::RequestSchedule() {
  if (schedule_requested_) return;
  schedule_requested_ = true;
  Post([this] { RunSchedulePass(); });
}

void Head::RunSchedulePass() {
  schedule_requested_ = false;
  TimeMs now = clock_->Now();
  sched::Decisions d = scheduler_.Schedule(now);
  for (const sched::PlaceDecision& p : d.place) ApplyPlacement(p, now);
  for (const sched::PreemptDecision& p : d.preempt) {
    auto it = jobs_.find(p.job);
    if (it == jobs_.end() || !active_jobs_.count(p.job)) continue;
    RequestStop(it->second, std::string(kReasonPreempted) + ": " + p.reason, now);
  }
  for (const sched::WaitReason& w : d.waiting) {
    if (auto it = jobs_.find(w.job); it != jobs_.end()) it->second.pending_reason = w.reason;
  }
}

void Head::ApplyPlacement(const sched::PlaceDecision& d, TimeMs now) {
  auto it = jobs_.find(d.job);
  if (it == jobs_.end() || it->second.state != JobState::kPending) {
    scheduler_.RemoveRunning(d.job);  // stale decision: give the resources back
    return;
  }
  Job& job = it->second;
  Run run;
  run.attempt = static_cast<int32_t>(job.runs.size()) + 1;
  run.placement = d.placement;
  run.state = RunState::kScheduled;
  run.scheduled_at = now;
  run.exit_codes.assign(d.placement.size(), kNotExited);
  job.runs.push_back(std::move(run));
  job.state = JobState::kScheduled;
  job.pending_reason.clear();
  AddEvent(job, now, "scheduled", DescribePlacement(d.placement));
  active_jobs_.insert(job.id);
  for (const ReplicaPlacement& p : d.placement) {
    node_runs_[p.node].insert(job.id);
    BumpNode(p.node);
  }
  PersistJob(job);
}

void Head::RequestStop(Job& job, const std::string& reason, TimeMs now) {
  Run* run = job.CurrentRun();
  if (!run || run->stop_requested || IsRunOver(run->state)) return;
  run->stop_requested = true;
  run->stop_requested_at = now;
  run->reason = reason;
  AddEvent(job, now, "stopping", reason);
  for (const ReplicaPlacement& p : run->placement) BumpNode(p.node);
  PersistJob(job);
}

void Head::OnReplicaReport(Job& job, const std::string& node, const RunReport& r, TimeMs now) {
  Run& run = *job.CurrentRun();
  if (r.replica < 0 || r.replica >= static_cast<int32_t>(run.placement.size()) ||
      run.placement[r.replica].node != node || IsRunOver(run.state)) {
    return;
  }
  bool changed = false;
  if (run.state == RunState::kScheduled) {
    run.state = RunState::kRunning;
    run.started_at = r.started_at ? r.started_at : now;
    job.state = JobState::kRunning;
    AddEvent(job, run.started_at, "running", "");
    changed = true;
  }
  if (!r.running && run.exit_codes[r.replica] == kNotExited) {
    run.exit_codes[r.replica] = r.exit_code;
    changed = true;
    if (r.exit_code != 0 && !run.stop_requested && run.placement.size() > 1) {
      RequestStop(job,
                  "replica " + std::to_string(r.replica) + " exited with code " +
                      std::to_string(r.exit_code) + "; stopping the gang",
                  now);
    }
    BumpNode(node);  // the replica leaves the node's desired set
  }
  if (changed) {
    PersistJob(job);
    MaybeFinishRun(job, now);
  }
}

void Head::MaybeFinishRun(Job& job, TimeMs now) {
  Run& run = *job.CurrentRun();
  for (int32_t code : run.exit_codes) {
    if (code == kNotExited) return;
  }
  bool all_zero = true;
  for (int32_t code : run.exit_codes) all_zero &= code == 0;
  if (run.stop_requested && StartsWith(run.reason, kReasonPreempted)) {
    FinishRun(job, RunState::kPreempted, "", now);
  } else if (run.stop_requested && StartsWith(run.reason, kReasonCancelled)) {
    FinishRun(job, RunState::kCancelled, "", now);
  } else if (all_zero) {
    FinishRun(job, RunState::kSucceeded, "", now);
  } else {
    FinishRun(job, RunState::kFailed, "", now);
  }
}

void Head::FinishRun(Job& job, RunState state, const std::string& reason, TimeMs now) {
  Run& run = *job.CurrentRun();
  run.state = state;
  run.ended_at = now;
  if (!reason.empty()) run.reason = reason;
  for (const ReplicaPlacement& p : run.placement) {
    node_runs_[p.node].erase(job.id);
    BumpNode(p.node);
    Node& n = nodes_[p.node];
    if (n.state == NodeState::kDraining && node_runs_[p.node].empty()) {
      n.state = NodeState::kDrained;
      PersistNode(n);
    }
  }
  active_jobs_.erase(job.id);
  scheduler_.RemoveRunning(job.id);
  int32_t lost_runs = 0;
  for (const Run& r : job.runs) lost_runs += r.state == RunState::kLost;
  auto requeue = [&](const std::string& why) {
    job.state = JobState::kPending;
    AddEvent(job, now, "requeued", why);
    scheduler_.AddPending(ToPending(job));
  };
  int32_t first_failure = 0;  // the job's exit code: its first replica that did not exit 0
  for (int32_t code : run.exit_codes) {
    if (code != 0 && code != kNotExited) {
      first_failure = code;
      break;
    }
  }
  auto end = [&](JobState s, const std::string& what) {
    job.state = s;
    job.ended_at = now;
    job.exit_code = first_failure;
    AddEvent(job, now, what, run.reason);
  };
  switch (state) {
    case RunState::kSucceeded:
      end(JobState::kSucceeded, "succeeded");
      break;
    case RunState::kCancelled:
      end(JobState::kCancelled, "cancelled");
      break;
    case RunState::kPreempted:
      requeue("run " + std::to_string(run.attempt) + " preempted: " + run.reason);
      break;
    case RunState::kLost:
      if (lost_runs <= job.spec.max_restarts) {
        requeue("run " + std::to_string(run.attempt) + " lost: " + run.reason);
      } else {
        end(JobState::kFailed, "failed");
      }
      break;
    default:
      if (run.reason.empty()) {
        run.reason = first_failure < 0 ? "killed by signal " + std::to_string(-first_failure)
                                       : "exit code " + std::to_string(first_failure);
      }
      end(JobState::kFailed, "failed");
      break;
  }
  PersistJob(job);
  RequestSchedule();
}

void Head::EnforceTimeLimits(TimeMs now) {
  for (JobId id : active_jobs_) {
    Job& job = jobs_.at(id);
    const Run& run = *job.CurrentRun();
    if (job.spec.time_limit_ms > 0 && run.started_at > 0 && !run.stop_requested &&
        now - run.started_at > job.spec.time_limit_ms) {
      RequestStop(job,
                  std::string(kReasonTimeLimit) + " " + FormatDuration(job.spec.time_limit_ms) +
                      " exceeded",
                  now);
    }
  }
}

}  // namespace corral::head
