// Quality-of-service classes: who may ask for which priorities, and whether their jobs may
// displace other people's runs by priority. Admins define them and assign them to users and
// queues; the head checks every submission against the class that applies (QosFor).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/codec.h"
#include "core/status.h"

namespace corral {

constexpr int32_t kMinJobPriority = -1'000'000;
constexpr int32_t kMaxJobPriority = 1'000'000;

struct QosClass {
  std::string name;
  int32_t min_priority = kMinJobPriority;  // the lowest priority its jobs may ask for
  int32_t max_priority = 0;                // the highest
  // Its jobs may preempt lower-priority runs (of any user) by priority. Without it, priority
  // only orders the queue; quota reclaim and attained-service preemption are unaffected.
  bool preempt = true;
  std::vector<std::string> users;   // assigned to these users (a user is in one class at most)
  std::vector<std::string> queues;  // and to jobs of these queues and their sub-queues
  bool operator==(const QosClass&) const = default;
};

// The class named "default", if any, applies to whoever no other class names.
constexpr char kDefaultQos[] = "default";

Json ToJson(const QosClass& q);
// The stored form (trusted: the head wrote it).
Result<QosClass> QosFromJson(const Json& j);
// A class as an admin sends it (PUT /v1/qos/NAME): every field checked, the wrong one named.
Result<QosClass> ParseQosClass(const std::string& name, const Json& body);
// Whether `q` may join `classes` (replacing its own old version): no user in two classes,
// no queue in two classes.
Status CheckQosAssignments(const std::map<std::string, QosClass>& classes, const QosClass& q);

// The class that applies to a job of `user` in `queue`: the user's own, else that of the
// queue or its nearest parent that has one, else "default"; null when none does.
const QosClass* QosFor(const std::map<std::string, QosClass>& classes, const std::string& user,
                       const std::string& queue);

}  // namespace corral
