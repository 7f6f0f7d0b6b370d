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
  // Applies every change committed since, once it has checked that the store still holds the
  // last change this copy applied, byte for byte. A standby can have applied a change the old
  // leader's server showed but never replicated (its commit's wait for the standbys was cut
  // short); after a database failover the store lacks it, and the new leader's changes
  // reuse its revision: this copy then loads again, as it does where the log no longer
  // reaches back to its revision (the leader truncated it).
  Status CatchUp(store::Store& store);
  // Once this head leads (its term committed): the same, a last time.
  Status TakeOver(store::Store& store);

  uint64_t revision() const { return state_.revision; }
  const ClusterState& state() const { return state_; }
  ClusterState Take() && { return std::move(state_); }
  int reloads() const { return reloads_; }

 private:
  Status Reload(store::Store& store);
  ClusterState state_;
  store::ChangeRecord last_;  // the last change applied, if state_ is at its revision
  int reloads_ = 0;
};

}  // namespace corral::head
