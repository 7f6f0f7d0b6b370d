// Slurm's filename patterns for --output/--error: %j (job id), %A (array's job id), %a (array
// index), %x (job name), %u (user), %N (short host name), %t (task id), %n (node id), %s
// (step), %% (a percent sign); a number between % and the letter zero-pads ("%4a").
// Pure, any thread.
#pragma once

#include <string>

#include "core/status.h"

namespace corral::slurm {

struct PatternValues {
  std::string job_id;
  std::string array_job_id;  // the job id for a job that is not an array element
  std::string array_index;   // "4294967294" (Slurm's NO_VAL) for one that is not
  std::string job_name;
  std::string user;
  std::string node;
  std::string task = "0";
  std::string node_id = "0";
  std::string step = "batch";
};

// Expands a pattern; an unknown %X stays as written (as Slurm leaves it).
std::string ExpandPattern(const std::string& pattern, const PatternValues& v);

// The same pattern as a double-quoted shell word whose run-time values come from the batch
// step's variables, so that an array element's %a is its own. Known-at-submit values are
// given: `job_name`, `user`.
std::string PatternToShell(const std::string& pattern, const std::string& job_name,
                           const std::string& user);

// Checks a pattern for a directory separator at the end or an empty name.
Status ValidatePattern(const std::string& option, const std::string& pattern);

}  // namespace corral::slurm
