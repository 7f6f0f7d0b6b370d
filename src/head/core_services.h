// The head's bookkeeping of services (core/service.h): which jobs are each service's live
// replicas and when its replicas last crashed. Derived from the cluster state alone, like the
// indexes of core_indexes.h: Apply follows each change, Rebuild recomputes it on recovery, and
// a core kept live and one recovered must hold the same. The decisions (start a replica,
// stop one, back off) are HeadCore's (core_services.cc); the services themselves are durable
// in ClusterState::services.
#pragma once

#include <utility>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "head/cluster_state.h"

namespace corral::head {

class Services {
 public:
  void Apply(const ClusterState& s, const Change& c);
  void Rebuild(const ClusterState& s, TimeMs now);

  // A service's replicas not yet ended (pending or with a live run); empty for none.
  const std::set<JobId>& Live(const std::string& service) const;
  // When its latest replicas that failed ended (ascending, the last kKeptFailures): a
  // crash loop's backoff is counted from them.
  const std::vector<TimeMs>& FailedAt(const std::string& service) const;
  // How many of its replicas of `version` failed at or after `since` (of the latest kept).
  int32_t FailuresSince(const std::string& service, int32_t version, TimeMs since) const;
  Json Summary() const;  // for HeadCore::DerivedSummary
  bool operator==(const Services&) const = default;

  static constexpr size_t kKeptFailures = 16;

 private:
  void Ended(const ClusterState& s, const Job& job);
  std::map<std::string, std::set<JobId>> live_;           // no empty sets
  std::map<std::string, std::vector<TimeMs>> failed_at_;  // no empty vectors
  // The same failures with the version each replica ran, in the order they ended.
  std::map<std::string, std::vector<std::pair<TimeMs, int32_t>>> failed_versions_;
};

// A crash loop's backoff: after the n-th failure within kCrashWindow, the next replica starts
// min(1 s * 2^(n-1), 60 s) after the last one (what Kubernetes' CrashLoopBackOff does, faster).
constexpr DurationMs kCrashWindow = 5 * kMinute;
DurationMs CrashBackoff(const std::vector<TimeMs>& failed_at, TimeMs now, int32_t* recent);

}  // namespace corral::head

namespace corral::head {

// A replica as `corral services show` and the head's proxy see it.
struct ServiceReplica {
  JobId job = 0;
  JobState state = JobState::kPending;
  std::string run_id;  // "JOB.ATTEMPT" of its current run; "" while pending
  std::string node;
  std::string host;  // the node's advertised address, without the port
  int32_t port = 0;  // where the replica listens on it (0 while pending)
  bool running = false;
  int32_t version = 1;    // of the service's template it runs
  bool ready = false;     // it answered its readiness check once
  bool draining = false;  // leaving: no new requests
};
struct ServiceView {
  Service service;
  std::vector<ServiceReplica> replicas;  // live ones, by job id
  std::string note;                      // why it has fewer replicas than desired, if so
};

}  // namespace corral::head
