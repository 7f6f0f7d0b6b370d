#include "agent/test_util.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace corral::agent::testing {

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "corral-agent-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) std::abort();
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

bool WaitFor(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return pred();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

std::string ReadFileOr(const std::string& path, const std::string& fallback) {
  std::ifstream in(path);
  if (!in) return fallback;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Touch(const std::string& path) { std::ofstream(path, std::ios::app).flush(); }

bool Alive(int pid) {
  std::string stat = ReadFileOr("/proc/" + std::to_string(pid) + "/stat");
  auto paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return false;
  char state = stat[paren + 2];
  return state != 'Z' && state != 'X';
}

RunOrder ShellOrder(const std::string& run_id, const std::string& script, int32_t replica) {
  RunOrder o;
  o.run_id = run_id;
  o.job_id = static_cast<JobId>(std::atoll(run_id.c_str()));
  o.attempt = 0;
  o.replica = replica;
  o.command = {"/bin/sh", "-c", script};
  o.grace_ms = 500;
  return o;
}

}  // namespace corral::agent::testing
