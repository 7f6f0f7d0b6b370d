// One answer of the event stream (GET /v1/events, DESIGN §9, §11): the durable changes after
// a revision as the caller may see them, each with its revision, time, type, kind and key. The
// head builds it, the API encodes it, and the CLI reads its answers back into it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/codec.h"
#include "core/status.h"
#include "core/time.h"

namespace corral {

struct EventPage {
  // Each change as the head shows it to the caller (head/change.h: EventJson); its own fields
  // vary with its type, so it stays JSON. Read its envelope with the accessors below.
  std::vector<Json> events;
  uint64_t revision = 0;  // the last durable revision
  // The caller fell behind what the head keeps: list again and continue from `revision`.
  bool reset = false;
};

Json ToJson(const EventPage& page);  // {"events": [...], "revision": N, "reset": bool}
// An error names the field that is wrong; every event must be an object with a "rev".
Result<EventPage> EventPageFromJson(const Json& j);

// The envelope of one event of a page: its revision, time, change type ("run_placed"), kind of
// entity ("job", "node", ...) and that entity's key as text.
uint64_t EventRevision(const Json& event);
TimeMs EventTime(const Json& event);
std::string EventType(const Json& event);
std::string EventKind(const Json& event);
std::string EventKey(const Json& event);

}  // namespace corral
