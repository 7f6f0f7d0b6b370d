// srun inside an allocation, on more than one node: a job step started through the head
// (POST /v1/jobs/ID/steps) with the batch step's own credential, CORRAL_STEP_TOKEN, at the
// head the agent reaches (CORRAL_STEP_HEAD, CORRAL_STEP_CA). Each node's agent runs its share
// of the tasks inside the allocation; srun follows every task's output through the head,
// labelled ("RANK: ") with -l or written to --output/--error patterns, and exits with the
// worst task's code once every node has reported (docs/slurm.md).
#include <signal.h>

#include <atomic>
#include <fstream>
#include <map>
#include <ostream>

#include "cli/commands.h"
#include "cli/slurm_errors.h"
#include "core/codec.h"
#include "slurm/options.h"
#include "slurm/patterns.h"

namespace corral::cli {
namespace {

// The last signal srun got (SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2), to forward to the tasks:
// a flag is all a signal handler may set.
std::atomic<int> forward_signal{0};
void RecordSignal(int sig) { forward_signal.store(sig); }

int64_t LeadingInt(const std::string& s, int64_t fallback) {
  size_t used = 0;
  try {
    int64_t v = std::stoll(s, &used);
    return used > 0 && v > 0 ? v : fallback;
  } catch (...) {
    return fallback;
  }
}

// One task's stream on one node: where it is read from and where its bytes go.
struct TaskStream {
  int32_t replica = 0;
  int32_t task = 0;  // on its node
  int64_t rank = 0;
  std::string stream;  // stdout or stderr
  int64_t offset = 0;
  std::string file;     // "": the terminal
  std::string partial;  // -l: an unfinished line
};

class StepFollower {
 public:
  StepFollower(CliContext& ctx, ApiClient& api, std::string base, bool label)
      : ctx_(ctx), api_(api), base_(std::move(base)), label_(label) {}

  void Add(TaskStream s) { streams_.push_back(std::move(s)); }

  // Reads what each stream has gained; returns false when the head could not be asked.
  void Pump(bool last) {
    for (TaskStream& s : streams_) {
      for (int round = 0; round < 64; ++round) {
        auto reply = api_.Call(
            "GET", base_ + "/logs?step=" + step_ + "&replica=" + std::to_string(s.replica) +
                       "&task=" + std::to_string(s.task) + "&stream=" + s.stream +
                       "&offset=" + std::to_string(s.offset));
        if (!reply.ok() || reply->status != 200 || reply->body.empty()) break;
        s.offset = LeadingInt(reply->Header("x-corral-next-offset"),
                              s.offset + static_cast<int64_t>(reply->body.size()));
        Write(s, reply->body);
        if (reply->body.size() < (1u << 16)) break;
      }
      if (last) Write(s, "", /*flush=*/true);
    }
  }

  void set_step(std::string step) { step_ = std::move(step); }

 private:
  void Write(TaskStream& s, const std::string& data, bool flush = false) {
    if (!s.file.empty()) {
      if (!data.empty()) std::ofstream(s.file, std::ios::app) << data;
      return;
    }
    std::ostream& out = s.stream == "stderr" ? *ctx_.err : *ctx_.out;
    if (!label_) {
      out << data;
      out.flush();
      return;
    }
    s.partial += data;
    size_t start = 0;
    for (size_t nl; (nl = s.partial.find('\n', start)) != std::string::npos; start = nl + 1) {
      out << s.rank << ": " << std::string_view(s.partial).substr(start, nl + 1 - start);
    }
    s.partial.erase(0, start);
    if (flush && !s.partial.empty()) {
      out << s.rank << ": " << s.partial << "\n";
      s.partial.clear();
    }
    out.flush();
  }

  CliContext& ctx_;
  ApiClient& api_;
  std::string base_;
  std::string step_;
  bool label_;
  std::vector<TaskStream> streams_;
};

}  // namespace

void UseStepCredential(CliContext& ctx) {
  if (!ctx.env("CORRAL_STEP_TOKEN") || !ctx.env("CORRAL_STEP_HEAD")) return;
  EnvLookup outer = ctx.env;
  ctx.env = [outer](const std::string& name) -> std::optional<std::string> {
    if (name == "CORRAL_ADDR") return outer("CORRAL_STEP_HEAD");
    if (name == "CORRAL_TOKEN") return outer("CORRAL_STEP_TOKEN");
    if (name == "CORRAL_CA") return outer("CORRAL_STEP_CA");
    return outer(name);
  };
}

namespace {

// The step's request: its command, replicas, tasks and environment. An error names the option.
Result<Json> RemoteStepRequest(const slurm::ParsedOptions& o, int64_t nodes, CliContext& ctx) {
  const int64_t alloc_nodes = LeadingInt(ctx.env("SLURM_JOB_NUM_NODES").value_or("1"), 1);
  if (nodes < 1 || nodes > alloc_nodes) {
    return InvalidArgument("option --nodes: this allocation has " + std::to_string(alloc_nodes) +
                           " node(s); a step may use 1 to " + std::to_string(alloc_nodes));
  }
  if (o.Has("nodelist") || o.Has("exclude")) {
    return InvalidArgument(
        "options --nodelist/--exclude are not supported for job steps; a step uses the "
        "allocation's first --nodes nodes");
  }
  Json req{{"command", o.positional}, {"workdir", ctx.cwd}};
  std::vector<int32_t> replicas;
  for (int32_t r = 0; r < nodes; ++r) replicas.push_back(r);
  req["replicas"] = replicas;
  if (o.Has("ntasks")) {
    req["ntasks"] = LeadingInt(o.Get("ntasks"), -1);
  } else if (o.Has("ntasks-per-node")) {
    req["tasks_per_replica"] = LeadingInt(o.Get("ntasks-per-node"), -1);
  } else if (auto n = ctx.env("SLURM_NTASKS"); n && !o.Has("nodes")) {
    req["ntasks"] = LeadingInt(*n, 1);  // the allocation's shape, as Slurm's default step
  } else {
    req["tasks_per_replica"] = LeadingInt(ctx.env("SLURM_NTASKS_PER_NODE").value_or("1"), 1);
  }
  for (const char* k : {"ntasks", "tasks_per_replica"}) {
    if (req.contains(k) && req[k].get<int64_t>() < 1) {
      return InvalidArgument(std::string("option --") +
                             (std::string(k) == "ntasks" ? "ntasks" : "ntasks-per-node") +
                             ": want a whole number of tasks, 1 or more");
    }
  }
  if (o.Has("gpus-per-task")) req["gpus_per_task"] = true;
  std::map<std::string, std::string> env =
      ctx.environment ? ctx.environment() : std::map<std::string, std::string>{};
  // What only holds on this node: each node's agent and the head set their own.
  for (const char* k :
       {"CORRAL_STEP_TOKEN", "GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "CORRAL_NODE",
        "CORRAL_REPLICA", "CORRAL_TASK", "SLURMD_NODENAME", "HOSTNAME", "CUDA_VISIBLE_DEVICES"}) {
    env.erase(k);
  }
  if (o.Has("unbuffered")) env["PYTHONUNBUFFERED"] = "1";
  req["env"] = env;
  return req;
}

// Each task's stdout and stderr, to the terminal or to the files --output/--error name.
void FollowStepTasks(const slurm::ParsedOptions& o, const Step& step, const std::string& job_id,
                     CliContext& ctx, StepFollower* follow) {
  slurm::PatternValues pv;
  pv.job_id = ctx.env("SLURM_JOB_ID").value_or(job_id);
  pv.array_job_id = ctx.env("SLURM_ARRAY_JOB_ID").value_or(pv.job_id);
  pv.array_index = ctx.env("SLURM_ARRAY_TASK_ID").value_or("4294967294");
  pv.job_name = ctx.env("SLURM_JOB_NAME").value_or("");
  pv.user = ctx.env("SLURM_JOB_USER").value_or("");
  pv.step = std::to_string(step.id);
  int64_t rank = 0;
  for (size_t i = 0; i < step.replicas.size(); ++i) {
    for (int32_t t = 0; t < step.tasks[i]; ++t, ++rank) {
      pv.task = std::to_string(rank);
      pv.node_id = std::to_string(i);
      for (const char* stream : {"stdout", "stderr"}) {
        TaskStream s;
        s.replica = step.replicas[i];
        s.task = t;
        s.rank = rank;
        s.stream = stream;
        const char* opt = std::string(stream) == "stdout" ? "output" : "error";
        if (o.Has(opt)) s.file = slurm::ExpandPattern(o.Get(opt), pv);
        if (std::string(stream) == "stderr" && !o.Has("error") && o.Has("output")) {
          s.file = slurm::ExpandPattern(o.Get("output"), pv);  // as Slurm: both to --output
        }
        follow->Add(std::move(s));
      }
    }
  }
}

// Signals srun gets go to the steps' tasks through the head (their agents send them), as
// Slurm's srun forwards them; srun itself keeps following. Returns the worst exit.
int WaitForStep(const std::string& base, int32_t step_id, ApiClient& api, CliContext& ctx,
                StepFollower* follow) {
  const std::string step_path = base + "/steps/" + std::to_string(step_id);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2}) signal(sig, RecordSignal);
  for (;;) {
    if (int sig = forward_signal.exchange(0); sig != 0) {
      auto sent = api.CallJson("POST", base + "/signal?signal=" + std::to_string(sig));
      // (A job already stopping has nothing to forward to: its agents stop the steps.)
      if (!sent.ok() && sent.status().code() != ErrorCode::kFailedPrecondition)
        *ctx.err << "srun: error: forwarding signal " << sig << ": " << sent.status().message()
                 << "\n";
    }
    follow->Pump(false);
    auto now = api.CallJson("GET", step_path);
    if (!now.ok()) return StepError(ctx, "lost the step: " + now.status().message());
    auto st = StepFromJson(now->value("step", Json::object()));
    if (!st.ok()) return StepError(ctx, "the head's answer: " + st.status().message());
    bool done = true;
    for (int32_t code : st->exit_codes) done &= code != kNotExited;
    if (done) {
      follow->Pump(true);
      int worst = 0;
      for (int32_t code : st->exit_codes) worst = std::max(worst, code < 0 ? 128 - code : code);
      return worst;
    }
    ctx.sleep(std::min<DurationMs>(ctx.poll_interval, 100));
  }
}

}  // namespace

int RunRemoteStep(const slurm::ParsedOptions& o, int64_t nodes, CliContext& ctx) {
  const std::string job_id = ctx.env("CORRAL_JOB_ID").value_or("");
  Result<Json> req = RemoteStepRequest(o, nodes, ctx);
  if (!req.ok()) return StepError(ctx, req.status().message());
  UseStepCredential(ctx);
  ApiClient api(ctx);
  const std::string base = "/v1/jobs/" + job_id;
  auto started = api.CallJson("POST", base + "/steps", req->dump());
  if (!started.ok()) return StepError(ctx, "cannot start the step: " + started.status().message());
  auto step = StepFromJson(started->value("step", Json::object()));
  if (!step.ok()) return StepError(ctx, "the head's answer: " + step.status().message());
  StepFollower follow(ctx, api, base, o.Has("label"));
  follow.set_step(std::to_string(step->id));
  FollowStepTasks(o, *step, job_id, ctx, &follow);
  return WaitForStep(base, step->id, api, ctx, &follow);
}

}  // namespace corral::cli
