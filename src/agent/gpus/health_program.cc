#include "agent/gpus/health_program.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "agent/node/owned_fd.h"

namespace corral::agent {
namespace {

int64_t SteadyNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Result<HealthProgramResult> RunHealthProgram(const std::string& path, int64_t limit_ms) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Internal(std::string("pipe: ") + std::strerror(errno));
  OwnedFd read_end(fds[0]), write_end(fds[1]);
  pid_t pid = fork();
  if (pid < 0) return Internal(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, STDIN_FILENO);
    dup2(write_end.get(), STDOUT_FILENO);
    execl(path.c_str(), path.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);  // (also in the child: whichever runs first)
  write_end = OwnedFd();
  std::string out;
  const int64_t deadline = SteadyNowMs() + limit_ms;
  bool killed = false;
  for (;;) {
    const int64_t left = deadline - SteadyNowMs();
    if (left <= 0) {
      kill(-pid, SIGKILL);
      killed = true;
      break;
    }
    pollfd p{read_end.get(), POLLIN, 0};
    int ready = poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    char buf[4096];
    ssize_t n = read(read_end.get(), buf, sizeof(buf));
    if (n <= 0) break;  // EOF: the program (and whatever held its stdout) is done
    if (out.size() < 65536) out.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!killed) kill(-pid, SIGKILL);  // children it left behind
  HealthProgramResult r;
  r.reason = out.substr(0, out.find('\n'));
  r.killed = killed;
  if (killed) {
    r.health = GpuHealth::kWarn;
    r.reason = "health program " + path + " killed after " + std::to_string(limit_ms / 1000) +
               " s (its limit)";
  } else if (WIFEXITED(status) && WEXITSTATUS(status) <= 2) {
    r.health = WEXITSTATUS(status) == 0   ? GpuHealth::kOk
               : WEXITSTATUS(status) == 1 ? GpuHealth::kWarn
                                          : GpuHealth::kCritical;
    if (r.health != GpuHealth::kOk && r.reason.empty()) {
      r.reason = "health program " + path + " exited " + std::to_string(WEXITSTATUS(status));
    }
  } else {
    r.health = GpuHealth::kWarn;
    r.reason = "health program " + path + " failed: " +
               (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                  : "signal " + std::to_string(WTERMSIG(status)));
  }
  return r;
}

HealthProgramRunner::HealthProgramRunner(std::string path, int64_t interval_ms, int64_t limit_ms)
    : path_(std::move(path)),
      interval_ms_(interval_ms),
      limit_ms_(limit_ms),
      thread_([this] { Loop(); }) {}

HealthProgramRunner::~HealthProgramRunner() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::optional<HealthProgramResult> HealthProgramRunner::Last() const {
  std::lock_guard lock(mu_);
  return last_;
}

void HealthProgramRunner::Loop() {
  for (;;) {
    Result<HealthProgramResult> r = RunHealthProgram(path_, limit_ms_);
    if (!r.ok()) {
      r = HealthProgramResult{GpuHealth::kWarn, "health program: " + r.status().message(), false};
    }
    if (r->health != GpuHealth::kOk) {
      spdlog::warn("health program: {}: {}", GpuHealthName(r->health), r->reason);
    }
    std::unique_lock lock(mu_);
    last_ = *r;
    if (cv_.wait_for(lock, std::chrono::milliseconds(interval_ms_), [&] { return stopping_; })) {
      return;
    }
  }
}

}  // namespace corral::agent
