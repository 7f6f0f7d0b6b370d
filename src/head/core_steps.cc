// Job steps (docs/slurm.md): `srun` inside a batch script asks the head to start tasks on
// nodes of its own allocation. The batch step holds a credential for its run only
// (CORRAL_STEP_TOKEN, derived from the cluster's step key); a step is a change like any
// other, and each node's share of it is ordered to that node's agent as a run of its own
// ("J.A-sS") with the replica's GPUs and limits. Steps end with their run: once the run is
// over no order lists them, and the agents stop what is left.
#include <algorithm>

#include "head/head_core.h"
#include "head/tokens.h"

namespace corral::head {
namespace {

constexpr char kStepTokenPrefix[] = "cstep_";
constexpr int32_t kMaxStepTasks = 4096;
constexpr size_t kMaxStepsPerRun = 10000;

Status StepError(const std::string& field, const std::string& why) {
  return InvalidArgument("step field '" + field + "': " + why);
}

}  // namespace

std::string StepToken(const std::string& step_key, const RunId& run) {
  return kStepTokenPrefix + std::to_string(run.job) + "_" + std::to_string(run.attempt) + "_" +
         HmacSha256Hex(step_key, "step " + ToString(run));
}

std::optional<Caller> HeadCore::AuthenticateStep(const std::string& bearer) const {
  if (bearer.rfind(kStepTokenPrefix, 0) != 0 || state_.step_key.empty()) return std::nullopt;
  RunId run;
  std::string rest = bearer.substr(sizeof kStepTokenPrefix - 1);
  auto sep = rest.find('_');
  auto mac = rest.rfind('_');
  if (sep == std::string::npos || mac == sep) return std::nullopt;
  rest[sep] = '.';
  if (!ParseRunId(rest.substr(0, mac), &run)) return std::nullopt;
  if (!TokensEqual(bearer, StepToken(state_.step_key, run))) return std::nullopt;
  auto it = state_.jobs.find(run.job);
  if (it == state_.jobs.end() || !active().IsActive(run.job)) return std::nullopt;
  const Run* current = it->second.CurrentRun();
  if (!current || current->attempt != run.attempt) return std::nullopt;  // an old run's token
  return Caller::Job(run.job);
}

Result<Step> HeadCore::StartStep(const Caller& by, JobId id, StepRequest req, TimeMs now) {
  if (by.kind != Caller::Kind::kJob || by.job != id) {
    return PermissionDenied(
        "job steps start only from inside their job, with its step "
        "credential (CORRAL_STEP_TOKEN)");
  }
  auto it = state_.jobs.find(id);
  if (it == state_.jobs.end()) return UnknownJob(id);
  const Job& job = it->second;
  const Run* run = job.CurrentRun();
  // Scheduled counts: the caller holds this run's step credential, which only a task the
  // agent launched has, so the run is going even if the agent's report of its start has not
  // reached the head yet (a batch script's first srun often comes before it).
  if (!run || IsRunOver(run->state) || run->stop_requested) {
    return FailedPrecondition("job " + std::to_string(id) + " is not running (or is stopping)");
  }
  if (run->steps.size() >= kMaxStepsPerRun) {
    return Status(ErrorCode::kResourceExhausted, "job " + std::to_string(id) + " has started " +
                                                     std::to_string(kMaxStepsPerRun) +
                                                     " steps, the most a run may");
  }
  if (req.command.empty() || req.command[0].empty()) {
    return StepError("command", "want a program and its arguments");
  }
  const int32_t alloc = static_cast<int32_t>(run->placement.size());
  if (req.replicas.empty()) {
    for (int32_t r = 0; r < alloc; ++r) req.replicas.push_back(r);
  }
  std::vector<int32_t> seen;
  for (int32_t r : req.replicas) {
    if (r < 0 || r >= alloc) {
      return StepError("replicas", "replica " + std::to_string(r) + " is not in the allocation (" +
                                       std::to_string(alloc) + " node(s))");
    }
    if (std::find(seen.begin(), seen.end(), r) != seen.end()) {
      return StepError("replicas", "replica " + std::to_string(r) + " is named twice");
    }
    seen.push_back(r);
  }
  const int32_t nodes = static_cast<int32_t>(req.replicas.size());
  std::vector<int32_t> tasks(nodes, std::max(1, req.tasks_per_replica));
  if (req.ntasks > 0) {
    if (req.ntasks < nodes) {
      return StepError("ntasks", std::to_string(req.ntasks) + " task(s) cannot cover " +
                                     std::to_string(nodes) + " node(s)");
    }
    // Slurm's block distribution: the first nodes take one more when it does not divide.
    for (int32_t i = 0; i < nodes; ++i) tasks[i] = req.ntasks / nodes + (i < req.ntasks % nodes);
  }
  int64_t total = 0;
  for (int32_t t : tasks) total += t;
  if (total > kMaxStepTasks) {
    return StepError("ntasks", std::to_string(total) + " tasks; at most " +
                                   std::to_string(kMaxStepTasks) + " per step");
  }
  if (req.gpus_per_task) {
    for (int32_t i = 0; i < nodes; ++i) {
      size_t gpus = run->placement[req.replicas[i]].gpus.size();
      if (static_cast<size_t>(tasks[i]) > gpus) {
        return StepError("gpus_per_task", std::to_string(tasks[i]) + " tasks on replica " +
                                              std::to_string(req.replicas[i]) + " but only " +
                                              std::to_string(gpus) + " GPU(s)");
      }
    }
  }
  Step step;
  step.id = static_cast<int32_t>(run->steps.size());
  step.command = std::move(req.command);
  step.env = std::move(req.env);
  step.env.erase("CORRAL_STEP_TOKEN");  // steps are shown to every reader of the job
  step.workdir = req.workdir.empty() ? job.spec.workdir : req.workdir;
  step.replicas = std::move(req.replicas);
  step.tasks = std::move(tasks);
  step.gpus_per_task = req.gpus_per_task;
  step.exit_codes.assign(step.replicas.size(), kNotExited);
  step.started_at = now;
  Emit(by, now, StepStarted{id, run->attempt, step});
  return step;
}

Result<Step> HeadCore::GetStep(const Caller& by, JobId id, int32_t step_id) const {
  auto it = state_.jobs.find(id);
  if (it == state_.jobs.end()) return UnknownJob(id);
  bool own = by.kind == Caller::Kind::kJob && by.job == id;
  if (!own && !MayManageJob(by, it->second)) {
    return PermissionDenied("the steps of job " + std::to_string(id) +
                            " are for the job itself, its owner and admins");
  }
  const Run* run = it->second.CurrentRun();
  if (!run || step_id < 0 || step_id >= static_cast<int32_t>(run->steps.size())) {
    return NotFound("job " + std::to_string(id) + " has no step " + std::to_string(step_id) +
                    " in its current run");
  }
  Step s = run->steps[step_id];
  if (IsRunOver(run->state)) {
    // The run ended under it: what never reported was stopped with the run.
    for (int32_t& code : s.exit_codes) {
      if (code == kNotExited) code = -9;
    }
    if (s.ended_at == 0) s.ended_at = run->ended_at;
  }
  return s;
}

void HeadCore::OnStepReport(const Job& job, int32_t step_id, const std::string& node,
                            const RunReport& r, TimeMs now) {
  const Run& run = *job.CurrentRun();
  if (IsRunOver(run.state) || step_id < 0 || step_id >= static_cast<int32_t>(run.steps.size())) {
    return;
  }
  const Step& step = run.steps[step_id];
  auto at = std::find(step.replicas.begin(), step.replicas.end(), r.replica);
  if (at == step.replicas.end() || run.placement[r.replica].node != node || r.running) return;
  int32_t index = static_cast<int32_t>(at - step.replicas.begin());
  if (step.exit_codes[index] != kNotExited) return;
  Emit(Caller::Node(node), now, StepExited{job.id, run.attempt, step_id, index, r.exit_code});
}

void HeadCore::AddStepOrders(const Job& job, const Run& run, const RunLayout& layout,
                             const std::string& node, SyncResponse* out) const {
  for (const Step& step : run.steps) {
    bool here = false;  // a share of it still runs on this node
    for (size_t i = 0; i < step.replicas.size(); ++i) {
      here |= run.placement[step.replicas[i]].node == node && step.exit_codes[i] == kNotExited;
    }
    if (!here) continue;
    // The step's own layout: its nodes in its order, its task counts, srun's environment.
    RunLayout sl = layout;
    sl.placement.clear();
    sl.replica_hosts.clear();
    sl.user_env = step.env;
    sl.task_per_gpu = step.gpus_per_task;
    if (!step.workdir.empty()) sl.workdir = step.workdir;
    for (size_t i = 0; i < step.replicas.size(); ++i) {
      ReplicaPlacement p = run.placement[step.replicas[i]];
      p.tasks = step.tasks[i];
      sl.placement.push_back(p);
      sl.replica_hosts.push_back(layout.replica_hosts[step.replicas[i]]);
    }
    int32_t world = 0;
    for (int32_t t : step.tasks) world += t;
    for (size_t i = 0; i < step.replicas.size(); ++i) {
      int32_t replica = step.replicas[i];
      if (run.placement[replica].node != node || step.exit_codes[i] != kNotExited) continue;
      RunOrder o = ReplicaOrder(job, run, replica);
      o.run_id = StepRunId(RunId{job.id, run.attempt}, step.id);
      o.command = step.command;
      o.stage_out = {};  // the job's, once its replicas end, not each step's
      for (int32_t t = 0; t < step.tasks[i]; ++t) {
        auto env = TaskEnv(sl, static_cast<int32_t>(i), t);
        // The allocation stays the job's; the step's own shape has Slurm's step names.
        for (const char* k : {"SLURM_JOB_NODELIST", "SLURM_JOB_NUM_NODES",
                              "SLURM_JOB_CPUS_PER_NODE", "SLURM_SUBMIT_DIR"}) {
          if (auto v = step.env.find(k); v != step.env.end()) env[k] = v->second;
        }
        env["SLURM_STEP_ID"] = env["SLURM_STEPID"] = std::to_string(step.id);
        env["SLURM_STEP_NUM_TASKS"] = std::to_string(world);
        env["SLURM_STEP_NUM_NODES"] = std::to_string(step.replicas.size());
        env["SLURM_STEP_NODELIST"] = env["SLURM_NODELIST"];
        env["SLURM_STEP_TASKS_PER_NODE"] = env["SLURM_TASKS_PER_NODE"];
        env["CORRAL_REPLICA"] = std::to_string(replica);
        env["CORRAL_STEP"] = std::to_string(step.id);
        o.task_envs.push_back(std::move(env));
      }
      o.env = o.task_envs[0];
      if (o.task_envs.size() == 1) o.task_envs.clear();
      o.workdir = sl.workdir;
      o.signals = run.step_signals;
      o.signal = run.last_step_signal;
      out->runs.push_back(std::move(o));
    }
  }
}

}  // namespace corral::head
