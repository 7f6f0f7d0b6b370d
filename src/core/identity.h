// Who sends a request. Every command into the head carries one: a user with a role, an
// agent speaking for its node, or the head itself (timers, recovery).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace corral {

enum class Role { kUser, kQueueAdmin, kAdmin };
const char* RoleName(Role r);
bool ParseRole(const std::string& text, Role* out);

struct Caller {
  // kJob: a running job's own step credential (srun in a batch script); it may only start
  // and follow steps of that job.
  enum class Kind { kUser, kNode, kJoin, kSystem, kJob };
  Kind kind = Kind::kSystem;
  std::string name;                 // user name, or node name for kNode, "job/ID" for kJob
  Role role = Role::kUser;          // for kUser
  std::vector<std::string> queues;  // queues a queue admin manages
  uint64_t job = 0;                 // kJob: the job
  std::vector<std::string> groups;  // kUser: groups its token names, for queues' access lists

  static Caller System() { return {Kind::kSystem, "corral", Role::kAdmin, {}}; }
  static Caller User(std::string name, Role role = Role::kUser) {
    return {Kind::kUser, std::move(name), role, {}};
  }
  static Caller Node(std::string name) { return {Kind::kNode, std::move(name), Role::kUser, {}}; }
  static Caller Job(uint64_t id) {
    return {Kind::kJob, "job/" + std::to_string(id), Role::kUser, {}, id};
  }
  bool IsAdmin() const {
    return kind == Kind::kSystem || (kind == Kind::kUser && role == Role::kAdmin);
  }
};

}  // namespace corral
