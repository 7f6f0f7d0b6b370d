// The client side of a command run inside a job (`corral exec`, `corral run`, srun --pty,
// srun inside salloc): opens the session through the head, relays this process's stdin to it
// and its output to this process's stdout and stderr, and returns its exit code.
//
// With a terminal (pty): the local terminal goes into raw mode (restored on every way out), so
// every key, Ctrl-C and Ctrl-Z included, goes to the remote terminal, whose line discipline
// signals the remote foreground process group; the window size goes at the start and on each
// SIGWINCH. Without one, SIGINT, SIGQUIT and SIGTSTP here are sent to the remote process group,
// and the end of stdin closes the remote command's.
//
// Threads: the caller's (stdin, resizes, signals, touches), one per output stream. Each has a
// transport of its own (ApiTransport is single-threaded), made from ctx.connect on the caller's.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "core/job.h"

namespace corral::cli {

struct ExecOptions {
  std::vector<std::string> command;
  int32_t replica = 0;
  bool pty = false;
  std::map<std::string, std::string> env;  // over the job's (TERM is added with a terminal)
  // The job is an interactive session to keep alive: POST /v1/jobs/ID/touch every
  // touch_every_ms, saying whether the user typed since (idle culling). Else (a batch job's
  // command) the job is read as often instead. Either, and at once when a relayed request
  // fails, tells the client that the run is over (its node lost) and ends it.
  bool touch_job = false;
  DurationMs touch_every_ms = 10000;
  std::string command_name = "exec";  // in error messages: "corral exec: ..."
};

// Runs opts.command inside job `job`; returns its exit code (128 + N for a signal N), or 1
// when the session could not be opened or was lost (the reason printed to ctx.err).
int RunInJob(CliContext& ctx, JobId job, const ExecOptions& opts);

}  // namespace corral::cli
