// Checks that a queue's quota fits its tree (DESIGN §6.2; sched/fair_share.h): a parent's
// quota is shared by its subtree and bounds its guarantee, so a sub-queue's quota may not
// exceed the quota of its nearest ancestor that has one (a parent without a quota, 0, is only
// a name and bounds nothing).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/node.h"
#include "core/status.h"

namespace corral {

// The ancestors of queue `name`, nearest first: "org/team/a" -> {"org/team", "org"}.
std::vector<std::string> QueueAncestors(const std::string& name);

// Would setting `q` (replacing any queue of its name in `queues`, the configured queues by
// name) leave every quota within its nearest ancestor's? Checks `q` against its ancestors
// and its sub-queues against it; the error names the field and the queue it conflicts with.
Status ValidateQuotaInTree(const QueueConfig& q, const std::map<std::string, QueueConfig>& queues);

}  // namespace corral
