#include "head/warm_state.h"

#include <limits>

#include "head/change.h"
#include "head/durability.h"

namespace corral::head {

Result<WarmState> WarmState::Load(store::Store& store) {
  auto loaded = store.Load();
  if (!loaded.ok()) return loaded.status();
  auto decoded = DecodeStoredState(std::move(*loaded));
  if (!decoded.ok()) return decoded.status();
  WarmState warm;
  warm.state_ = std::move(decoded->snapshot);
  for (const Change& c : decoded->tail) ApplyChange(warm.state_, c);
  return warm;
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
      ++reloads_;
      continue;
    }
    for (const store::ChangeRecord& rec : *recs) {
      auto c = ChangeFromJson(Json::parse(rec.doc, nullptr, false));
      if (!c.ok()) return c.status();
      ApplyChange(state_, *c);
    }
    if (recs->size() < static_cast<size_t>(kBatch)) return Status::Ok();
  }
}

}  // namespace corral::head
