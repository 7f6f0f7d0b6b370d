#include "agent/gpus/mps.h"

#include <fcntl.h>
#include <grp.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/node/dirs.h"
#include "gpushare/share_contract.h"

namespace corral::agent {

MpsDaemons::MpsDaemons(std::string control, std::string dir, bool as_owner)
    : control_(std::move(control)), dir_(std::move(dir)), as_owner_(as_owner) {
  Load();
}

std::set<std::string> MpsDaemons::RunsOf(uid_t uid, int32_t gpu) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = users_.find({uid, gpu});
  return it == users_.end() ? std::set<std::string>{} : it->second;
}

void MpsDaemons::Persist(const Key& k) {
  const std::string path = DirOf(k) + "/runs";
  auto it = users_.find(k);
  if (it == users_.end() || it->second.empty()) {
    if (std::remove(path.c_str()) != 0 && errno != ENOENT) {
      spdlog::warn("mps: cannot remove {}: {}", path, std::strerror(errno));
    }
    return;
  }
  std::string text = "gid " + std::to_string(gids_[k]) + "\n";
  for (const std::string& run : it->second) text += "run " + run + "\n";
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out.flush()) {
      spdlog::warn("mps: cannot write {}: a restarted agent will not stop its daemon", tmp);
      return;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    spdlog::warn("mps: cannot rename {}: {}", tmp, std::strerror(errno));
  }
}

void MpsDaemons::Load() {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir_, ec)) {
    unsigned uid = 0;
    int gpu = 0;
    char tail = 0;
    const std::string name = e.path().filename().string();
    if (std::sscanf(name.c_str(), "u%u-gpu%d%c", &uid, &gpu, &tail) != 2) continue;
    std::ifstream in(e.path().string() + "/runs");
    if (!in) continue;  // no run used it when the last agent stopped
    const Key k{static_cast<uid_t>(uid), gpu};
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("gid ", 0) == 0) {
        gids_[k] = static_cast<gid_t>(std::strtoul(line.c_str() + 4, nullptr, 10));
      } else if (line.rfind("run ", 0) == 0 && line.size() > 4) {
        users_[k].insert(line.substr(4));
        runs_[line.substr(4)] = k;
      }
    }
    if (users_.count(k) != 0) {
      spdlog::info("mps: the daemon for uid {} on GPU {} serves {} run(s) of the last agent", uid,
                   gpu, users_[k].size());
    }
  }
}

std::string MpsDaemons::FindControl() {
  for (const char* p :
       {"/usr/bin/nvidia-cuda-mps-control", "/usr/local/bin/nvidia-cuda-mps-control",
        "/usr/local/cuda/bin/nvidia-cuda-mps-control"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return {};
}

std::string MpsDaemons::DirOf(const Key& k) const {
  return dir_ + "/u" + std::to_string(k.first) + "-gpu" + std::to_string(k.second);
}

Status MpsDaemons::Control(const Key& k, gid_t gid, const std::vector<std::string>& args,
                           const std::string& input) {
  const std::string dir = DirOf(k);
  std::vector<std::string> env = {"CUDA_VISIBLE_DEVICES=" + std::to_string(k.second),
                                  CORRAL_ENV_MPS_PIPE_DIRECTORY "=" + dir + "/pipe",
                                  CORRAL_ENV_MPS_LOG_DIRECTORY "=" + dir + "/log",
                                  "PATH=/usr/local/bin:/usr/bin:/bin"};
  std::vector<std::string> argv = {control_};
  argv.insert(argv.end(), args.begin(), args.end());
  // Everything the child uses is made before the fork.
  std::vector<char*> cargv, cenv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  for (std::string& e : env) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  int in[2];
  if (pipe2(in, O_CLOEXEC) != 0) return Internal(std::string("pipe: ") + std::strerror(errno));
  const std::string log = dir + "/control.out";
  const bool switch_user = as_owner_ && geteuid() == 0 && k.first != 0;
  pid_t pid = fork();
  if (pid < 0) {
    close(in[0]);
    close(in[1]);
    return Internal(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    dup2(in[0], 0);
    int out = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (out >= 0) {
      dup2(out, 1);
      dup2(out, 2);
    }
    if (switch_user && (setgroups(0, nullptr) != 0 || setgid(gid) != 0 || setuid(k.first) != 0)) {
      _exit(126);
    }
    execve(cargv[0], cargv.data(), cenv.data());
    _exit(127);
  }
  close(in[0]);
  if (!input.empty()) (void)!write(in[1], input.data(), input.size());
  close(in[1]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return FailedPrecondition(control_ + " " + (args.empty() ? std::string() : args[0]) +
                              " for GPU " + std::to_string(k.second) + " failed (status " +
                              std::to_string(status) + "; see " + log + ")");
  }
  return Status::Ok();
}

Result<MpsClient> MpsDaemons::Acquire(const std::string& run, uid_t uid, gid_t gid, int32_t gpu) {
  std::lock_guard<std::mutex> lock(mu_);
  const Key k{as_owner_ ? uid : geteuid(), gpu};
  const std::string dir = DirOf(k);
  auto& users = users_[k];
  if (users.empty()) {
    CORRAL_RETURN_IF_ERROR(MakeDirs(dir));
    for (const char* sub : {"/pipe", "/log"}) {
      const std::string d = dir + sub;
      if (mkdir(d.c_str(), 0700) != 0 && errno != EEXIST) {
        return Internal("mkdir " + d + ": " + std::strerror(errno));
      }
      if (geteuid() == 0 && chown(d.c_str(), k.first, gid) != 0) {
        return Internal("chown " + d + ": " + std::strerror(errno));
      }
    }
    Status started = Control(k, gid, {"-d"}, "");
    if (!started.ok()) {
      users_.erase(k);
      return FailedPrecondition("cannot start an MPS daemon: " + started.message());
    }
    gids_[k] = gid;
  }
  users.insert(run);
  runs_[run] = k;
  Persist(k);
  return MpsClient{dir + "/pipe", dir + "/log"};
}

void MpsDaemons::Release(const std::string& run) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = runs_.find(run);
  if (it == runs_.end()) return;
  const Key k = it->second;
  runs_.erase(it);
  auto& users = users_[k];
  users.erase(run);
  if (!users.empty()) {
    Persist(k);
    return;
  }
  users_.erase(k);
  (void)Control(k, gids_[k], {}, "quit\n");  // best effort: a daemon gone already is fine
  Persist(k);
  gids_.erase(k);
}

}  // namespace corral::agent
