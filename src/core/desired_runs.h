// An agent's copy of its node's desired runs (DESIGN §7), kept current from the head's sync
// answers: a full answer replaces it, a delta answer replaces the orders of the jobs it names.
// The real agent and the emulated ones of bench/agents both keep one.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "core/agent_protocol.h"

namespace corral {

class DesiredRuns {
 public:
  // Applies a head's answer (not a reregister one). A full answer is taken unless it is older
  // than this copy within the same epoch (two syncs crossed). A delta is taken only onto the
  // very version it was computed from, in the same epoch. Returns whether it was taken; an
  // answer not taken leaves the copy as it was, and the next sync asks from its version again.
  bool Apply(SyncResponse answer);

  // Every desired run, in the head's order (by job, then as the head listed them), as one full
  // answer.
  SyncResponse Full() const;

  const std::map<JobId, std::vector<RunOrder>>& by_job() const { return by_job_; }
  uint64_t version() const { return version_; }
  // Forgets everything (the agent registers again): the next answer must be a full one.
  void Reset() { *this = DesiredRuns(); }

 private:
  uint64_t epoch_ = 0;
  uint64_t version_ = 0;
  std::map<JobId, std::vector<RunOrder>> by_job_;
};

}  // namespace corral
