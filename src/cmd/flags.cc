#include "cmd/flags.h"

#include <algorithm>
#include <iostream>

namespace corral::cmd {

std::optional<int> ParseFlags(CLI::App& app, std::vector<std::string> args) {
  std::reverse(args.begin(), args.end());  // CLI11 takes the vector back to front
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);  // prints help or the error
    return code == 0 ? 0 : 2;
  }
  return std::nullopt;
}

Result<std::pair<std::string, int>> ParseHostPort(const std::string& flag,
                                                  const std::string& text) {
  auto colon = text.rfind(':');
  int port = -1;
  if (colon != std::string::npos) {
    try {
      size_t pos = 0;
      port = std::stoi(text.substr(colon + 1), &pos);
      if (pos != text.size() - colon - 1) port = -1;
    } catch (...) {
      port = -1;
    }
  }
  if (colon == std::string::npos || colon == 0 || port < 0 || port > 65535) {
    return InvalidArgument("flag '" + flag + "': got \"" + text +
                           "\", want HOST:PORT such as 127.0.0.1:7070");
  }
  return std::make_pair(text.substr(0, colon), port);
}

std::optional<std::pair<std::string, int>> ListenFlag(const std::string& command,
                                                      const std::string& text) {
  auto hp = ParseHostPort("--listen", text);
  if (!hp.ok()) {
    std::cerr << "corral " << command << ": " << hp.status().message() << "\n";
    return std::nullopt;
  }
  return *hp;
}

}  // namespace corral::cmd
