// Several `corral head`s on one PostgreSQL, as processes (docs/reliability.md): the heads'
// directories, logs and address list, agents that follow the list, the CLI against it, and
// which head leads. Shared by the HA suites (ha_test.cc, services_failover_test.cc).
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cluster_fixture.h"
#include "net/http_client.h"

namespace corral::testing {

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

class HaCluster {
 public:
  HaCluster(const std::string& store_url, int heads) : store_url_(store_url) {
    dir_ = (std::filesystem::temp_directory_path() / ("corral-ha-" + std::to_string(getpid())))
               .string();
    std::filesystem::remove_all(dir_);
    for (int i = 0; i < heads; ++i) {
      urls_.push_back("http://127.0.0.1:" + std::to_string(FreePort()));
      std::filesystem::create_directories(HeadDir(i));
    }
  }
  ~HaCluster() {
    agents_.clear();
    heads_.clear();
    if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir_);
  }

  std::string HeadDir(int i) const { return dir_ + "/head" + std::to_string(i); }
  std::string HeadLog(int i) const { return HeadDir(i) + ".log"; }
  std::string List() const {
    std::string l;
    for (const auto& u : urls_) l += (l.empty() ? "" : ",") + u;
    return l;
  }
  const std::string& dir() const { return dir_; }

  void StartHead(int i, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv{CorralBin(), "head",         "--state-dir",
                                  HeadDir(i),  "--listen",     urls_[i].substr(7),
                                  "--store",   store_url_,     "--unreachable-after",
                                  "5",         "--down-after", "20"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    heads_[i] = std::make_unique<Daemon>(argv, HeadLog(i));
  }
  // SIGSTOP / SIGCONT, without reaping.
  void SignalHead(int i, int sig) { ::kill(heads_[i]->pid(), sig); }
  bool HeadExited(int i) const {
    return ::kill(heads_.at(i)->pid(), 0) != 0 || Zombie(heads_.at(i)->pid());
  }
  static bool Zombie(pid_t pid) {
    std::string stat = Slurp("/proc/" + std::to_string(pid) + "/stat");
    auto paren = stat.rfind(')');
    return paren == std::string::npos || stat.substr(paren + 2, 1) == "Z";
  }
  // Every head must accept the same admin and join tokens: the first one's, copied.
  void ShareTokens(int from, int to) {
    for (const char* f : {"/admin.token", "/join.token"}) {
      std::filesystem::copy_file(HeadDir(from) + f, HeadDir(to) + f,
                                 std::filesystem::copy_options::overwrite_existing);
    }
  }
  void KillHead(int i) { heads_[i]->Kill(SIGKILL); }
  bool LogSays(int i, const std::string& what) const {
    return Slurp(HeadLog(i)).find(what) != std::string::npos;
  }
  void StartAgent(int i, int gpus, const std::vector<std::string>& extra = {}) {
    std::string name = "node" + std::to_string(i);
    std::vector<std::string> argv{CorralBin(),
                                  "agent",
                                  "--head",
                                  List(),
                                  "--join-token-file",
                                  HeadDir(0) + "/join.token",
                                  "--name",
                                  name,
                                  "--state-dir",
                                  dir_ + "/" + name,
                                  "--simulate-gpus",
                                  std::to_string(gpus),
                                  "--cpus",
                                  "64",
                                  "--memory",
                                  "256G",
                                  "--run-as",
                                  "agent"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    agents_[i] = std::make_unique<Daemon>(argv, dir_ + "/" + name + ".log");
  }
  const std::string& url(int i) const { return urls_[i]; }
  std::string Token() const {
    std::string token = Slurp(HeadDir(0) + "/admin.token");
    while (!token.empty() && token.back() == '\n') token.pop_back();
    return token;
  }
  CommandResult Corral(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {CorralBin()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, {{"CORRAL_ADDR", List()},
                             {"CORRAL_TOKEN", Token()},
                             {"CORRAL_CONFIG", dir_ + "/no-such-config.json"}});
  }
  // Which head says it leads (-1: none), asking each directly.
  int Leader() const {
    for (size_t i = 0; i < urls_.size(); ++i) {
      net::HttpClient http(urls_[i], "");
      auto r = http.Get("/v1/leader", std::chrono::seconds(1));
      if (!r.ok()) continue;
      nlohmann::json j = nlohmann::json::parse(r->body, nullptr, false);
      if (j.is_object() && j.value("role", "") == "leader") return static_cast<int>(i);
    }
    return -1;
  }

 private:
  std::string store_url_;
  std::string dir_;
  std::vector<std::string> urls_;
  std::map<int, std::unique_ptr<Daemon>> heads_;
  std::map<int, std::unique_ptr<Daemon>> agents_;
};

}  // namespace corral::testing
