// What a queue admin may act on, for the head core's checks of jobs and QoS classes.
#pragma once

#include <string>

#include "core/identity.h"

namespace corral::head {

// Whether a queue admin's queues include `queue` (or one above it).
inline bool ManagesQueue(const Caller& by, const std::string& queue) {
  for (const std::string& q : by.queues) {
    if (queue == q || queue.rfind(q + "/", 0) == 0) return true;
  }
  return false;
}

}  // namespace corral::head
