// How the Slurm-compatible commands (sbatch, squeue, srun, ...) report an error: as Slurm's
// own tools do, "<command>: error: <message>" on stderr.
#pragma once

#include <string>

#include "cli/commands.h"

namespace corral::cli {

inline int SlurmError(CliContext& ctx, const std::string& command, const std::string& message) {
  *ctx.err << command << ": error: " << message << "\n";
  return kExitError;
}

// srun's errors, for its steps.
inline int StepError(CliContext& ctx, const std::string& message) {
  return SlurmError(ctx, "srun", message);
}

}  // namespace corral::cli
