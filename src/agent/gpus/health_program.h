// An operator's node health check with Slurm's HealthCheckProgram contract (slurm.conf(5)):
// the program runs when the agent starts and then every interval, and is killed (its whole
// process group) when it runs past the limit, 60 s by default. Its exit status is the verdict:
// 0 ok, 1 warn, 2 critical, with the reason on the first line of its stdout (GCM's
// convention); anything else, and a program killed at the limit, is a warning. The verdict
// applies to every GPU of the node (GpuMonitor::SampleAndCheck): critical drains them all.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "agent/node/node_env.h"
#include "core/gpu_health.h"
#include "core/status.h"

namespace corral::agent {

struct HealthProgramResult {
  GpuHealth health = GpuHealth::kOk;
  std::string reason;   // the program's first stdout line, or why it failed
  bool killed = false;  // ran past the limit
};

// Runs `path` once through `programs` (no arguments, stdin /dev/null, in its own process
// group), waits at most `limit_ms`, then kills the group. An error only when it cannot be
// started at all.
Result<HealthProgramResult> RunHealthProgram(const std::string& path, int64_t limit_ms,
                                             const ProgramRunner& programs);
// The verdict of a run that ended as `outcome`.
HealthProgramResult HealthVerdict(const std::string& path, int64_t limit_ms,
                                  const ProgramOutcome& outcome);

// Runs the program on its own thread: at once, then every `interval_ms` on the env's steady
// clock. Thread-safe.
class HealthProgramRunner {
 public:
  HealthProgramRunner(std::string path, int64_t interval_ms, int64_t limit_ms, NodeEnv env);
  ~HealthProgramRunner();  // stops the thread (a run under way is waited for, up to its limit)
  HealthProgramRunner(const HealthProgramRunner&) = delete;
  HealthProgramRunner& operator=(const HealthProgramRunner&) = delete;
  // The last run's verdict; none before the first run ended.
  std::optional<HealthProgramResult> Last() const;

 private:
  void Loop();

  const std::string path_;
  const int64_t interval_ms_;
  const int64_t limit_ms_;
  const NodeEnv env_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::optional<HealthProgramResult> last_;
  std::thread thread_;
};

}  // namespace corral::agent
