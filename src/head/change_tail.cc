#include "head/change_tail.h"

#include <string>

namespace corral::head {

Result<Change> DecodeChangeRecord(const store::ChangeRecord& record) {
  Result<Change> c = ChangeFromJson(Json::parse(record.doc, nullptr, false));
  if (!c.ok()) {
    return Internal("change log revision " + std::to_string(record.revision) + ": " +
                    c.status().message());
  }
  if (c->revision != record.revision) {
    return Internal("change log revision " + std::to_string(record.revision) +
                    " holds the change of revision " + std::to_string(c->revision));
  }
  return c;
}

Result<std::vector<Change>> ReadChangeTail(store::Store& store, uint64_t after, int32_t limit,
                                           TailStart start) {
  auto records = store.ReadChanges(after, limit);
  if (!records.ok()) return records.status();
  std::vector<Change> out;
  out.reserve(records->size());
  uint64_t expected = after + 1;
  for (const store::ChangeRecord& record : *records) {
    const bool first_may_skip = out.empty() && start == TailStart::kAnyLater;
    if (record.revision != expected && !(first_may_skip && record.revision > expected)) {
      return Internal("change log has a gap: revision " + std::to_string(record.revision) +
                      " where " + std::to_string(expected) + " was next");
    }
    Result<Change> c = DecodeChangeRecord(record);
    if (!c.ok()) return c.status();
    out.push_back(std::move(*c));
    expected = record.revision + 1;
  }
  return out;
}

}  // namespace corral::head
