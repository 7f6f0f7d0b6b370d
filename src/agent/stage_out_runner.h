// The stage-outs under way on this node (core/stage_out.h): each replica that declares one gets
// a thread of its own, once its processes have ended, that copies its directory back as the
// job's owner (stage_out_copy.h). The supervisor reports the replica as running until its
// stage-out is over, so that the head keeps its GPUs until then, and then reports its exit
// with the result. Owned by the Supervisor, used under its lock; the threads touch only their
// own task.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "agent/launch/launcher.h"
#include "core/agent_protocol.h"

namespace corral::agent {

class StageOutRunner {
 public:
  // as_owner: copy as each run's owner (an agent that runs jobs as their owners); else as the
  // agent's own user.
  StageOutRunner(bool as_owner, std::string node);
  StageOutRunner(const StageOutRunner&) = delete;
  StageOutRunner& operator=(const StageOutRunner&) = delete;

  // Begins the stage-out of the run's replica (once per key).
  void Start(const RunKey& key, const RunOrder& order);
  bool Started(const RunKey& key) const { return tasks_.count(key) > 0; }
  // Its result once it is over; nullopt while it goes on (or was never started).
  std::optional<StageOutResult> Result(const RunKey& key) const;
  // How far it is while it copies: "staging out to /shared/out on node1: 41% (1.2 GiB of
  // 2.9 GiB)", and the percent alone (-1: none under way).
  std::string Note(const RunKey& key) const;
  int32_t Percent(const RunKey& key) const;
  // The run is released: its task is forgotten (a thread still copying keeps its own).
  void Forget(const RunKey& key) { tasks_.erase(key); }

 private:
  struct Task;
  const bool as_owner_;
  const std::string node_;
  std::map<RunKey, std::shared_ptr<Task>> tasks_;
};

// Whether a replica's stage-out is to run: it declares one, its processes were started and
// have ended.
bool WantsStageOut(const RunOrder& order, int32_t pgid, bool running, const std::string& error);

}  // namespace corral::agent
