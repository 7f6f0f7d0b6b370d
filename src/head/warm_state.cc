#include "head/warm_state.h"

#include <limits>

#include "head/change_tail.h"
#include "head/durability.h"

namespace corral::head {

Result<WarmState> WarmState::Load(store::Store& store) {
  auto loaded = store.Load();
  if (!loaded.ok()) return loaded.status();
  store::ChangeRecord last =
      loaded->changes.empty() ? store::ChangeRecord{} : loaded->changes.back();
  auto decoded = DecodeStoredState(std::move(*loaded));
  if (!decoded.ok()) return decoded.status();
  WarmState warm;
  warm.state_ = std::move(decoded->snapshot);
  for (const Change& c : decoded->tail) ApplyChange(warm.state_, c);
  warm.last_ = std::move(last);
  return warm;
}

Status WarmState::TakeOver(store::Store& store) { return CatchUp(store); }

Status WarmState::CatchUp(store::Store& store) {
  constexpr int32_t kBatch = 5000;
  for (;;) {
    // From the last change applied, which the store must still hold as it was applied: a
    // change a leader's server showed but never replicated (its commit's wait for the
    // standbys cut short) is gone after a database failover, and the new leader writes other
    // changes under its revision and the next. Applying those on top would fork this copy.
    const bool check_last = last_.revision != 0 && last_.revision == state_.revision;
    auto recs = store.ReadChanges(check_last ? last_.revision - 1 : state_.revision, kBatch);
    if (!recs.ok()) return recs.status();
    size_t next = 0;
    if (check_last) {
      if (recs->empty() || recs->front() != last_) {
        CORRAL_RETURN_IF_ERROR(Reload(store));
        continue;
      }
      next = 1;
    }
    if (next == recs->size()) return Status::Ok();
    if ((*recs)[next].revision != state_.revision + 1) {
      // The log no longer reaches back to this copy (truncated), or this copy has no record
      // of its last change (loaded from a snapshot): load again.
      CORRAL_RETURN_IF_ERROR(Reload(store));
      continue;
    }
    for (size_t i = next; i < recs->size(); ++i) {
      Result<Change> c = DecodeChangeRecord((*recs)[i]);
      if (!c.ok()) return c.status();
      ApplyChange(state_, *c);
      last_ = (*recs)[i];
    }
    if (recs->size() < static_cast<size_t>(kBatch)) return Status::Ok();
  }
}

Status WarmState::Reload(store::Store& store) {
  auto again = Load(store);
  if (!again.ok()) return again.status();
  state_ = std::move(again->state_);
  last_ = std::move(again->last_);
  ++reloads_;
  return Status::Ok();
}

}  // namespace corral::head
