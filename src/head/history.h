// The cluster's recorded history as `corral whatif` replays it (GET /v1/history): every job
// live at some time since `from` (still pending or running, or ended at or after it), as
// recorded, with the cluster's nodes and queues now and the scheduler settings a replay must
// share with the head. Jobs carry their spec without environment, command, working directory
// or container (a what-if needs only what scheduling sees), and no events or steps.
#pragma once

#include <vector>

#include "core/codec.h"
#include "core/job.h"
#include "core/node.h"
#include "core/status.h"
#include "sched/scheduler.h"

namespace corral::head {

struct History {
  TimeMs now = 0;
  TimeMs from = 0;
  sched::OrderPolicy policy = sched::OrderPolicy::kCorral;
  DurationMs min_runtime_before_preempt_ms = 0;
  DurationMs fair_share_half_life_ms = 0;
  std::vector<Job> jobs;  // ascending id
  std::vector<Node> nodes;
  std::vector<QueueConfig> queues;
};

// {"now", "from", "scheduler": {"policy", "min_runtime_before_preempt_ms",
// "fair_share_half_life_ms"}, "jobs": [...], "nodes": [...], "queues": [...]} (docs/api.md).
Json ToJson(const History& h);
// A malformed document is an error naming the field, not a crash.
Result<History> HistoryFromJson(const Json& j);

}  // namespace corral::head
