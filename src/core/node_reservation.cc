#include "core/node_reservation.h"

#include <algorithm>
#include <set>

#include "core/field_error.h"
#include "core/spec.h"

namespace corral {
namespace {

// An array of names, or one comma-separated string ("n1,n2").
Result<std::vector<std::string>> Names(const std::string& field, const Json& v) {
  std::vector<std::string> out;
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    size_t from = 0;
    while (from <= s.size()) {
      size_t comma = s.find(',', from);
      if (comma == std::string::npos) comma = s.size();
      out.push_back(s.substr(from, comma - from));
      from = comma + 1;
    }
  } else if (v.is_array()) {
    for (const Json& e : v) {
      if (!e.is_string()) return FieldError(field, v, "an array of names");
      out.push_back(e.get<std::string>());
    }
  } else {
    return FieldError(field, v, "an array of names or a comma-separated string");
  }
  for (const std::string& s : out) {
    if (s.empty() || s.size() > 200) return FieldError(field, v, "non-empty names");
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Result<TimeMs> Millis(const std::string& field, const Json& v) {
  if (!v.is_number_integer() || v.get<int64_t>() < 0) {
    return FieldError(field, v, "milliseconds since the epoch (a non-negative integer)");
  }
  return v.get<int64_t>();
}

}  // namespace

Json ToJson(const NodeReservationSpec& r) {
  return Json{{"name", r.name},
              {"nodes", r.nodes},
              {"start_ms", r.start_ms},
              {"end_ms", r.end_ms},
              {"maintenance", r.maintenance},
              {"users", r.users},
              {"queues", r.queues}};
}

Result<NodeReservationSpec> NodeReservationFromJson(const Json& j) {
  if (!j.is_object() || !j.contains("name")) {
    return InvalidArgument("reservation: not a reservation document");
  }
  try {
    NodeReservationSpec r;
    r.name = j.at("name").get<std::string>();
    r.nodes = j.value("nodes", std::vector<std::string>{});
    r.start_ms = j.value("start_ms", TimeMs{0});
    r.end_ms = j.value("end_ms", TimeMs{0});
    r.maintenance = j.value("maintenance", false);
    r.users = j.value("users", std::vector<std::string>{});
    r.queues = j.value("queues", std::vector<std::string>{});
    return r;
  } catch (const Json::exception& e) {
    return InvalidArgument(std::string("reservation: ") + e.what());
  }
}

Result<NodeReservationSpec> ParseNodeReservation(const Json& body) {
  if (!body.is_object()) return InvalidArgument("reservation: want a JSON object");
  static const std::set<std::string> kKnown = {"name",     "nodes", "start_ms", "end_ms",
                                               "duration", "users", "queues",   "maintenance"};
  for (auto it = body.begin(); it != body.end(); ++it) {
    if (!kKnown.count(it.key())) {
      return InvalidArgument(
          "unknown field '" + it.key() +
          "'; known fields: name, nodes, start_ms, end_ms, duration, users, queues, maintenance");
    }
  }
  NodeReservationSpec r;
  auto name = body.find("name");
  if (name == body.end() || !name->is_string() || !IsGoodName(name->get<std::string>())) {
    return FieldError("name", name == body.end() ? Json() : *name,
                      "1-64 letters, digits, '-', '_' or '.'");
  }
  r.name = name->get<std::string>();
  auto nodes = body.find("nodes");
  if (nodes == body.end()) return InvalidArgument("field 'nodes': missing; want node names");
  auto ns = Names("nodes", *nodes);
  if (!ns.ok()) return ns.status();
  if (ns->empty()) return FieldError("nodes", *nodes, "at least one node");
  r.nodes = std::move(*ns);
  auto start = body.find("start_ms");
  if (start == body.end()) return InvalidArgument("field 'start_ms': missing");
  auto s = Millis("start_ms", *start);
  if (!s.ok()) return s.status();
  r.start_ms = *s;
  auto end = body.find("end_ms");
  auto duration = body.find("duration");
  if ((end == body.end()) == (duration == body.end())) {
    return InvalidArgument("fields 'end_ms' and 'duration': want exactly one of them");
  }
  if (end != body.end()) {
    auto e = Millis("end_ms", *end);
    if (!e.ok()) return e.status();
    if (*e <= r.start_ms) {
      return FieldError("end_ms", *end,
                        "a time after start_ms (" + std::to_string(r.start_ms) + ")");
    }
    r.end_ms = *e;
  } else {
    if (!duration->is_string()) return FieldError("duration", *duration, "a duration such as 2h");
    auto d = ParseDuration("duration", duration->get<std::string>());
    if (!d.ok()) return d.status();
    if (*d <= 0) return FieldError("duration", *duration, "a positive duration");
    r.end_ms = r.start_ms + *d;
  }
  if (auto m = body.find("maintenance"); m != body.end()) {
    if (!m->is_boolean()) return FieldError("maintenance", *m, "true or false");
    r.maintenance = m->get<bool>();
  }
  for (const char* field : {"users", "queues"}) {
    auto it = body.find(field);
    if (it == body.end()) continue;
    auto v = Names(field, *it);
    if (!v.ok()) return v.status();
    (std::string(field) == "users" ? r.users : r.queues) = std::move(*v);
  }
  if (r.maintenance && (!r.users.empty() || !r.queues.empty())) {
    return InvalidArgument("field 'users'/'queues': a maintenance window takes no jobs");
  }
  return r;
}

}  // namespace corral
