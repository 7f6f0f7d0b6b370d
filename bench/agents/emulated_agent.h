// EmulatedAgent: the bookkeeping of one agent emulated by corral_agents (bench/agents): what
// it registers with, what it reports in its next sync, and what a sync answer makes it start,
// stop or forget. It speaks the real protocol (core/agent_protocol.h) but forks nothing: a
// run "runs" for a fixed time and then exits 0.
//
// Pure: no I/O, no threads, no clock (time is an argument). The driver owns one per emulated
// agent and calls it from one thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "core/agent_protocol.h"

namespace corral::bench {

class EmulatedAgent {
 public:
  // `runtime_ms` 0: a started run is reported started and exited 0 in the same report.
  EmulatedAgent(std::string name, int32_t gpus, int64_t runtime_ms);

  const std::string& name() const { return name_; }
  bool registered() const { return registered_; }

  RegisterRequest MakeRegisterRequest() const;
  void OnRegistered(const RegisterResponse& r);

  // The next sync. Runs whose time is up are marked exited first; while an exit is
  // unreported the call asks not to be held (wait_ms 0), as the real agent does.
  SyncRequest MakeSync(int64_t wait_ms, TimeMs now);

  // Applies a sync answer: starts the runs it orders, stops those it marks stop, forgets
  // those it no longer lists. An answer older than one already applied (two syncs crossed) is
  // ignored. Returns how many runs it started.
  int Apply(const SyncResponse& r, TimeMs now);

  // Earliest end of a running run (0: none runs); marks the runs due by `now` exited.
  TimeMs NextExitAt() const;
  void FinishDue(TimeMs now);

  bool unreported() const { return unreported_; }   // an exit the head has not heard of
  int64_t forgotten() const { return forgotten_; }  // runs over and released by the head
  size_t live() const { return runs_.size(); }

 private:
  using Key = std::pair<std::string, int32_t>;  // run id, replica

  std::string name_;
  int32_t gpus_;
  int64_t runtime_ms_;
  bool registered_ = false;
  uint64_t agent_epoch_ = 0;
  uint64_t applied_epoch_ = 0;
  uint64_t applied_version_ = 0;
  bool unreported_ = false;
  int64_t forgotten_ = 0;
  std::map<Key, RunReport> runs_;  // alive, or exited and not yet released
  std::map<Key, TimeMs> ends_at_;  // running runs: when they exit
};

}  // namespace corral::bench
