// The subcommands' entry points; main() only dispatches.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace corral::cmd {

int HeadMain(std::vector<std::string> args);
int AgentMain(std::vector<std::string> args);
int UpMain(std::vector<std::string> args);

}  // namespace corral::cmd
