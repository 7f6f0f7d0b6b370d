#include "agent/gpus/health_program.h"

#include <spdlog/spdlog.h>

namespace corral::agent {

Result<HealthProgramResult> RunHealthProgram(const std::string& path, int64_t limit_ms,
                                             const ProgramRunner& programs) {
  Result<ProgramOutcome> outcome = programs.Run({path}, limit_ms);
  if (!outcome.ok()) return outcome.status();
  return HealthVerdict(path, limit_ms, *outcome);
}

HealthProgramResult HealthVerdict(const std::string& path, int64_t limit_ms,
                                  const ProgramOutcome& outcome) {
  HealthProgramResult r;
  r.reason = outcome.stdout_text.substr(0, outcome.stdout_text.find('\n'));
  r.killed = outcome.killed;
  if (outcome.killed) {
    r.health = GpuHealth::kWarn;
    r.reason = "health program " + path + " killed after " + std::to_string(limit_ms / 1000) +
               " s (its limit)";
  } else if (outcome.exited && outcome.exit_code <= 2) {
    r.health = outcome.exit_code == 0   ? GpuHealth::kOk
               : outcome.exit_code == 1 ? GpuHealth::kWarn
                                        : GpuHealth::kCritical;
    if (r.health != GpuHealth::kOk && r.reason.empty()) {
      r.reason = "health program " + path + " exited " + std::to_string(outcome.exit_code);
    }
  } else {
    r.health = GpuHealth::kWarn;
    r.reason = "health program " + path + " failed: " +
               (outcome.exited ? "exit status " + std::to_string(outcome.exit_code)
                               : "signal " + std::to_string(outcome.signal));
  }
  return r;
}

HealthProgramRunner::HealthProgramRunner(std::string path, int64_t interval_ms, int64_t limit_ms,
                                         NodeEnv env)
    : path_(std::move(path)),
      interval_ms_(interval_ms),
      limit_ms_(limit_ms),
      env_(env),
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
    Result<HealthProgramResult> r = RunHealthProgram(path_, limit_ms_, env_.programs);
    if (!r.ok()) {
      r = HealthProgramResult{GpuHealth::kWarn, "health program: " + r.status().message(), false};
    }
    if (r->health != GpuHealth::kOk) {
      spdlog::warn("health program: {}: {}", GpuHealthName(r->health), r->reason);
    }
    std::unique_lock lock(mu_);
    last_ = *r;
    if (env_.clock.WaitFor(lock, cv_, interval_ms_, [&] { return stopping_; })) {
      return;
    }
  }
}

}  // namespace corral::agent
