// The subcommands' entry points; main() only dispatches.
#pragma once

#include <utility>

#include <string>
#include <vector>

#include "core/status.h"

namespace corral::cmd {

int HeadMain(std::vector<std::string> args);
int AgentMain(std::vector<std::string> args);
// `corral agent --check ...` (agent_check.cc).
int AgentCheckMain(std::vector<std::string> args);
int UpMain(std::vector<std::string> args);

}  // namespace corral::cmd
