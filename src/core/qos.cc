#include "core/qos.h"

#include <algorithm>
#include <set>

#include "core/field_error.h"

namespace corral {
namespace {

Result<std::vector<std::string>> Names(const std::string& field, const Json& v, bool queues) {
  if (!v.is_array()) return FieldError(field, v, "an array of names");
  std::vector<std::string> out;
  for (const Json& e : v) {
    if (!e.is_string() || e.get<std::string>().empty() || e.get<std::string>().size() > 200) {
      return FieldError(field, v, "an array of non-empty names");
    }
    std::string s = e.get<std::string>();
    if (queues && (s.front() == '/' || s.back() == '/')) {
      return FieldError(field, v, "queue names like 'default' or 'org/team'");
    }
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

Json ToJson(const QosClass& q) {
  return Json{{"name", q.name},
              {"min_priority", q.min_priority},
              {"max_priority", q.max_priority},
              {"preempt", q.preempt},
              {"users", q.users},
              {"queues", q.queues}};
}

Result<QosClass> QosFromJson(const Json& j) {
  if (!j.is_object() || !j.contains("name")) return InvalidArgument("qos: not a QoS document");
  try {
    QosClass q;
    q.name = j.at("name").get<std::string>();
    q.min_priority = j.value("min_priority", kMinJobPriority);
    q.max_priority = j.value("max_priority", 0);
    q.preempt = j.value("preempt", true);
    q.users = j.value("users", std::vector<std::string>{});
    q.queues = j.value("queues", std::vector<std::string>{});
    return q;
  } catch (const Json::exception& e) {
    return InvalidArgument(std::string("qos: ") + e.what());
  }
}

Result<QosClass> ParseQosClass(const std::string& name, const Json& body) {
  if (!IsGoodName(name)) {
    return InvalidArgument("field 'name': got '" + name +
                           "', want 1-64 letters, digits, '-', '_' or '.'");
  }
  if (!body.is_object()) return InvalidArgument("qos: want a JSON object");
  static const std::set<std::string> kKnown = {"name",    "min_priority", "max_priority",
                                               "preempt", "users",        "queues"};
  for (auto it = body.begin(); it != body.end(); ++it) {
    if (!kKnown.count(it.key())) {
      return InvalidArgument("unknown field '" + it.key() +
                             "'; known fields: min_priority, max_priority, preempt, users, queues");
    }
  }
  QosClass q;
  q.name = name;
  if (auto it = body.find("name"); it != body.end() && *it != Json(name)) {
    return FieldError("name", *it, "the name in the path, '" + name + "'");
  }
  for (const char* f : {"min_priority", "max_priority"}) {
    auto it = body.find(f);
    if (it == body.end()) continue;
    if (!it->is_number_integer() || it->get<int64_t>() < kMinJobPriority ||
        it->get<int64_t>() > kMaxJobPriority) {
      return FieldError(f, *it, "an integer from -1000000 to 1000000");
    }
    (std::string(f) == "min_priority" ? q.min_priority : q.max_priority) =
        static_cast<int32_t>(it->get<int64_t>());
  }
  if (q.min_priority > q.max_priority) {
    return InvalidArgument("field 'min_priority': " + std::to_string(q.min_priority) +
                           " is above max_priority " + std::to_string(q.max_priority));
  }
  if (auto it = body.find("preempt"); it != body.end()) {
    if (!it->is_boolean()) return FieldError("preempt", *it, "true or false");
    q.preempt = it->get<bool>();
  }
  if (auto it = body.find("users"); it != body.end()) {
    auto v = Names("users", *it, false);
    if (!v.ok()) return v.status();
    q.users = *v;
  }
  if (auto it = body.find("queues"); it != body.end()) {
    auto v = Names("queues", *it, true);
    if (!v.ok()) return v.status();
    q.queues = *v;
  }
  return q;
}

Status CheckQosAssignments(const std::map<std::string, QosClass>& classes, const QosClass& q) {
  for (const auto& [name, other] : classes) {
    if (name == q.name) continue;
    for (const std::string& u : q.users) {
      if (std::count(other.users.begin(), other.users.end(), u)) {
        return FailedPrecondition("field 'users': user '" + u + "' is in QoS '" + name +
                                  "' already; a user is in one QoS at most");
      }
    }
    for (const std::string& x : q.queues) {
      if (std::count(other.queues.begin(), other.queues.end(), x)) {
        return FailedPrecondition("field 'queues': queue '" + x + "' is in QoS '" + name +
                                  "' already; a queue is in one QoS at most");
      }
    }
  }
  return Status::Ok();
}

const QosClass* QosFor(const std::map<std::string, QosClass>& classes, const std::string& user,
                       const std::string& queue) {
  if (classes.empty()) return nullptr;
  for (const auto& [name, q] : classes) {
    if (std::binary_search(q.users.begin(), q.users.end(), user)) return &q;
  }
  // The queue, then each parent: "org/team/x", "org/team", "org".
  std::string name = queue.empty() ? "default" : queue;
  while (!name.empty()) {
    for (const auto& [qname, q] : classes) {
      if (std::binary_search(q.queues.begin(), q.queues.end(), name)) return &q;
    }
    size_t slash = name.rfind('/');
    name = slash == std::string::npos ? "" : name.substr(0, slash);
  }
  auto d = classes.find(kDefaultQos);
  return d == classes.end() ? nullptr : &d->second;
}

}  // namespace corral
