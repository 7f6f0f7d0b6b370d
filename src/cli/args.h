// A small command-line flag parser for the client commands: --name VALUE, --name=VALUE,
// -x VALUE, boolean --name, repeatable flags, "--" ending the flags. Pure, any thread.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace corral::cli {

struct FlagDef {
  std::string name;         // long name without dashes: "gpus"
  char short_name = 0;      // 'f' for -f, 0 for none
  bool takes_value = true;  // false: a boolean switch
};

struct ParsedArgs {
  std::map<std::string, std::vector<std::string>> flags;  // by long name; switches hold "true"
  std::vector<std::string> positional;
  std::vector<std::string> rest;  // after "--" (or from the first positional, see below)
  bool saw_dashdash = false;

  bool Has(const std::string& name) const { return flags.count(name) > 0; }
  // The last value given for a flag, or fallback.
  std::string Get(const std::string& name, const std::string& fallback = "") const;
  const std::vector<std::string>& All(const std::string& name) const;
};

// Parses args against defs. With stop_at_positional, the first positional argument and all
// after it go to rest (like srun: `submit --gpus 1 python train.py --lr 3`). An unknown flag
// or a missing value is an InvalidArgument naming it. "-h"/"--help" is recorded as "help".
Result<ParsedArgs> ParseArgs(const std::vector<std::string>& args, const std::vector<FlagDef>& defs,
                             bool stop_at_positional);

}  // namespace corral::cli
