// Fakes of the node environment (node_env.h) for the agent's tests, in a test-only library:
// a clock the test moves (waits on it end when it passes their deadline, not when real time
// does), a program runner that answers from a script, and files held in memory. Each is
// thread-safe, as the parts under test call them from their own threads.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "agent/node/node_env.h"

namespace corral::agent::testing {

// One virtual time for both clocks (the wall clock is the steady one plus nothing: tests read
// durations, not dates). A wait registers its deadline; Advance wakes the waits it passes.
class FakeNodeClock final : public NodeClock {
 public:
  explicit FakeNodeClock(TimeMs start = 1'000'000);
  const Clock& Wall() const override { return view_; }
  const Clock& Steady() const override { return view_; }
  bool WaitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, DurationMs ms,
               const std::function<bool()>& done) const override;

  TimeMs Now() const;
  void Advance(DurationMs d);
  // Blocks until `n` waits have deadlines still ahead (threads at rest until the clock moves),
  // or 10 s of real time pass; returns whether they did. The step between Advance and an
  // assertion: the parts have done all they do before the next deadline.
  bool BlockUntilWaiting(int n) const;

 private:
  class View final : public Clock {
   public:
    explicit View(const FakeNodeClock* c) : clock_(c) {}
    TimeMs Now() const override { return clock_->Now(); }

   private:
    const FakeNodeClock* clock_;
  };
  int WaitingLocked() const;  // REQUIRES: mu_ held

  View view_{this};
  mutable std::mutex mu_;
  mutable std::condition_variable moved_;    // time moved, or a wait began or ended
  TimeMs now_;                               // GUARDED_BY(mu_)
  mutable std::multiset<TimeMs> deadlines_;  // GUARDED_BY(mu_): of the waits under way
};

// Answers each Run with the next scripted outcome (the last one again when the script runs
// out; an exit 0 with no output when there is none), and records every argv it was given.
class FakeProgramRunner final : public ProgramRunner {
 public:
  Result<ProgramOutcome> Run(const std::vector<std::string>& argv,
                             DurationMs limit_ms) const override;
  void Answer(ProgramOutcome outcome);
  int Runs() const;
  std::vector<std::string> LastArgv() const;

 private:
  mutable std::mutex mu_;
  mutable std::deque<ProgramOutcome> script_;    // GUARDED_BY(mu_): answers not yet given
  mutable ProgramOutcome last_{.exited = true};  // GUARDED_BY(mu_): the answer once it runs out
  mutable std::vector<std::vector<std::string>> runs_;  // GUARDED_BY(mu_)
};

// Files as a map from path to content; directories are only remembered as made.
class MemoryFileSystem final : public FileSystem {
 public:
  Result<std::string> Read(const std::string& path) const override;
  Status Replace(const std::string& path, const std::string& scratch,
                 const std::string& text) override;
  Status Remove(const std::string& path) override;
  Status MakeDirs(const std::string& dir) override;
  std::map<std::string, std::string> Files() const;
  int Writes() const;  // Replace calls that succeeded

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::string> files_;  // GUARDED_BY(mu_)
  int writes_ = 0;                            // GUARDED_BY(mu_)
};

// All three fakes; `env()` is what a part under test is given.
struct FakeNodeEnv {
  FakeNodeClock clock;
  FakeProgramRunner programs;
  MemoryFileSystem files;
  NodeEnv env() { return NodeEnv{clock, programs, files}; }
};

}  // namespace corral::agent::testing
