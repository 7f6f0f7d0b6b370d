// What a service's page shows of its recent history (GET /v1/services[/NAME], docs/services.md):
// the latest of the changes the head's shell keeps for its event stream (HeadConfig::
// event_buffer) that concern the service (its scaling, settings, updates and rollbacks, and its
// replicas' submissions, readiness, draining, stops and ends), each as one line. An observation
// of that buffer, not of the store: a service quiet for longer than the buffer lists nothing,
// and a replica submitted before the buffer's oldest change is not recognised as one.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/time.h"
#include "head/change.h"

namespace corral::head {

struct ServiceEvent {
  uint64_t rev = 0;
  TimeMs at = 0;
  std::string type;   // the change's type (ChangeName): service_scaled, job_ended, ...
  JobId job = 0;      // the replica it concerns; 0: the service itself
  std::string cause;  // service_scaled: who scaled (ScaleCauseName); else empty
  std::string text;   // what happened, in words
};

struct ServiceHistory {
  std::vector<ServiceEvent> events;        // oldest first: the latest `max` kept
  std::optional<ServiceEvent> last_scale;  // the latest service_scaled kept, however old
};

// The histories of the services `names` from `recent` (oldest first), at most `max` events each
// (0: only last_scale). A name with nothing kept has an empty history.
std::map<std::string, ServiceHistory> ServiceHistories(const std::deque<Change>& recent,
                                                       const std::set<std::string>& names,
                                                       size_t max);

}  // namespace corral::head
