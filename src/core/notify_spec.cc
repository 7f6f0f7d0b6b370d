#include "core/notify_spec.h"

#include <cctype>

namespace corral {
namespace {

struct MailTypeName {
  const char* name;
  NotifyEvent event;
};
constexpr MailTypeName kMailTypes[] = {{"begin", NotifyEvent::kBegin},
                                       {"end", NotifyEvent::kEnd},
                                       {"fail", NotifyEvent::kFail},
                                       {"requeue", NotifyEvent::kRequeue},
                                       {"preempt", NotifyEvent::kPreempt}};
constexpr char kMailTypesWanted[] = "a list of BEGIN, END, FAIL, REQUEUE, PREEMPT, ALL or NONE";

std::string LowerMailType(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

uint32_t AllMailTypes() {
  uint32_t all = 0;
  for (const MailTypeName& t : kMailTypes) all |= static_cast<uint32_t>(t.event);
  return all;
}

}  // namespace

const char* NotifyEventName(NotifyEvent e) {
  for (const MailTypeName& t : kMailTypes) {
    if (t.event == e) return t.name;
  }
  return "unknown";
}

Result<uint32_t> ParseMailTypes(const std::string& field, const std::string& text) {
  uint32_t events = 0;
  bool none = false;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string word = LowerMailType(
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    start = comma == std::string::npos ? text.size() + 1 : comma + 1;
    if (word == "all") {
      events |= AllMailTypes();
      continue;
    }
    if (word == "none") {
      none = true;
      continue;
    }
    bool known = false;
    for (const MailTypeName& t : kMailTypes) {
      if (word == t.name) {
        events |= static_cast<uint32_t>(t.event);
        known = true;
      }
    }
    if (!known) {
      return InvalidArgument("field '" + field + "': got \"" + text + "\" (\"" + word +
                             "\" is not taken), want " + kMailTypesWanted);
    }
  }
  if (none && events != 0) {
    return InvalidArgument("field '" + field + "': got \"" + text +
                           "\": NONE cannot be combined with other types");
  }
  return events;
}

std::string MailTypesText(uint32_t events) {
  std::string out;
  for (const MailTypeName& t : kMailTypes) {
    if ((events & static_cast<uint32_t>(t.event)) == 0) continue;
    out += (out.empty() ? "" : ",") + std::string(t.name);
  }
  return out;
}

Status ValidateMailUser(const std::string& field, const std::string& text) {
  if (text.empty() || text.size() > 254) {
    return InvalidArgument("field '" + field + "': got \"" + text +
                           "\", want a mail address or user name of 1 to 254 characters");
  }
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (u <= ' ' || u == 0x7f || c == ',' || c == '<' || c == '>' || c == '"') {
      return InvalidArgument("field '" + field + "': got \"" + text +
                             "\", want one mail address (no spaces, commas, quotes or controls)");
    }
  }
  return Status::Ok();
}

}  // namespace corral
