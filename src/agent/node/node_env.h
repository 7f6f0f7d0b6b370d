// The node's OS as the agent's parts use it, passed in (LevelDB's `Env`): its clocks and the
// waits measured on them, programs run to completion, and files. The agent builds the real one
// once (`RealNodeEnv()`, in `Agent`'s constructor or its caller) and hands it to the parts that
// decide by time or touch these files; tests hand in fakes (`fake_node_env.h`), so that a part
// that waits an interval is tested by moving a clock, not by sleeping through it.
//
// What goes through it: the agent's lease, its retry backoff and its lease keeper's pace; the
// supervisor's grace periods and notebooks' idle time; the usage recorder's clock; the GPU
// monitor's check interval and its job mapping files; the health program, its interval and its
// limit; the head epoch file. What does not (it needs a real node, and its tests run real
// processes): the launcher and its monitors, cgroups, containers, exec sessions, the caches.
//
// Every implementation is thread-safe: the agent's threads share one.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/time.h"

namespace corral::agent {

// Time on the node: two clocks and a wait on the second.
class NodeClock {
 public:
  virtual ~NodeClock() = default;
  // Milliseconds since the epoch: the instants the head reads (exits, samples, activity).
  virtual const Clock& Wall() const = 0;
  // Milliseconds that never step back: leases, intervals and limits.
  virtual const Clock& Steady() const = 0;
  // Waits, with `lock` (on `cv`'s mutex) held on entry and on return, until `done()` or `ms`
  // have passed on Steady(). Returns done(). Whoever makes done() true notifies `cv`.
  virtual bool WaitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                       DurationMs ms, const std::function<bool()>& done) const = 0;
};

// How a program run to completion ended.
struct ProgramOutcome {
  bool killed = false;  // ran past its limit: its process group was killed
  bool exited = false;  // ended by exit(): `exit_code`; else by `signal` (or killed)
  int exit_code = 0;
  int signal = 0;
  std::string stdout_text;  // its first 64 KiB
};

// Starts programs and waits for them.
class ProgramRunner {
 public:
  virtual ~ProgramRunner() = default;
  // Runs `argv` (argv[0] a path) with stdin /dev/null and stdout captured, in a process group
  // of its own; waits at most `limit_ms`, then kills the group. Whatever the program leaves
  // behind in its group is killed when it ends. An error only when it cannot be started.
  virtual Result<ProgramOutcome> Run(const std::vector<std::string>& argv,
                                     DurationMs limit_ms) const = 0;
};

// The files the parts above keep: small, written whole.
class FileSystem {
 public:
  virtual ~FileSystem() = default;
  // The whole of `path`; kNotFound when it is missing.
  virtual Result<std::string> Read(const std::string& path) const = 0;
  // `text` as the whole of `path`, replaced at once: written to `scratch` (beside it), then
  // renamed over it, so that a reader sees the old content or the new, never a part.
  virtual Status Replace(const std::string& path, const std::string& scratch,
                         const std::string& text) = 0;
  virtual Status Remove(const std::string& path) = 0;   // Ok when already absent
  virtual Status MakeDirs(const std::string& dir) = 0;  // with its parents; Ok when there
};

// The environment itself: references to the three, which outlive every part given them.
struct NodeEnv {
  const NodeClock& clock;
  const ProgramRunner& programs;
  FileSystem& files;
};

// The machine's: the system and monotonic clocks, fork and exec, POSIX files. Its parts live
// for the whole process.
NodeEnv RealNodeEnv();

}  // namespace corral::agent
