// EmulatedAgent: the bookkeeping of one agent emulated by corral_agents (bench/agents): what
// it registers with, what it reports in its next sync, and what a sync answer makes it start,
// stop or forget. It speaks the real protocol (core/agent_protocol.h) but forks nothing: a
// run "runs" for a fixed time and then exits 0.
//
// Pure: no I/O, no threads, no clock (time is an argument). The driver owns one per emulated
// agent and calls it from one thread.
#pragma once

#include <utility>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/agent_protocol.h"
#include "core/desired_runs.h"

namespace corral::bench {

class EmulatedAgent {
 public:
  // `runtime_ms` 0: a started run is reported started and exited 0 in the same report.
  // `deltas`: ask the head for delta answers, as the real agent does (false: full answers, as
  // older agents get).
  // `usage_every_ms` > 0: each running run has a usage sample (core/usage_series.h) that often,
  // carried by the next sync, as the real agent's recorder does.
  EmulatedAgent(std::string name, int32_t gpus, int64_t runtime_ms, bool deltas = true,
                int64_t usage_every_ms = 0);

  const std::string& name() const { return name_; }
  bool registered() const { return registered_; }

  RegisterRequest MakeRegisterRequest() const;
  void OnRegistered(const RegisterResponse& r);

  // The next sync. Runs whose time is up are marked exited first; while an exit is
  // unreported the call asks not to be held (wait_ms 0), as the real agent does.
  SyncRequest MakeSync(int64_t wait_ms, TimeMs now);

  // Applies a sync answer (full or delta): starts the runs it orders, stops those it marks
  // stop, forgets those no longer desired. An answer DesiredRuns does not take (two syncs
  // crossed) is ignored. Returns how many runs it started.
  int Apply(SyncResponse r, TimeMs now);

  // Earliest end of a running run (0: none runs); marks the runs due by `now` exited.
  TimeMs NextExitAt() const;
  void FinishDue(TimeMs now);

  bool unreported() const { return unreported_; }   // an exit the head has not heard of
  int64_t forgotten() const { return forgotten_; }  // runs over and released by the head
  size_t live() const { return runs_.size(); }

 private:
  using Key = std::pair<std::string, int32_t>;  // run id, replica

  // Follows one desired order (starts or stops its run) and marks it desired. Returns 1 when it
  // started the run.
  int Follow(const RunOrder& o, TimeMs now, std::set<Key>* desired);
  // The samples of `key`'s run due by `now` (up to its end), numbered on from the last.
  std::vector<UsagePoint> SamplesDue(const Key& key, const RunReport& report, TimeMs now);

  std::string name_;
  int32_t gpus_;
  int64_t runtime_ms_;
  bool deltas_;
  int64_t usage_every_ms_;
  bool registered_ = false;
  uint64_t agent_epoch_ = 0;
  DesiredRuns desired_;
  bool unreported_ = false;
  int64_t forgotten_ = 0;
  std::map<Key, RunReport> runs_;   // alive, or exited and not yet released
  std::map<Key, TimeMs> ends_at_;   // running runs: when they exit
  std::map<Key, int64_t> samples_;  // runs sampled: the last sample's number
};

}  // namespace corral::bench
