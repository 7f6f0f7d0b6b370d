// Where a job's processes are, for the commands that reach into them through an agent: the
// output of a replica, a task or a step (`corral logs`), and a command in a replica (`corral
// exec`, core_sessions.cc). The API relays to the address found here and checks nothing itself.
#include <algorithm>

#include "head/head_core.h"

namespace corral::head {
namespace {

// The latest run that was placed: requeued jobs read the output of their last attempt.
const Run* LatestPlacedRun(const Job& job) {
  for (auto it = job.runs.rbegin(); it != job.runs.rend(); ++it) {
    if (!it->placement.empty()) return &*it;
  }
  return nullptr;
}

// How many tasks the query's process group has on its replica: the replica's, or the step's
// share of it.
Result<int32_t> TasksOnReplica(const Run& run, const LogQuery& q) {
  if (q.step < 0) return run.placement[q.replica].tasks;
  if (q.step >= static_cast<int32_t>(run.steps.size())) {
    return InvalidArgument("query 'step': the run has " + std::to_string(run.steps.size()) +
                           " step(s)");
  }
  const Step& s = run.steps[q.step];
  auto at = std::find(s.replicas.begin(), s.replicas.end(), q.replica);
  if (at == s.replicas.end()) {
    return InvalidArgument("query 'replica': step " + std::to_string(q.step) +
                           " does not run on replica " + std::to_string(q.replica));
  }
  return s.tasks[at - s.replicas.begin()];
}

}  // namespace

Result<const Node*> HeadCore::AgentNode(const std::string& name) const {
  auto node = state_.nodes.find(name);
  // A precondition, not "unavailable": clients take a 503 for a head without a leader and try
  // every head again for their failover window; this will not mend by retrying.
  if (node == state_.nodes.end() || node->second.address.empty()) {
    return FailedPrecondition("node " + name + " has no address to reach its agent at");
  }
  return &node->second;
}

Result<LogSource> HeadCore::LocateLogs(const Job& job, const LogQuery& q) const {
  LogSource out;
  out.job_state = job.state;
  const Run* run = LatestPlacedRun(job);
  if (run == nullptr) return out;
  if (q.replica < 0 || q.replica >= static_cast<int32_t>(run->placement.size())) {
    return InvalidArgument("query 'replica': the job has " + std::to_string(run->placement.size()) +
                           " replica(s)");
  }
  Result<int32_t> tasks = TasksOnReplica(*run, q);
  if (!tasks.ok()) return tasks.status();
  if (q.task < 0 || q.task >= std::max(1, *tasks)) {
    return InvalidArgument("query 'task': replica " + std::to_string(q.replica) + " has " +
                           std::to_string(std::max(1, *tasks)) + " task(s)");
  }
  out.node = run->placement[q.replica].node;
  Result<const Node*> node = AgentNode(out.node);
  if (!node.ok()) return node.status();
  out.address = (*node)->address;
  RunId id{job.id, run->attempt};
  out.run_id = q.step >= 0 ? StepRunId(id, q.step) : ToString(id);
  return out;
}

}  // namespace corral::head
