// Services (docs/services.md): long-running inference endpoints. A service is a job template
// kept alive as `desired` replicas, each an ordinary job the head's core submits and owns
// (JobSpec::service names the service), so that scheduling, agents, logs and exec work for
// replicas unchanged. The head proxies http(s)://HEAD/v/NAME/... to its ready replicas.
#pragma once

#include <string>

#include "core/codec.h"
#include "core/job.h"
#include "core/status.h"
#include "core/time.h"

namespace corral {

struct ServiceSpec {
  std::string name;  // [a-z0-9-], 1..40, starts with a letter: it is a URL path segment
  std::string owner;
  JobSpec job;  // the replica template: command, env, resources, queue
  int32_t min_replicas = 1;
  int32_t max_replicas = 1;  // >= min_replicas
  // The port every replica listens on (PORT and CORRAL_PORT in its environment); 0: the head
  // picks a free port per replica on its node (the run's master port).
  int32_t port = 0;
  std::string health_path = "/";  // readiness and liveness: GET answers 2xx
  bool any_user = false;          // any authenticated user may call it; else owner and admins
  bool operator==(const ServiceSpec&) const = default;
};

struct Service {
  ServiceSpec spec;
  int32_t desired = 1;  // replicas to keep alive, within [min, max]
  int32_t version = 1;  // bumped by each update of the spec
  TimeMs created_at = 0;
  bool operator==(const Service&) const = default;
};

Json ToJson(const Service& s);
Result<Service> ServiceFromJson(const Json& j);  // the stored form (the head wrote it)

// A service as a user sends it (POST /v1/services): {"name", "min_replicas", "max_replicas"
// or "replicas", "port", "health", "any_user", "spec": a job spec as for submit}. Every field
// checked, the wrong one named; the owner is the caller's to set.
Result<ServiceSpec> ParseServiceSpec(const Json& body);

// A replica's job spec: the template, named for its service, with PORT and CORRAL_PORT when
// the port is fixed, never restarted by itself (the service replaces it), preemptible only
// above the minimum.
JobSpec ReplicaSpec(const ServiceSpec& s, bool above_minimum);

}  // namespace corral
