// A standby head's copy of the leader's state (DESIGN §7, HA): loaded once from the store,
// then kept current by applying the changes the leader commits, in revision order, so that
// taking over needs no full reload (Head::Open with `warm`). Reads the store; owns nothing
// else; one thread.
#pragma once

#include "core/status.h"
#include "head/cluster_state.h"
#include "store/store.h"

namespace corral::head {

class WarmState {
 public:
  static Result<WarmState> Load(store::Store& store);
  // Applies every change committed since. Where the log no longer reaches back to this
  // copy's revision (the leader truncated it), loads again.
  Status CatchUp(store::Store& store);
  // Once this head leads (its term committed): checks that the store still holds the last
  // change this copy applied, then catches up. A standby can have applied a change the old
  // leader's server showed but never replicated (its commit's wait for the standbys was cut
  // short); after a database failover the store lacks it, and this copy loads again.
  Status TakeOver(store::Store& store);

  uint64_t revision() const { return state_.revision; }
  const ClusterState& state() const { return state_; }
  ClusterState Take() && { return std::move(state_); }
  int reloads() const { return reloads_; }

 private:
  ClusterState state_;
  store::ChangeRecord last_;  // the last change applied, if state_ is at its revision
  int reloads_ = 0;
};

}  // namespace corral::head
