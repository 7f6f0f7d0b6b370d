// Helpers for the agent's tests: temporary directories, waiting, process checks.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "core/agent_protocol.h"

namespace corral::agent::testing {

// A fresh directory removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Polls `pred` every 10 ms until it is true or `timeout` passes; returns its last value.
bool WaitFor(const std::function<bool()>& pred,
             std::chrono::milliseconds timeout = std::chrono::seconds(10));

std::string ReadFileOr(const std::string& path, const std::string& fallback = "");
void Touch(const std::string& path);

// True if `pid` exists and is not a zombie.
bool Alive(int pid);

// A shell-command order: /bin/sh -c `script`.
RunOrder ShellOrder(const std::string& run_id, const std::string& script, int32_t replica = 0);

}  // namespace corral::agent::testing
