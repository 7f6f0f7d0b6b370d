// Slurm's option syntax for sbatch and srun, on the command line and in `#SBATCH` lines:
// `--nodes=2`, `--nodes 2`, `-N2`, `-N 2`, switches (`--parsable`), options whose value is
// optional (`--exclusive`, `--requeue`). A dedicated parser rather than the CLI's: Slurm
// attaches short values (`-N2`, `-c8`), directives must warn on unknown options instead of
// failing, and the first non-option word (the script) ends the options. Pure, any thread.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace corral::slurm {

// One option sbatch knows. `name` is the canonical long name without dashes.
struct OptionDef {
  const char* name;
  char short_name;  // 0: none
  enum Arg { kRequired, kNone, kOptional } arg;
};

// The options sbatch accepts (and srun, for the ones it shares).
const std::vector<OptionDef>& SbatchOptionDefs();

struct ParsedOptions {
  std::map<std::string, std::string> values;  // canonical name -> last value ("" for switches)
  std::vector<std::string> unknown;           // as written: "--foo=bar", "-Q"
  std::vector<std::string> positional;        // the script and its arguments
  bool Has(const std::string& name) const { return values.count(name) > 0; }
  std::string Get(const std::string& name, const std::string& fallback = "") const;
};

// Parses argv. With stop_at_positional the first word that is not an option and all after it
// go to positional (sbatch SCRIPT ARGS...). An unknown option goes to `unknown` (its value, if
// written `--opt=v`, with it); a missing value is an InvalidArgument naming the option.
Result<ParsedOptions> ParseOptions(const std::vector<std::string>& args,
                                   const std::vector<OptionDef>& defs, bool stop_at_positional);

// The `#SBATCH` directives of a script, split into words as sbatch does (whitespace, quotes
// removed), in order. Scanning stops at the first line that is neither blank, a comment nor
// the interpreter line, as sbatch's does. `line_of` gets the 1-based line of each word.
std::vector<std::string> ScriptDirectives(const std::string& script,
                                          std::vector<int>* line_of = nullptr);

// Merges script directives and command-line options: the command line wins.
ParsedOptions MergeOptions(const ParsedOptions& directives, const ParsedOptions& command_line);

}  // namespace corral::slurm
