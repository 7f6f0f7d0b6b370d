// salloc, and srun inside it: Slurm's interactive allocations as Corral sessions
// (docs/interactive.md, docs/slurm.md). salloc queues an interactive session, waits for it,
// then runs a shell (or the given command) HERE with SLURM_JOB_ID set, keeping the session
// alive while it runs; srun in that shell runs each step inside the allocation through exec,
// one task on each of its nodes (or of the first -N).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <ostream>

#include "cli/commands.h"
#include "cli/exec_client.h"
#include "core/wait_status.h"
#include "slurm/batch.h"
#include "slurm/options.h"

namespace corral::cli {
namespace {

constexpr DurationMs kTouchEveryMs = 10000;

int SallocError(CliContext& ctx, const std::string& message) {
  *ctx.err << "salloc: error: " << message << "\n";
  return kExitError;
}

// While it lives, Ctrl-C and Ctrl-\\ (SIGINT, SIGQUIT) are not for this process but for what
// it waits on, which the terminal signals itself; a child restores them before it execs.
class TerminalSignalsIgnored {
 public:
  TerminalSignalsIgnored() {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    (void)sigaction(SIGINT, &ignore, &old_int_);
    (void)sigaction(SIGQUIT, &ignore, &old_quit_);
  }
  ~TerminalSignalsIgnored() { Restore(); }
  TerminalSignalsIgnored(const TerminalSignalsIgnored&) = delete;
  TerminalSignalsIgnored& operator=(const TerminalSignalsIgnored&) = delete;
  void Restore() const {
    (void)sigaction(SIGINT, &old_int_, nullptr);
    (void)sigaction(SIGQUIT, &old_quit_, nullptr);
  }

 private:
  struct sigaction old_int_ {};
  struct sigaction old_quit_ {};
};

// Runs argv here with `env` added; keeps session `job` alive (touches) until it exits.
int RunLocally(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
               JobId job, CliContext& ctx) {
  std::vector<std::string> words = argv;
  std::vector<char*> args;
  for (std::string& w : words) args.push_back(w.data());
  args.push_back(nullptr);
  // The shell is the terminal's now: Ctrl-C is for what runs in it, not for salloc.
  const TerminalSignalsIgnored ignored;
  ctx.out->flush();
  ctx.err->flush();
  pid_t pid = fork();
  if (pid == 0) {
    ignored.Restore();
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    execvp(args[0], args.data());
    std::perror(("salloc: " + argv[0]).c_str());
    _exit(127);
  }
  int status = 0;
  if (pid > 0) {
    ApiClient api(ctx);
    DurationMs every = kTouchEveryMs, since_touch = every;  // the first touch at once
    while (waitpid(pid, &status, WNOHANG) == 0) {
      ctx.sleep(100);
      since_touch += 100;
      if (since_touch >= every) {
        since_touch = 0;
        auto t = api.CallJson("POST", "/v1/jobs/" + std::to_string(job) + "/touch", "");
        // Well within the head's inactive limit, whatever it is.
        int64_t limit = t.ok() ? t->value("inactive_limit_ms", int64_t{0}) : 0;
        if (limit > 0) every = std::clamp<DurationMs>(limit / 4, 200, kTouchEveryMs);
      }
    }
  }
  if (pid < 0) return SallocError(ctx, std::string("fork: ") + std::strerror(errno));
  return ShellExitCode(status);
}

}  // namespace

int RunSalloc(const std::vector<std::string>& argv, CliContext& ctx) {
  auto opts = slurm::ParseOptions(argv, slurm::SbatchOptionDefs(), /*stop_at_positional=*/true);
  if (!opts.ok()) return SallocError(ctx, opts.status().message());
  if (opts->Has("help")) {
    *ctx.out << "Usage: salloc [OPTIONS...] [COMMAND [ARGS...]]   (see docs/interactive.md)\n";
    return kExitOk;
  }
  for (const char* batch_only : {"array", "dependency", "wrap", "parsable", "output", "error"}) {
    if (opts->Has(batch_only)) {
      return SallocError(ctx, std::string("--") + batch_only + " is not an salloc option");
    }
  }
  if (ctx.env("CORRAL_SALLOC_JOB")) {
    return SallocError(ctx, "already inside allocation " + *ctx.env("CORRAL_SALLOC_JOB"));
  }
  std::vector<std::string> command = opts->positional;
  if (command.empty()) command = {ctx.env("SHELL").value_or("/bin/sh")};
  slurm::SubmitContext sc;
  sc.script = slurm::WrapScript("sleep infinity");
  sc.script_name = "interactive";
  sc.cwd = ctx.cwd;
  sc.user = ctx.env("USER").value_or("");
  if (ctx.environment) sc.environment = ctx.environment();
  sc.output_to_log = true;
  auto sub = slurm::BuildBatchSpec(*opts, sc, false);
  if (!sub.ok()) return SallocError(ctx, sub.status().message());
  for (const std::string& w : sub->warnings) *ctx.err << "salloc: warning: " << w << "\n";
  Json spec = MakeSessionSpec(sub->spec);
  auto id = StartSession(spec, ctx, "salloc");
  if (!id.ok()) return kExitError;
  *ctx.err << "salloc: Granted job allocation " << *id << "\n";
  const std::string job = std::to_string(*id);
  int64_t nodes = spec.value("replicas", int64_t{1});
  int rc = RunLocally(command,
                      {{"SLURM_JOB_ID", job},
                       {"SLURM_JOBID", job},
                       {"CORRAL_SALLOC_JOB", job},
                       {"SLURM_JOB_NUM_NODES", std::to_string(nodes)},
                       {"SLURM_NNODES", std::to_string(nodes)}},
                      *id, ctx);
  ApiClient api(ctx);
  (void)api.Call("POST", "/v1/jobs/" + job + "/cancel", "");
  *ctx.err << "salloc: Relinquishing job allocation " << job << "\n";
  return rc;
}

namespace {

// Runs `run` in a child whose stdout and stderr go to a pipe, and writes what comes out of it
// to ctx.out a whole line at a time as "TASK: line" (srun -l). Returns the child's code.
int WithLabelledOutput(CliContext& ctx, int64_t task, const std::function<int()>& run) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    *ctx.err << "srun: error: cannot make a pipe: " << std::strerror(errno) << "\n";
    return kExitError;
  }
  ctx.out->flush();
  ctx.err->flush();
  pid_t pid = fork();
  if (pid == 0) {
    (void)dup2(fds[1], 1);
    (void)dup2(fds[1], 2);
    int rc = run();
    ctx.out->flush();
    ctx.err->flush();
    _exit(rc);
  }
  close(fds[1]);
  std::string partial;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    partial.append(buf, static_cast<size_t>(n));
    for (size_t nl; (nl = partial.find('\n')) != std::string::npos; partial.erase(0, nl + 1)) {
      *ctx.out << task << ": " << partial.substr(0, nl + 1);
    }
    ctx.out->flush();
  }
  if (!partial.empty()) *ctx.out << task << ": " << partial << "\n";
  close(fds[0]);
  if (pid < 0) return kExitError;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return ShellExitCode(status);
}

// How many nodes a step inside salloc runs on: every node of the allocation unless -N says
// fewer, one task a node; a terminal (--pty) is one task's, on the first node, unless -N asks
// for more. 0: an error, said.
int64_t SallocStepNodes(const slurm::ParsedOptions& opts, bool pty, JobId id, CliContext& ctx) {
  auto allocated = ParseJobId(ctx.env("SLURM_NNODES").value_or("1"));
  const int64_t have = allocated && *allocated > 0 ? static_cast<int64_t>(*allocated) : 1;
  int64_t nodes = pty ? 1 : have;
  if (opts.Has("nodes")) {
    auto n = ParseJobId(opts.Get("nodes"));
    if (!n || *n == 0 || static_cast<int64_t>(*n) > have) {
      *ctx.err << "srun: error: -N/--nodes: got \"" << opts.Get("nodes") << "\", want 1.." << have
               << " (the nodes of allocation " << id << ")\n";
      return 0;
    }
    nodes = static_cast<int64_t>(*n);
  }
  if (opts.Has("ntasks") && opts.Get("ntasks") != std::to_string(nodes)) {
    *ctx.err << "srun: error: -n/--ntasks: got \"" << opts.Get("ntasks")
             << "\"; a step inside salloc runs one task on each of its " << nodes
             << " node(s) (-N)\n";
    return 0;
  }
  if (pty && nodes > 1) {
    *ctx.err << "srun: error: --pty: a terminal is for one task; use -N 1 (the step has " << nodes
             << " nodes)\n";
    return 0;
  }
  return nodes;
}

// Runs step(node) in one process per node (a session's client is one per process); stdin goes
// to task 0 only, as Slurm's default. The step's code is the highest of its tasks', as srun's.
int RunSallocTasks(int64_t nodes, CliContext& ctx, const std::function<int(int64_t)>& step) {
  ctx.out->flush();
  ctx.err->flush();
  std::vector<pid_t> tasks;
  for (int64_t node = 0; node < nodes; ++node) {
    pid_t pid = fork();
    if (pid == 0) {
      if (node > 0) {
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null >= 0) (void)dup2(null, 0);
      }
      int rc = step(node);
      ctx.out->flush();
      ctx.err->flush();
      _exit(rc);
    }
    if (pid < 0) {
      *ctx.err << "srun: error: fork: " << std::strerror(errno) << "\n";
      break;
    }
    tasks.push_back(pid);
  }
  // Ctrl-C and Ctrl-\\ reach every task's client from the terminal, which relays them: they
  // are not for this process, which waits for its tasks.
  const TerminalSignalsIgnored ignored;
  int worst = tasks.size() == static_cast<size_t>(nodes) ? 0 : kExitError;
  for (pid_t pid : tasks) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    worst = std::max(worst, ShellExitCode(status));
  }
  return worst;
}

}  // namespace

int RunSallocStep(const slurm::ParsedOptions& opts, bool pty, CliContext& ctx) {
  auto id = ParseJobId(ctx.env("CORRAL_SALLOC_JOB").value_or(""));
  if (!id) {
    *ctx.err << "srun: error: CORRAL_SALLOC_JOB: want a job id\n";
    return kExitError;
  }
  const int64_t nodes = SallocStepNodes(opts, pty, *id, ctx);
  if (nodes == 0) return kExitError;
  // Its environment is the allocation's (each node's replica's), with the step's variables.
  auto step = [&](int64_t node) {
    ExecOptions exec;
    exec.command = opts.positional;
    exec.pty = pty;
    exec.command_name = "srun";
    exec.replica = static_cast<int32_t>(node);
    exec.env = {{"SLURM_STEP_ID", "0"},
                {"SLURM_PROCID", std::to_string(node)},
                {"SLURM_NODEID", std::to_string(node)},
                {"SLURM_NTASKS", std::to_string(nodes)},
                {"SLURM_STEP_NUM_NODES", std::to_string(nodes)},
                {"SLURM_STEP_NUM_TASKS", std::to_string(nodes)}};
    if (!opts.Has("label") || pty) return RunInJob(ctx, *id, exec);
    return WithLabelledOutput(ctx, node, [&] { return RunInJob(ctx, *id, exec); });
  };
  if (nodes == 1) return step(0);
  return RunSallocTasks(nodes, ctx, step);
}

}  // namespace corral::cli
