#include "head/warm_state.h"

#include <limits>

#include "head/change.h"
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

Status WarmState::TakeOver(store::Store& store) {
  if (last_.revision != 0 && last_.revision == state_.revision) {
    auto held = store.ReadChanges(last_.revision - 1, 1);
    if (!held.ok()) return held.status();
    if (held->empty() || held->front() != last_) {
      auto again = Load(store);
      if (!again.ok()) return again.status();
      state_ = std::move(again->state_);
      last_ = std::move(again->last_);
      ++reloads_;
    }
  }
  return CatchUp(store);
}

Status WarmState::CatchUp(store::Store& store) {
  constexpr int32_t kBatch = 5000;
  for (;;) {
    auto recs = store.ReadChanges(state_.revision, kBatch);
    if (!recs.ok()) return recs.status();
    if (recs->empty()) return Status::Ok();
    if (recs->front().revision != state_.revision + 1) {
      auto again = Load(store);
      if (!again.ok()) return again.status();
      state_ = std::move(again->state_);
      last_ = std::move(again->last_);
      ++reloads_;
      continue;
    }
    for (const store::ChangeRecord& rec : *recs) {
      auto c = ChangeFromJson(Json::parse(rec.doc, nullptr, false));
      if (!c.ok()) return c.status();
      ApplyChange(state_, *c);
      last_ = rec;
    }
    if (recs->size() < static_cast<size_t>(kBatch)) return Status::Ok();
  }
}

}  // namespace corral::head
