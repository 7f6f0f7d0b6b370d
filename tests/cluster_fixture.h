// A real local cluster for integration tests: `corral head` and `corral agent` processes on
// loopback, each in its own state dir under a fresh temp dir, plus a way to run the CLI.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace corral::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs argv to completion with extra environment; captures stdout and stderr.
CommandResult RunCommand(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env = {});

// A background process; SIGKILLed (with its process group) when destroyed unless stopped.
class Daemon {
 public:
  Daemon(const std::vector<std::string>& argv, const std::string& log_path);
  ~Daemon();
  void Kill(int sig = 9);  // and reap
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

class LocalCluster {
 public:
  // Starts a head and `agents` agents with `gpus` simulated GPUs each; waits until ready.
  // Agents run jobs as their own user unless `agent_flags` says otherwise.
  LocalCluster(const std::string& name, int agents, int gpus,
               std::vector<std::string> head_flags = {},
               std::vector<std::string> agent_flags = {"--run-as", "agent"});
  ~LocalCluster();

  std::string addr() const { return addr_; }
  const std::string& dir() const { return dir_; }
  // The head's state dir (tokens, audit log, corral.db), private to it; beside it in dir():
  // the agents' dirs and the checkpoint root, which jobs' users must reach.
  std::string head_dir() const { return dir_ + "/head"; }
  std::string token() const { return token_; }
  // A head serving HTTPS (--tls): agents and Corral() trust its CA, STATE_DIR/tls/ca.pem.
  bool tls() const { return addr_.rfind("https://", 0) == 0; }
  std::string ca_path() const { return head_dir() + "/tls/ca.pem"; }

  // `corral ARGS...` against this cluster.
  CommandResult Corral(const std::vector<std::string>& args) const;
  // Submits with --parsable; returns the id (fails the test on error).
  std::string Submit(const std::vector<std::string>& args) const;

  void StartAgent(int i);  // (re)starts agent i (1-based)
  void KillAgent(int i, int sig = 9);
  void KillHead(int sig = 9);
  void StartHead();

 private:
  std::string dir_;
  std::string addr_;
  std::string token_;
  int gpus_;
  std::vector<std::string> head_flags_;
  std::vector<std::string> agent_flags_;
  std::unique_ptr<Daemon> head_;
  std::map<int, std::unique_ptr<Daemon>> agents_;
};

std::string CorralBin();
bool WaitUntil(int timeout_ms, const std::function<bool()>& probe);

// Waits until every job in `ids` has succeeded, listing all jobs through `corral` (a
// cluster's `corral ARGS...`); `*state` holds every listed job's state by id, as last seen.
bool WaitAllSucceeded(const std::function<CommandResult(const std::vector<std::string>&)>& corral,
                      const std::vector<std::string>& ids, int timeout_ms,
                      std::map<std::string, std::string>* state);

}  // namespace corral::testing
