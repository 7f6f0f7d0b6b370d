// The client commands of `corral` (submit, jobs, show, wait, cancel, logs, nodes, queues):
// parse flags, call the head's HTTP API (docs/api.md), print for humans or as JSON.
//
// Exit codes: 0 success; 1 an API or connection error, or (wait) a job that did not
// succeed; 2 a usage or local validation error; 124 `wait --timeout` ran out.
#pragma once

#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/config.h"
#include "cli/transport.h"
#include "core/status.h"
#include "core/time.h"

namespace corral::cli {

// Everything a command touches outside itself, so that tests can fake it. Used from one thread.
struct CliContext {
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
  EnvLookup env;
  // The whole environment (sbatch --export=ALL carries it into the job).
  std::function<std::map<std::string, std::string>()> environment;
  // Called after a command has parsed its flags (so a usage error never needs a head):
  // the transport to the head, or why there is none (no config). `addr` names the head in
  // "cannot reach" messages.
  std::function<Result<std::shared_ptr<ApiTransport>>()> connect;
  std::string addr;
  std::function<TimeMs()> now;
  std::function<void(DurationMs)> sleep;
  std::string cwd;                  // submit's default workdir
  bool utc_times = false;           // show: timestamps in UTC rather than local time
  DurationMs poll_interval = 1000;  // wait and logs -f
};

// True for the commands RunCommand knows.
bool IsCliCommand(const std::string& command);
// True for sbatch, srun, salloc, squeue, scancel, sacct, scontrol, sinfo, sacctmgr, sshare,
// sprio (main answers to them as argv[0]; RunCommand runs them too).
bool IsSlurmCommand(const std::string& name);
// One line per client command, for the top-level `corral --help`.
std::string CliUsage();

// Runs one client command. Returns the process exit code.
int RunCommand(const std::string& command, const std::vector<std::string>& args, CliContext& ctx);

// The entry point main() calls: RunCommand with the process environment, the wall clock, the
// current directory and an HTTP transport to the configured head (LoadClientConfig).
// Defined in cli_main.cc, part of the corral_cli_http library (it needs corral_net).
int CliMain(const std::string& command, const std::vector<std::string>& args, std::ostream& out,
            std::ostream& err);

// A client command of a library the CLI does not link (`corral whatif`, in sim/), run by
// CliMainWith in the context CliMain builds.
using CommandFn = std::function<int(const std::vector<std::string>& args, CliContext& ctx)>;
int CliMainWith(const CommandFn& run, const std::vector<std::string>& args, std::ostream& out,
                std::ostream& err);

}  // namespace corral::cli
