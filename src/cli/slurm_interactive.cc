// salloc, and srun inside it: Slurm's interactive allocations as Corral sessions
// (docs/interactive.md, docs/slurm.md). salloc queues an interactive session, waits for it,
// then runs a shell (or the given command) HERE with SLURM_JOB_ID set, keeping the session
// alive while it runs; srun in that shell runs each step inside the allocation through exec.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ostream>

#include "cli/commands.h"
#include "cli/exec_client.h"
#include "slurm/batch.h"
#include "slurm/options.h"

namespace corral::cli {
namespace {

constexpr DurationMs kTouchEveryMs = 10000;

int SallocError(CliContext& ctx, const std::string& message) {
  *ctx.err << "salloc: error: " << message << "\n";
  return kExitError;
}

// Runs argv here with `env` added; keeps session `job` alive (touches) until it exits.
int RunLocally(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
               JobId job, CliContext& ctx) {
  std::vector<std::string> words = argv;
  std::vector<char*> args;
  for (std::string& w : words) args.push_back(w.data());
  args.push_back(nullptr);
  // The shell is the terminal's now: Ctrl-C is for what runs in it, not for salloc.
  struct sigaction ignore {
  }, old_int{}, old_quit{};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  (void)sigaction(SIGINT, &ignore, &old_int);
  (void)sigaction(SIGQUIT, &ignore, &old_quit);
  ctx.out->flush();
  ctx.err->flush();
  pid_t pid = fork();
  if (pid == 0) {
    (void)sigaction(SIGINT, &old_int, nullptr);
    (void)sigaction(SIGQUIT, &old_quit, nullptr);
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
  (void)sigaction(SIGINT, &old_int, nullptr);
  (void)sigaction(SIGQUIT, &old_quit, nullptr);
  if (pid < 0) return SallocError(ctx, std::string("fork: ") + std::strerror(errno));
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
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

int RunSallocStep(const slurm::ParsedOptions& opts, bool pty, CliContext& ctx) {
  auto id = ParseJobId(ctx.env("CORRAL_SALLOC_JOB").value_or(""));
  if (!id) {
    *ctx.err << "srun: error: CORRAL_SALLOC_JOB: want a job id\n";
    return kExitError;
  }
  ExecOptions exec;
  exec.command = opts.positional;
  exec.pty = pty;
  exec.command_name = "srun";
  // Inside salloc's allocation: the step runs on its first node, as Slurm's interactive step
  // does; its environment is the allocation's, with the step's Slurm variables.
  exec.env = {{"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}};
  return RunInJob(ctx, *id, exec);
}

}  // namespace corral::cli
