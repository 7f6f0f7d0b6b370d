// A service's guaranteed replicas against its queue's quota (docs/services.md, "Serving before
// training"): the first min_replicas replicas are not preemptible, so nothing can take their
// GPUs back, not even a queue reclaiming its quota. They must therefore fit inside the
// quota they are guaranteed from, together with the other services' guaranteed replicas
// there, and within the queue's limit; else a team's guarantee would hold GPUs that another
// team's quota promises and can never reclaim.
#pragma once

#include <map>
#include <string>

#include "core/node.h"
#include "core/service.h"
#include "core/status.h"

namespace corral::head {

// The GPUs (in milli-GPUs) that `s`'s guaranteed replicas hold: min_replicas of its template.
int64_t GuaranteedGpuMilli(const ServiceSpec& s);

// Would `spec` (a new service, or `spec.name`'s new spec replacing its own) keep every
// service's guaranteed GPUs within the quota and the limit of each queue they count in: the
// service's queue and each ancestor ("a/b" counts in "a") that has a quota (> 0) or a limit
// (>= 0)? A queue with no quota on its path guarantees nothing and bounds only by its
// limits. `field` is the field the error names (the one the caller changed); services being
// removed count no longer.
Status CheckServiceGuarantee(const ServiceSpec& spec,
                             const std::map<std::string, Service>& services,
                             const std::map<std::string, QueueConfig>& queues,
                             const std::string& field);

// Would `q` (a queue's new settings) still hold the guaranteed GPUs of the services that count
// in it (its own and its descendants'), by the rule above? A quota or limit lowered below them
// is refused naming the field and the services: their replicas run and nothing may preempt
// them, so the quota would promise GPUs it cannot give back. Lower the services' min_replicas
// first.
Status CheckQueueKeepsGuarantees(const QueueConfig& q,
                                 const std::map<std::string, Service>& services);

}  // namespace corral::head
