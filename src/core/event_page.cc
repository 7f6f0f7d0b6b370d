#include "core/event_page.h"

#include <stdexcept>

namespace corral {
namespace {

// JSON read back from text holds a revision as unsigned; one built in memory may hold it signed.
bool IsRevision(const Json& j) {
  return j.is_number_unsigned() || (j.is_number_integer() && j.get<int64_t>() >= 0);
}

}  // namespace

Json ToJson(const EventPage& page) {
  return Json{{"events", page.events}, {"revision", page.revision}, {"reset", page.reset}};
}

Result<EventPage> EventPageFromJson(const Json& j) {
  if (!j.is_object()) return InvalidArgument("events answer: not an object");
  EventPage page;
  auto revision = j.find("revision");
  if (revision == j.end() || !IsRevision(*revision)) {
    return InvalidArgument("revision: missing or not a revision number");
  }
  page.revision = revision->get<uint64_t>();
  auto reset = j.find("reset");
  if (reset != j.end()) {
    if (!reset->is_boolean()) return InvalidArgument("reset: not true or false");
    page.reset = reset->get<bool>();
  }
  auto events = j.find("events");
  if (events == j.end() || !events->is_array()) {
    return InvalidArgument("events: missing or not a list");
  }
  for (size_t i = 0; i < events->size(); ++i) {
    const Json& e = (*events)[i];
    auto rev = e.is_object() ? e.find("rev") : e.end();
    if (!e.is_object() || rev == e.end() || !IsRevision(*rev)) {
      return InvalidArgument("events[" + std::to_string(i) + "]: not an event with a \"rev\"");
    }
    page.events.push_back(e);
  }
  return page;
}

uint64_t EventRevision(const Json& event) { return event.value("rev", uint64_t{0}); }

TimeMs EventTime(const Json& event) { return event.value("at", TimeMs{0}); }

std::string EventType(const Json& event) { return event.value("type", std::string()); }

std::string EventKind(const Json& event) { return event.value("kind", std::string()); }

std::string EventKey(const Json& event) {
  auto key = event.find("key");
  if (key == event.end()) return "";
  return key->is_string() ? key->get<std::string>() : key->dump();
}

}  // namespace corral
