// sbatch's options and script -> the Corral job spec (the JSON of docs/api.md), and the batch
// step that carries the script. Pure, any thread.
//
// How a batch job runs on Corral: one replica per node (`--nodes`), one process per replica.
// Replica 0 writes the script (carried base64 in the command, so no shared filesystem is
// needed) to a temporary file, points stdout/stderr at `--output`/`--error`, sets the
// batch-step variables that describe the whole allocation (SLURM_NTASKS, ...), and runs it.
// Replicas 1..N-1 only hold their nodes: they sleep until the head stops them, which it does
// when replica 0 ends (the spec's `batch: true`), and the job ends with replica 0's code.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/codec.h"
#include "core/status.h"
#include "core/time.h"
#include "slurm/options.h"

namespace corral::slurm {

// Slurm's --time: "MM", "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS"; "UNLIMITED" and
// "INFINITE" are 0 (no limit). Errors name `option` and the accepted forms.
Result<DurationMs> ParseSlurmTime(const std::string& option, const std::string& text);

// Slurm's sizes: a number in MB, or with a K, M, G or T suffix. Result in MB (K rounds up).
Result<int64_t> ParseSlurmMemoryMb(const std::string& option, const std::string& text);

// What sbatch knows besides its options.
struct SubmitContext {
  std::string script;  // the script's text (with --wrap, the generated one)
  std::vector<std::string> script_args;
  std::string script_name;                         // the default job name: the script's base name
  std::string cwd;                                 // submit dir (SLURM_SUBMIT_DIR, default --chdir)
  std::string user;                                // for %u
  std::string submit_host;                         // SLURM_SUBMIT_HOST
  std::map<std::string, std::string> environment;  // the submitter's, for --export=ALL
  bool output_to_log = false;  // srun: no --output given means the job's own log, not a file
};

struct BatchSubmission {
  Json spec;                          // ready for POST /v1/jobs
  std::vector<std::string> warnings;  // accepted but not (fully) honoured
  bool parsable = false;
  int64_t tasks_per_node = 1;
};

// Validates the options and builds the spec. Unknown options are an error with `strict`,
// otherwise a warning naming them. Errors name the option, the value and what is accepted.
Result<BatchSubmission> BuildBatchSpec(const ParsedOptions& opts, const SubmitContext& ctx,
                                       bool strict);

// The script sbatch --wrap makes of a command line.
std::string WrapScript(const std::string& command);

// The bash program that replica 0 runs (see the file comment). `exports` are the batch-step
// variables set before the script starts; the output patterns are expanded at run time (an
// empty output pattern leaves stdout and stderr as the run's own log).
std::string BatchStepProgram(const std::string& script, const std::string& output_pattern,
                             const std::string& error_pattern, bool append,
                             const std::map<std::string, std::string>& exports);

// Base64 (RFC 4648, with padding) of arbitrary bytes.
std::string Base64(const std::string& bytes);

// Quotes a word for a POSIX shell.
std::string ShellQuote(const std::string& s);

}  // namespace corral::slurm
