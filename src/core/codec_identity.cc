#include <stdexcept>

#include "core/credential.h"

namespace corral {
namespace {

template <typename T>
T FieldOr(const Json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const std::exception&) {
    throw std::runtime_error(std::string(key) + " has the wrong type");
  }
}

Caller DecodeCaller(const Json& j) {
  if (!j.is_object()) throw std::runtime_error("not an object");
  Caller c;
  std::string kind = FieldOr<std::string>(j, "kind", "system");
  c.kind = kind == "user"   ? Caller::Kind::kUser
           : kind == "node" ? Caller::Kind::kNode
           : kind == "join" ? Caller::Kind::kJoin
           : kind == "job"  ? Caller::Kind::kJob
                            : Caller::Kind::kSystem;
  c.job = FieldOr<uint64_t>(j, "job", 0);
  c.name = FieldOr<std::string>(j, "name", "");
  std::string role = FieldOr<std::string>(j, "role", "user");
  if (!ParseRole(role, &c.role)) throw std::runtime_error("role '" + role + "' is unknown");
  c.queues = FieldOr<std::vector<std::string>>(j, "queues", {});
  c.groups = FieldOr<std::vector<std::string>>(j, "groups", {});
  return c;
}

}  // namespace

const char* CallerKindName(Caller::Kind k) {
  switch (k) {
    case Caller::Kind::kUser:
      return "user";
    case Caller::Kind::kNode:
      return "node";
    case Caller::Kind::kJoin:
      return "join";
    case Caller::Kind::kSystem:
      return "system";
    case Caller::Kind::kJob:
      return "job";
  }
  return "system";
}

bool Credential::operator==(const Credential& o) const {
  return id == o.id && hash == o.hash && who.kind == o.who.kind && who.name == o.who.name &&
         who.role == o.who.role && who.queues == o.who.queues && who.groups == o.who.groups &&
         created_at == o.created_at && expires_at == o.expires_at;
}

Json ToJson(const Caller& c) {
  Json j{{"kind", CallerKindName(c.kind)}, {"name", c.name}, {"role", RoleName(c.role)}};
  if (!c.queues.empty()) j["queues"] = c.queues;
  if (!c.groups.empty()) j["groups"] = c.groups;
  if (c.job != 0) j["job"] = c.job;
  return j;
}

Result<Caller> CallerFromJson(const Json& j) {
  try {
    return DecodeCaller(j);
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("caller: ") + e.what());
  }
}

Json ToJson(const Credential& c) {
  return Json{{"id", c.id},
              {"hash", c.hash},
              {"who", ToJson(c.who)},
              {"created_at", c.created_at},
              {"expires_at", c.expires_at}};
}

Result<Credential> CredentialFromJson(const Json& j) {
  try {
    if (!j.is_object()) throw std::runtime_error("not an object");
    Credential c;
    auto id = j.find("id");
    if (id == j.end() || !id->is_string()) throw std::runtime_error("id is missing or not text");
    c.id = id->get<std::string>();
    c.hash = FieldOr<std::string>(j, "hash", "");
    auto who = j.find("who");
    if (who == j.end()) throw std::runtime_error("who is missing");
    Result<Caller> caller = CallerFromJson(*who);
    if (!caller.ok()) throw std::runtime_error("who: " + caller.status().message());
    c.who = std::move(*caller);
    c.created_at = FieldOr<int64_t>(j, "created_at", 0);
    c.expires_at = FieldOr<int64_t>(j, "expires_at", 0);
    return c;
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("credential: ") + e.what());
  }
}

}  // namespace corral
