#include "cluster_fixture.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

namespace corral::testing {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<char*> CArgv(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (const std::string& a : argv) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::string CorralBin() { return CORRAL_BIN; }

bool WaitUntil(int timeout_ms, const std::function<bool()>& probe) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (probe()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return probe();
}

CommandResult RunCommand(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env) {
  char out_tmpl[] = "/tmp/corral-out-XXXXXX";
  char err_tmpl[] = "/tmp/corral-err-XXXXXX";
  int out_fd = mkstemp(out_tmpl);
  int err_fd = mkstemp(err_tmpl);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    auto cargv = CArgv(argv);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  close(out_fd);
  close(err_fd);
  r.out = ReadFile(out_tmpl);
  r.err = ReadFile(err_tmpl);
  unlink(out_tmpl);
  unlink(err_tmpl);
  return r;
}

Daemon::Daemon(const std::vector<std::string>& argv, const std::string& log_path) {
  int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  pid_ = fork();
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(log, 1);
    dup2(log, 2);
    auto cargv = CArgv(argv);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  close(log);
}

Daemon::~Daemon() { Kill(SIGKILL); }

void Daemon::Kill(int sig) {
  if (pid_ <= 0) return;
  kill(pid_, sig);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

LocalCluster::LocalCluster(const std::string& name, int agents, int gpus,
                           std::vector<std::string> head_flags,
                           std::vector<std::string> agent_flags)
    : gpus_(gpus), head_flags_(std::move(head_flags)), agent_flags_(std::move(agent_flags)) {
  dir_ = (std::filesystem::temp_directory_path() /
          ("corral-it-" + name + "-" + std::to_string(getpid())))
             .string();
  std::filesystem::remove_all(dir_);
  std::filesystem::create_directories(dir_ + "/agents");
  StartHead();
  for (int i = 1; i <= agents; ++i) StartAgent(i);
  bool ready = WaitUntil(30000, [&] {
    auto r = Corral({"nodes", "-o", "json"});
    if (r.exit_code != 0) return false;
    nlohmann::json nodes = nlohmann::json::parse(r.out, nullptr, false);
    if (nodes.is_object() && nodes.contains("nodes")) nodes = nodes["nodes"];
    if (!nodes.is_array()) return false;
    int ready = 0;
    for (const auto& n : nodes) ready += n.value("state", "") == "ready";
    return ready >= agents;
  });
  EXPECT_TRUE(ready) << "agents did not register; see " << dir_;
}

LocalCluster::~LocalCluster() {
  // Cancel what is still running so that no job outlives the test.
  auto active = [&] {
    auto r = Corral({"jobs", "--state", "pending,scheduled,running", "-o", "json"});
    nlohmann::json jobs = nlohmann::json::parse(r.out, nullptr, false);
    return jobs.is_array() ? jobs : nlohmann::json::array();
  };
  for (const auto& j : active()) Corral({"cancel", std::to_string(j["id"].get<uint64_t>())});
  WaitUntil(5000, [&] { return active().empty(); });
  agents_.clear();
  head_.reset();
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir_);
}

void LocalCluster::StartHead() {
  std::string log = dir_ + "/head.log";
  // Port 0: the head prints the port it bound; read it from the log.
  std::vector<std::string> argv = {
      CorralBin(),
      "head",
      "--state-dir",
      head_dir(),
      "--listen",
      addr_.empty() ? "127.0.0.1:0" : addr_.substr(addr_.find("://") + 3),
      "--unreachable-after",
      "3",
      "--down-after",
      "6"};
  argv.insert(argv.end(), head_flags_.begin(), head_flags_.end());
  // The test's own root, unless the test names one (an empty one: the head's default).
  if (std::find(head_flags_.begin(), head_flags_.end(), "--checkpoint-root") == head_flags_.end()) {
    argv.insert(argv.end(), {"--checkpoint-root", dir_ + "/checkpoints"});
  }
  std::regex re("listening on (https?://[0-9.:]+)");
  auto starts = [&](const std::string& text) {
    size_t count = 0;
    for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it) ++count;
    return count;
  };
  // A restarted head appends to the same log: wait for a line this start printed.
  size_t before = starts(ReadFile(log));
  head_ = std::make_unique<Daemon>(argv, log);
  std::string found;
  bool up = WaitUntil(20000, [&] {
    std::string text = ReadFile(log);
    std::string last;
    for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it) {
      last = (*it)[1].str();
    }
    if (starts(text) <= before) return false;
    found = last;
    return true;
  });
  ASSERT_TRUE(up) << "head did not start: " << ReadFile(log);
  addr_ = found;
  token_ = ReadFile(head_dir() + "/admin.token");
  while (!token_.empty() && token_.back() == '\n') token_.pop_back();
}

bool WaitAllSucceeded(const std::function<CommandResult(const std::vector<std::string>&)>& corral,
                      const std::vector<std::string>& ids, int timeout_ms,
                      std::map<std::string, std::string>* state) {
  return WaitUntil(timeout_ms, [&] {
    auto r = corral({"jobs", "--all", "-o", "json"});
    nlohmann::json jobs = nlohmann::json::parse(r.out, nullptr, false);
    if (!jobs.is_array()) return false;
    state->clear();
    for (const auto& j : jobs) (*state)[std::to_string(j["id"].get<uint64_t>())] = j["state"];
    for (const auto& id : ids) {
      if ((*state)[id] != "succeeded") return false;
    }
    return true;
  });
}

void LocalCluster::StartAgent(int i) {
  std::string name = "node" + std::to_string(i);
  std::vector<std::string> argv{CorralBin(),
                                "agent",
                                "--head",
                                addr_,
                                "--join-token-file",
                                head_dir() + "/join.token",
                                "--name",
                                name,
                                "--state-dir",
                                dir_ + "/agents/" + name,
                                "--simulate-gpus",
                                std::to_string(gpus_),
                                "--cpus",
                                "64",
                                "--memory",
                                "256G"};
  if (tls()) argv.insert(argv.end(), {"--ca", ca_path()});
  argv.insert(argv.end(), agent_flags_.begin(), agent_flags_.end());
  agents_[i] = std::make_unique<Daemon>(argv, dir_ + "/agents/" + name + ".log");
}

void LocalCluster::KillAgent(int i, int sig) {
  if (agents_.count(i)) agents_[i]->Kill(sig);
}

void LocalCluster::KillHead(int sig) {
  if (head_) head_->Kill(sig);
}

CommandResult LocalCluster::Corral(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {CorralBin()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::map<std::string, std::string> env = {{"CORRAL_ADDR", addr_},
                                            {"CORRAL_TOKEN", token_},
                                            {"CORRAL_CONFIG", dir_ + "/no-such-config.json"}};
  if (tls()) env["CORRAL_CA"] = ca_path();
  return RunCommand(argv, env);
}

std::string LocalCluster::Submit(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {"submit", "--parsable"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = Corral(argv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::string id = r.out;
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

}  // namespace corral::testing
