// Flag parsing shared by the daemon subcommands (head, agent, up).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace corral::cmd {

// Parses `args` into `app`. Returns the exit code to return at once (after --help or a usage
// error, which CLI11 has printed), or nullopt to go on.
std::optional<int> ParseFlags(CLI::App& app, std::vector<std::string> args);

Result<std::pair<std::string, int>> ParseHostPort(const std::string& flag, const std::string& text);

// The HOST:PORT of `--listen`, or nullopt after printing "corral COMMAND: <why>".
std::optional<std::pair<std::string, int>> ListenFlag(const std::string& command,
                                                      const std::string& text);

}  // namespace corral::cmd
