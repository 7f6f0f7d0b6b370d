// sbatch, srun (outside an allocation) and `corral slurm install-shims`: Slurm's submit side
// over the same API as `corral submit`. Parsing and the spec live in src/slurm.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <ostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/slurm_errors.h"
#include "cli/stage_out_dest.h"
#include "core/spec.h"
#include "slurm/batch.h"
#include "slurm/options.h"

namespace corral::cli {
namespace {

constexpr const char* kSlurmNames[] = {"sbatch",   "srun",     "squeue", "scancel",
                                       "sacct",    "scontrol", "sinfo",  "salloc",
                                       "sacctmgr", "sshare",   "sprio",  "seff"};

// Slurm's commands report errors as "CMD: error: MESSAGE" and exit 1.
slurm::SubmitContext SubmitContextOf(CliContext& ctx) {
  slurm::SubmitContext s;
  s.cwd = ctx.cwd;
  s.user = ctx.env("USER").value_or("");
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) s.submit_host = host;
  if (ctx.environment) s.environment = ctx.environment();
  return s;
}

// POSTs a spec; the job id, or an error already printed.
Result<std::string> PostSpec(CliContext& ctx, const std::string& command, const Json& spec) {
  auto valid = ParseJobSpec(spec);
  if (!valid.ok()) return InvalidArgument(valid.status().message());
  CORRAL_RETURN_IF_ERROR(CheckStageOutDest(*valid));
  ApiClient api(ctx);
  auto reply =
      api.CallJson("POST", "/v1/jobs", Json{{"spec", spec}, {"request_id", NewRequestId()}}.dump());
  if (!reply.ok()) return reply.status();
  auto job = reply->find("job");
  if (job == reply->end() || !job->is_object() || !job->contains("id")) {
    return Internal("the head accepted the job but its answer has no job id: " + reply->dump());
  }
  (void)command;
  return (*job)["id"].dump();
}

std::string JoinQuoted(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : " ") + slurm::ShellQuote(w);
  return out;
}

// -A names a queue (an account is a queue: docs/slurm.md). One the head does not have is
// refused before anything is submitted, as Slurm refuses an account without an association.
Status CheckAccount(CliContext& ctx, const slurm::ParsedOptions& o) {
  const std::string account = o.Get("account");
  if (!o.Has("account") || account == "default") return Status::Ok();
  ApiClient api(ctx);
  auto reply = api.CallJson("GET", "/v1/queues");
  if (!reply.ok()) return reply.status();
  auto queues = QueuesFromAnswer(*reply);
  if (!queues.ok()) return queues.status();
  for (const QueueView& q : *queues) {
    if (q.config.name == account) return Status::Ok();
  }
  return InvalidArgument(
      "Batch job submission failed: Invalid account or account/partition combination "
      "specified (option --account: \"" +
      account + "\" is not a Corral queue; `sacctmgr show account` lists them)");
}

}  // namespace

bool IsSlurmCommand(const std::string& name) {
  for (const char* n : kSlurmNames) {
    if (name == n) return true;
  }
  return false;
}

int RunSlurm(const std::vector<std::string>& args, CliContext& ctx) {
  if (args.size() == 1 && (args[0] == "-h" || args[0] == "--help")) {
    *ctx.out << CommandUsage("slurm") << "\n";
    return kExitOk;
  }
  if (args.size() != 2 || args[0] != "install-shims") {
    return UsageError(ctx, "slurm", "want `corral slurm install-shims DIR`");
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) {
    PrintError(ctx, "slurm", "cannot find this program's path: " + ec.message());
    return kExitError;
  }
  fs::path dir = fs::absolute(args[1], ec);
  fs::create_directories(dir, ec);
  if (ec) {
    PrintError(ctx, "slurm", "cannot create " + dir.string() + ": " + ec.message());
    return kExitError;
  }
  // Check every name first, so that a file in the way changes nothing.
  for (const char* name : kSlurmNames) {
    fs::path p = dir / name;
    if (fs::exists(fs::symlink_status(p)) && !fs::is_symlink(fs::symlink_status(p))) {
      PrintError(ctx, "slurm",
                 p.string() +
                     " exists and is not a symbolic link; remove it or choose another "
                     "directory");
      return kExitError;
    }
  }
  for (const char* name : kSlurmNames) {
    fs::path p = dir / name;
    fs::remove(p, ec);
    fs::create_symlink(self, p, ec);
    if (ec) {
      PrintError(ctx, "slurm", "cannot create " + p.string() + ": " + ec.message());
      return kExitError;
    }
  }
  *ctx.out << "Installed sbatch, srun, salloc, squeue, scancel, sacct, scontrol, sinfo, sacctmgr, "
              "sshare and sprio in "
           << dir.string() << " (links to " << self.string() << ").\nAdd them to your PATH:\n"
           << "  export PATH=" << dir.string() << ":$PATH\n";
  return kExitOk;
}

int RunSbatch(const std::vector<std::string>& argv, CliContext& ctx) {
  auto cmd = slurm::ParseOptions(argv, slurm::SbatchOptionDefs(), /*stop_at_positional=*/true);
  if (!cmd.ok()) return SlurmError(ctx, "sbatch", cmd.status().message());
  if (cmd->Has("help")) {
    *ctx.out << "Usage: sbatch [OPTIONS...] SCRIPT [ARGS...]   (see docs/slurm.md)\n";
    return kExitOk;
  }
  slurm::SubmitContext sc = SubmitContextOf(ctx);
  std::vector<std::string> positional = cmd->positional;
  if (cmd->Has("wrap")) {
    if (!positional.empty()) {
      return SlurmError(
          ctx, "sbatch",
          "--wrap and a script file (" + positional[0] + ") do not go together: give one of them");
    }
    sc.script = slurm::WrapScript(cmd->Get("wrap"));
    sc.script_name = "wrap";
  } else {
    std::stringstream text;
    if (positional.empty()) {
      text << std::cin.rdbuf();  // like sbatch: the script from standard input
      sc.script_name = "sbatch";
    } else {
      std::ifstream in(positional[0]);
      if (!in) return SlurmError(ctx, "sbatch", "Unable to open file " + positional[0]);
      text << in.rdbuf();
      sc.script_name = std::filesystem::path(positional[0]).filename().string();
      sc.script_args.assign(positional.begin() + 1, positional.end());
    }
    sc.script = text.str();
  }
  std::vector<int> lines;
  auto dir = slurm::ParseOptions(slurm::ScriptDirectives(sc.script, &lines),
                                 slurm::SbatchOptionDefs(), /*stop_at_positional=*/false);
  if (!dir.ok())
    return SlurmError(ctx, "sbatch", "in #SBATCH directives: " + dir.status().message());
  for (const std::string& p : dir->positional) dir->unknown.push_back(p);
  dir->positional.clear();
  slurm::ParsedOptions opts = slurm::MergeOptions(*dir, *cmd);
  auto sub = slurm::BuildBatchSpec(opts, sc, opts.Has("strict"));
  if (!sub.ok()) return SlurmError(ctx, "sbatch", sub.status().message());
  for (const std::string& w : sub->warnings) *ctx.err << "sbatch: warning: " << w << "\n";
  if (Status a = CheckAccount(ctx, opts); !a.ok()) return SlurmError(ctx, "sbatch", a.message());
  auto id = PostSpec(ctx, "sbatch", sub->spec);
  if (!id.ok()) return SlurmError(ctx, "sbatch", id.status().message());
  if (sub->parsable) {
    *ctx.out << *id << "\n";
  } else {
    *ctx.out << "Submitted batch job " << *id << "\n";
  }
  return kExitOk;
}

int RunSrun(const std::vector<std::string>& given, CliContext& ctx) {
  // --pty (a terminal) and --overlap (steps share the allocation, as every Corral step does)
  // may come anywhere before the command; the Slurm option table knows neither, so the parser
  // leaves them among the unknown options (a switch: it takes no word after it).
  auto opts = slurm::ParseOptions(given, slurm::SbatchOptionDefs(), /*stop_at_positional=*/true);
  if (!opts.ok()) return SlurmError(ctx, "srun", opts.status().message());
  bool pty = false;
  std::erase_if(opts->unknown, [&pty](const std::string& u) {
    pty = pty || u == "--pty";
    return u == "--pty" || u == "--overlap";
  });
  if (opts->Has("help")) {
    *ctx.out << "Usage: srun [OPTIONS...] COMMAND [ARGS...]   (see docs/slurm.md)\n";
    return kExitOk;
  }
  if (opts->positional.empty()) return SlurmError(ctx, "srun", "no command given");
  if (ctx.env("CORRAL_JOB_ID") && ctx.env("SLURM_JOB_ID")) return RunLocalStep(*opts, ctx);
  if (ctx.env("CORRAL_SALLOC_JOB")) return RunSallocStep(*opts, pty, ctx);
  for (const char* batch_only : {"array", "dependency", "wrap", "parsable"}) {
    if (opts->Has(batch_only)) {
      return SlurmError(ctx, "srun", std::string("--") + batch_only + " is an sbatch option");
    }
  }
  // Outside an allocation srun is a job of its own: Corral starts its tasks directly (one
  // replica per node, --ntasks-per-node tasks each) and srun follows its output.
  slurm::SubmitContext sc = SubmitContextOf(ctx);
  sc.script = slurm::WrapScript(JoinQuoted(opts->positional));
  sc.script_name = std::filesystem::path(opts->positional[0]).filename().string();
  sc.output_to_log = true;
  auto sub = slurm::BuildBatchSpec(*opts, sc, false);
  if (!sub.ok()) return SlurmError(ctx, "srun", sub.status().message());
  for (const std::string& w : sub->warnings) *ctx.err << "srun: warning: " << w << "\n";
  if (Status a = CheckAccount(ctx, *opts); !a.ok()) return SlurmError(ctx, "srun", a.message());
  Json spec = sub->spec;
  if (!opts->Has("output") && !opts->Has("error")) {
    spec["command"] = opts->positional;
    spec["tasks_per_replica"] = sub->tasks_per_node;
    spec.erase("batch");
  }
  if (pty) return RunInteractiveSession(MakeSessionSpec(spec), opts->positional, true, ctx, "srun");
  auto id = PostSpec(ctx, "srun", spec);
  if (!id.ok()) return SlurmError(ctx, "srun", id.status().message());
  *ctx.err << "srun: job " << *id << " queued and waiting for resources\n";
  ctx.err->flush();
  // Follow the output once the tasks have started (their log files exist from then on).
  ApiClient watch(ctx);
  for (;;) {
    auto reply = watch.CallJson("GET", "/v1/jobs/" + *id);
    if (!reply.ok()) return SlurmError(ctx, "srun", reply.status().message());
    JobState st;
    if (ParseJobState(reply->value("job", Json::object()).value("state", ""), &st) &&
        (st == JobState::kRunning || IsTerminal(st))) {
      break;
    }
    ctx.sleep(std::min<DurationMs>(ctx.poll_interval, 200));
  }
  int rc = RunCommand("logs", {*id, "-f"}, ctx);
  if (rc != kExitOk) return rc;
  CliContext to_err = ctx;
  to_err.out = ctx.err;
  (void)RunCommand("logs", {*id, "--stderr"}, to_err);
  ApiClient api(ctx);
  for (int tries = 0;; ++tries) {
    auto reply = api.CallJson("GET", "/v1/jobs/" + *id);
    if (!reply.ok()) return SlurmError(ctx, "srun", reply.status().message());
    auto job = JobFromJson(reply->value("job", Json::object()));
    if (!job.ok()) return SlurmError(ctx, "srun", job.status().message());
    if (IsTerminal(job->state)) {
      if (job->state == JobState::kSucceeded) return 0;
      if (job->state == JobState::kCancelled) return 1;
      return job->exit_code < 0 ? 128 - job->exit_code : std::max(1, job->exit_code);
    }
    ctx.sleep(ctx.poll_interval);
  }
}

}  // namespace corral::cli
