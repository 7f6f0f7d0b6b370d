// A head on a shared store until it leads (DESIGN §7, HA): it keeps a warm copy of the leader's
// state (warm_state.h), tells the caller where the leader is, and tries for the lock at each
// poll. What it does between polls and how it reports are the caller's (StandbyHooks), so
// that the loop runs the same under a test's store and hooks. One thread.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "core/status.h"
#include "head/cluster_state.h"
#include "store/store.h"

namespace corral::head {

struct StandbyHooks {
  // The leader's URL as the store names it ("" unknown), at every poll.
  std::function<void(const std::string& leader_url)> leader;
  // Once, after the first poll: the warm copy's revision and the leader's URL.
  std::function<void(uint64_t revision, const std::string& leader_url)> standing_by;
  // A problem that does not end the wait (the store refused a try, the copy cannot follow),
  // said once until it changes.
  std::function<void(const Status&)> trouble;
  // Waits until the next poll; true: stop standing by (a stop signal).
  std::function<bool()> wait_or_stop;
};

// The warm state once this head leads (its term taken and the copy caught up with what the
// store holds then), or nullopt when a stop came first. An error: the store could not be read
// at all.
Result<std::optional<ClusterState>> StandByUntilLeader(store::Store& store,
                                                       const StandbyHooks& hooks);

}  // namespace corral::head
