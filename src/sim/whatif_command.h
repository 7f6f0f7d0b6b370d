// `corral whatif [--since 7d] [--set-quota QUEUE=GPUS]... [--policy P] [--nodes N]
// [--running so-far|limit] [--history FILE] [-o table|json]`: the head's recorded jobs of the
// period replayed through the simulator as recorded and with the change, per queue and per
// user side by side (sim/whatif.h; docs/simulation.md, "What-if on the cluster's history").
#pragma once

#include <string>
#include <vector>

#include "cli/cli.h"
#include "sim/whatif.h"

namespace corral::sim {

// The report for people: a summary, then one table per queue and one per user.
std::string RenderWhatIf(const WhatIfReport& r);

// Runs the command; returns the process exit code (0, 1 an API or replay error, 2 usage).
int RunWhatIf(const std::vector<std::string>& args, cli::CliContext& ctx);

}  // namespace corral::sim
