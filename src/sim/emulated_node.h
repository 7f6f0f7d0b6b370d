// One simulated node's agent, in process and on virtual time. It keeps its node's desired runs
// from the head core's sync answers (DesiredRuns, as the real agent does), "runs" them, and
// reports what it runs as the real agent's sync does. What a process does with its time (when
// it ends by itself, what a stop leaves of its work) is the simulator's; this class only keeps
// the agent's side of the protocol.
#pragma once

#include <utility>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/agent_protocol.h"
#include "core/desired_runs.h"

namespace corral::sim {

// What an answer made the agent do to one replica's process.
struct ProcessChange {
  // kGone: a process still running that the head no longer lists, killed.
  enum class Kind { kStarted, kStopOrdered, kGone };
  Kind kind = Kind::kStarted;
  JobId job = 0;
  int32_t attempt = 0;
  int32_t replica = 0;
  uint64_t process = 0;              // the process's number on this node: names it in Exit
  std::vector<DatasetRef> datasets;  // kStarted: what its order says it reads
};

class EmulatedNode {
 public:
  explicit EmulatedNode(RegisterRequest registration) : registration_(std::move(registration)) {}

  const std::string& name() const { return registration_.name; }
  const RegisterRequest& registration() const { return registration_; }
  bool up() const { return up_; }
  uint64_t desired_version() const { return desired_.version(); }

  // Registered (again): an empty node at the head's agent epoch.
  void Registered(uint64_t agent_epoch);
  // Takes a head's answer and reconciles: starts the replicas it should run and does not,
  // passes stop orders to running ones, forgets what the head no longer lists. Returns false
  // (nothing done) for an answer the copy cannot take: ask again from version 0.
  bool Apply(SyncResponse answer, TimeMs now, std::vector<ProcessChange>* changes);
  // A process ended; false if it is no longer there (killed, or the node failed since).
  bool Exit(uint64_t process, int32_t exit_code, TimeMs now);
  // The node fails: every process dies with it and the agent says nothing until Registered.
  void Fail();
  // The process waits for its datasets (`note` says which), or its data is in place and it
  // starts now. False if it is no longer there.
  bool Staging(uint64_t process, const std::string& note);
  bool Begin(uint64_t process, TimeMs now);
  // The digests its dataset cache holds, for its reports.
  void SetDatasets(std::vector<std::string> digests) { datasets_ = std::move(digests); }

  // The sync request: every process alive or exited and not yet forgotten.
  SyncRequest Report() const;

 private:
  struct Process {
    uint64_t number = 0;
    RunReport report;
    bool stopping = false;
  };

  RegisterRequest registration_;
  bool up_ = false;
  uint64_t agent_epoch_ = 0;
  DesiredRuns desired_;
  std::map<std::pair<std::string, int32_t>, Process> processes_;  // (run id, replica)
  uint64_t next_process_ = 1;
  std::vector<std::string> datasets_;
};

}  // namespace corral::sim
