#include "head/standby.h"

#include "head/warm_state.h"

namespace corral::head {
namespace {

// Says each problem once, not at every poll.
class TroubleOnce {
 public:
  explicit TroubleOnce(const StandbyHooks& hooks) : hooks_(hooks) {}
  void Say(const Status& st) {
    if (st.ok() || st.ToString() == last_) return;
    last_ = st.ToString();
    if (hooks_.trouble) hooks_.trouble(st);
  }

 private:
  const StandbyHooks& hooks_;
  std::string last_;
};

// Whether this head now leads: a try for the lock, its refusal said once.
bool TakesTheLead(store::Store& store, TroubleOnce& trouble) {
  auto term = store.TryLead();
  if (term.ok()) return term->has_value();
  trouble.Say(term.status());
  return false;
}

}  // namespace

Result<std::optional<ClusterState>> StandByUntilLeader(store::Store& store,
                                                       const StandbyHooks& hooks) {
  auto warm = WarmState::Load(store);
  if (!warm.ok()) return warm.status();
  TroubleOnce trouble(hooks);
  bool said = false;
  while (!TakesTheLead(store, trouble)) {
    if (Status st = warm->CatchUp(store); !st.ok()) {
      trouble.Say(Status(st.code(), "standby cannot follow the store: " + st.message()));
    }
    auto leader = store.ReadMeta(store::kLeaderUrlKey);
    std::string leader_url = leader.ok() ? *leader : "";
    if (leader.ok() && hooks.leader) hooks.leader(leader_url);
    if (!said && hooks.standing_by) hooks.standing_by(warm->revision(), leader_url);
    said = true;
    if (hooks.wait_or_stop()) return std::optional<ClusterState>();
  }
  // The lock is ours and the term moved on (its commit replicated): the old leader can commit
  // nothing more, and what the store holds now is what survives.
  CORRAL_RETURN_IF_ERROR(warm->TakeOver(store));
  return std::optional<ClusterState>(std::move(*warm).Take());
}

}  // namespace corral::head
