// srun inside an allocation without a step credential (a job not submitted by sbatch): a
// one-node job step run right here. The tasks are children of srun, each with its rank
// variables; output goes to the terminal (with -l, each line labelled "TASK: "), or to
// --output/--error patterns expanded per task. srun waits for every task and exits with the
// worst code. A batch job's steps go through the head (slurm_remote_step.cc).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>
#include <ostream>

#include "cli/commands.h"
#include "cli/slurm_errors.h"
#include "core/wait_status.h"
#include "slurm/options.h"
#include "slurm/patterns.h"

namespace corral::cli {
namespace {

void NoOp(int) {}

// The next step id of this batch step: a counter in the file the batch step names (beside its
// copy of the script, removed with it); 0 without one.
int NextStepId(const std::string& path) {
  if (path.empty()) return 0;
  int next = 0;
  {
    std::ifstream in(path);
    in >> next;
  }
  std::ofstream(path) << next + 1;
  return next;
}

int64_t IntOf(const std::string& s, int64_t fallback) {
  try {
    size_t used = 0;
    int64_t v = std::stoll(s, &used);
    return used == s.size() && v > 0 ? v : fallback;
  } catch (...) {
    return fallback;
  }
}

// The %-patterns of a step's --output and --error, from the job's environment.
slurm::PatternValues StepPatternValues(CliContext& ctx, const std::string& job_id, int step) {
  slurm::PatternValues pv;
  pv.job_id = job_id;
  pv.array_job_id = ctx.env("SLURM_ARRAY_JOB_ID").value_or(job_id);
  pv.array_index = ctx.env("SLURM_ARRAY_TASK_ID").value_or("4294967294");
  pv.job_name = ctx.env("SLURM_JOB_NAME").value_or("");
  pv.user = ctx.env("SLURM_JOB_USER").value_or("");
  pv.node = ctx.env("SLURMD_NODENAME").value_or("");
  pv.step = std::to_string(step);
  return pv;
}

// Where a task's output goes: files (--output, --error), a pipe for --label, else srun's own.
struct TaskOutput {
  int out_fd = -1, err_fd = -1;
  int pipe_fds[2] = {-1, -1};
};

Result<TaskOutput> OpenTaskOutput(const slurm::ParsedOptions& o, const slurm::PatternValues& pv) {
  TaskOutput t;
  if (o.Has("output")) {
    std::string path = slurm::ExpandPattern(o.Get("output"), pv);
    t.out_fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (t.out_fd < 0) return Internal("cannot open " + path + ": " + strerror(errno));
  }
  if (o.Has("error")) {
    std::string path = slurm::ExpandPattern(o.Get("error"), pv);
    t.err_fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (t.err_fd < 0) return Internal("cannot open " + path + ": " + strerror(errno));
  }
  if (o.Has("label") && t.out_fd < 0 && pipe2(t.pipe_fds, O_CLOEXEC) != 0) {
    return Internal(std::string("cannot make a pipe: ") + strerror(errno));
  }
  return t;
}

// In the forked child: task t of the step, with Slurm's and torch's variables for it.
[[noreturn]] void ExecStepTask(const slurm::ParsedOptions& o, const TaskOutput& out, int64_t t,
                               int64_t ntasks, int step) {
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2}) signal(sig, SIG_DFL);
  if (out.pipe_fds[1] >= 0) {
    dup2(out.pipe_fds[1], 1);
    if (out.err_fd < 0) dup2(out.pipe_fds[1], 2);
  }
  if (out.out_fd >= 0) {
    dup2(out.out_fd, 1);
    if (out.err_fd < 0) dup2(out.out_fd, 2);
  }
  if (out.err_fd >= 0) dup2(out.err_fd, 2);
  const std::string t_s = std::to_string(t), n_s = std::to_string(ntasks);
  setenv("SLURM_PROCID", t_s.c_str(), 1);
  setenv("SLURM_LOCALID", t_s.c_str(), 1);
  setenv("SLURM_NODEID", "0", 1);
  setenv("SLURM_STEP_ID", std::to_string(step).c_str(), 1);
  setenv("SLURM_STEPID", std::to_string(step).c_str(), 1);
  setenv("SLURM_NTASKS", n_s.c_str(), 1);
  setenv("SLURM_NPROCS", n_s.c_str(), 1);
  setenv("SLURM_STEP_NUM_TASKS", n_s.c_str(), 1);
  setenv("SLURM_STEP_NUM_NODES", "1", 1);
  setenv("SLURM_NTASKS_PER_NODE", n_s.c_str(), 1);
  setenv("SLURM_STEP_TASKS_PER_NODE", n_s.c_str(), 1);
  setenv("RANK", t_s.c_str(), 1);
  setenv("LOCAL_RANK", t_s.c_str(), 1);
  setenv("WORLD_SIZE", n_s.c_str(), 1);
  setenv("LOCAL_WORLD_SIZE", n_s.c_str(), 1);
  if (o.Has("unbuffered")) setenv("PYTHONUNBUFFERED", "1", 1);
  std::vector<char*> argv;
  for (const std::string& a : o.positional) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  fprintf(stderr, "srun: error: cannot run %s: %s\n", argv[0], strerror(errno));
  _exit(127);
}

// Labelled output: whole lines, "TASK: line", as they come, until every pipe is closed.
void RelayLabelledOutput(std::map<int, std::pair<int64_t, std::string>>& pipes, CliContext& ctx) {
  while (!pipes.empty()) {
    std::vector<pollfd> fds;
    for (const auto& [fd, _] : pipes) fds.push_back({fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (const pollfd& p : fds) {
      if (p.revents == 0) continue;
      char buf[4096];
      ssize_t n = read(p.fd, buf, sizeof buf);
      auto& [task, partial] = pipes[p.fd];
      if (n > 0) {
        partial.append(buf, static_cast<size_t>(n));
        size_t nl;
        while ((nl = partial.find('\n')) != std::string::npos) {
          *ctx.out << task << ": " << partial.substr(0, nl + 1);
          partial.erase(0, nl + 1);
        }
        ctx.out->flush();
      } else if (n == 0 || errno != EINTR) {
        if (!partial.empty()) *ctx.out << task << ": " << partial << "\n";
        close(p.fd);
        pipes.erase(p.fd);
      }
    }
  }
}

// The worst exit code of the step's tasks, once each has ended.
int WaitForTasks(std::map<pid_t, int64_t>& tasks) {
  int worst = 0;
  while (!tasks.empty()) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (!tasks.erase(pid)) continue;
    worst = std::max(worst, ShellExitCode(status));
  }
  return worst;
}

}  // namespace

int RunLocalStep(const slurm::ParsedOptions& o, CliContext& ctx) {
  const std::string job_id = ctx.env("SLURM_JOB_ID").value_or("");
  const int64_t alloc_nodes = IntOf(ctx.env("SLURM_JOB_NUM_NODES").value_or("1"), 1);
  const int64_t nodes = o.Has("nodes") ? IntOf(o.Get("nodes"), -1) : alloc_nodes;
  // A batch job's steps all go through the head, which numbers them and places each on the
  // allocation's nodes; a job without a step credential runs one-node steps right here.
  if (ctx.env("CORRAL_STEP_TOKEN") && ctx.env("CORRAL_STEP_HEAD")) {
    return RunRemoteStep(o, nodes, ctx);
  }
  if (nodes != 1) {
    return StepError(ctx,
                     "job steps across nodes are not supported by Corral yet (this step "
                     "asks for " +
                         std::to_string(nodes) +
                         " nodes); use -N1, or submit the command with srun or "
                         "corral submit --replicas/--tasks-per-replica (docs/slurm.md)");
  }
  int64_t ntasks = IntOf(ctx.env("SLURM_NTASKS_PER_NODE").value_or("1"), 1);
  if (o.Has("ntasks")) ntasks = IntOf(o.Get("ntasks"), -1);
  if (o.Has("ntasks-per-node")) ntasks = IntOf(o.Get("ntasks-per-node"), -1);
  if (ntasks < 1 || ntasks > 4096) {
    return StepError(ctx, "option --ntasks: want a whole number of tasks from 1 to 4096");
  }
  const int step = NextStepId(ctx.env("CORRAL_SLURM_STEPS").value_or(""));
  slurm::PatternValues pv = StepPatternValues(ctx, job_id, step);
  // srun outlives the signals the run gets (they reach the tasks too, in its process group).
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2}) signal(sig, NoOp);
  ctx.out->flush();
  ctx.err->flush();
  std::map<pid_t, int64_t> tasks;
  std::map<int, std::pair<int64_t, std::string>> pipes;  // fd -> task, partial line
  for (int64_t t = 0; t < ntasks; ++t) {
    pv.task = std::to_string(t);
    Result<TaskOutput> out = OpenTaskOutput(o, pv);
    if (!out.ok()) return StepError(ctx, out.status().message());
    pid_t pid = fork();
    if (pid == 0) ExecStepTask(o, *out, t, ntasks, step);
    for (int fd : {out->out_fd, out->err_fd, out->pipe_fds[1]}) {
      if (fd >= 0) close(fd);
    }
    if (pid < 0) return StepError(ctx, std::string("cannot start a task: ") + strerror(errno));
    tasks[pid] = t;
    if (out->pipe_fds[0] >= 0) pipes[out->pipe_fds[0]] = {t, ""};
  }
  RelayLabelledOutput(pipes, ctx);
  return WaitForTasks(tasks);
}

}  // namespace corral::cli
