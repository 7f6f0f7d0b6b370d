#include "api/unix_identity.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace corral::api {
namespace {

constexpr const char* kUnixGroupRoleFlag = "flag '--unix-group-role'";

// How much buffer getpwuid_r / getgrgid_r may grow to (a group with thousands of members).
constexpr size_t kMaxNssBuffer = 1u << 22;

Result<GroupGrant> ParseGroupGrant(const std::string& value, const std::string& text) {
  GroupGrant g;
  std::string role = text, queue;
  if (size_t colon = text.find(':'); colon != std::string::npos) {
    role = text.substr(0, colon);
    queue = text.substr(colon + 1);
  }
  if (!ParseRole(role, &g.role)) {
    return InvalidArgument(std::string(kUnixGroupRoleFlag) + ": got \"" + value +
                           "\", want GROUP=user, GROUP=admin or GROUP=queue-admin:QUEUE");
  }
  if ((g.role == Role::kQueueAdmin) != !queue.empty()) {
    return InvalidArgument(std::string(kUnixGroupRoleFlag) + ": got \"" + value + "\": " +
                           (queue.empty() ? "queue-admin needs the queue it manages "
                                            "(GROUP=queue-admin:QUEUE)"
                                          : "only queue-admin names a queue"));
  }
  if (!queue.empty()) g.queues.push_back(queue);
  return g;
}

// The name of group `gid`, or nullopt when the group database has none.
std::optional<std::string> GroupName(gid_t gid) {
  std::vector<char> buf(4096);
  for (;;) {
    struct group gr {};
    struct group* found = nullptr;
    int rc = ::getgrgid_r(gid, &gr, buf.data(), buf.size(), &found);
    if (rc == ERANGE && buf.size() < kMaxNssBuffer) {
      buf.resize(buf.size() * 2);
      continue;
    }
    if (rc != 0 || found == nullptr) return std::nullopt;
    return std::string(gr.gr_name);
  }
}

std::vector<std::string> GroupsOf(const std::string& name, gid_t primary) {
  std::vector<gid_t> gids(64);
  for (;;) {
    int n = static_cast<int>(gids.size());
    if (::getgrouplist(name.c_str(), primary, gids.data(), &n) >= 0) {
      gids.resize(static_cast<size_t>(n));
      break;
    }
    if (static_cast<size_t>(n) <= gids.size())
      gids.resize(gids.size() * 2);
    else
      gids.resize(static_cast<size_t>(n));
  }
  std::vector<std::string> names;
  for (gid_t g : gids) {
    if (auto group = GroupName(g);
        group && std::find(names.begin(), names.end(), *group) == names.end()) {
      names.push_back(*group);
    }
  }
  return names;
}

}  // namespace

Result<UnixGroupRoles> ParseUnixGroupRoles(const std::vector<std::string>& values) {
  UnixGroupRoles roles;
  for (const std::string& value : values) {
    size_t eq = value.find('=');
    if (eq == 0 || eq == std::string::npos) {
      return InvalidArgument(std::string(kUnixGroupRoleFlag) + ": got \"" + value +
                             "\", want GROUP=ROLE (user, admin or queue-admin:QUEUE)");
    }
    const std::string group = value.substr(0, eq);
    auto grant = ParseGroupGrant(value, value.substr(eq + 1));
    if (!grant.ok()) return grant.status();
    auto [it, fresh] = roles.by_group.emplace(group, *grant);
    if (fresh) continue;
    if (it->second.role != grant->role) {
      return InvalidArgument(std::string(kUnixGroupRoleFlag) + ": group '" + group +
                             "' is given two roles, " + RoleName(it->second.role) + " and " +
                             RoleName(grant->role) + "; give it one");
    }
    for (const std::string& q : grant->queues) {
      if (std::find(it->second.queues.begin(), it->second.queues.end(), q) ==
          it->second.queues.end()) {
        it->second.queues.push_back(q);
      }
    }
  }
  return roles;
}

Result<UnixUser> LookUpUnixUser(const net::PeerCredentials& peer) {
  std::vector<char> buf(4096);
  struct passwd pw {};
  struct passwd* found = nullptr;
  int rc = 0;
  while ((rc = ::getpwuid_r(peer.uid, &pw, buf.data(), buf.size(), &found)) == ERANGE &&
         buf.size() < kMaxNssBuffer) {
    buf.resize(buf.size() * 2);
  }
  if (rc != 0 || found == nullptr) {
    return Unauthenticated("uid " + std::to_string(peer.uid) +
                           " has no user name on the head's host" +
                           (rc != 0 ? std::string(" (") + std::strerror(rc) + ")" : ""));
  }
  UnixUser user;
  user.uid = peer.uid;
  user.name = pw.pw_name;
  user.groups = GroupsOf(user.name, pw.pw_gid);
  return user;
}

Caller CallerOfUnixUser(const UnixUser& user, const UnixGroupRoles& roles) {
  Caller c = Caller::User(user.name, Role::kUser);
  c.groups = user.groups;
  for (const std::string& group : user.groups) {
    auto it = roles.by_group.find(group);
    if (it == roles.by_group.end()) continue;
    const GroupGrant& g = it->second;
    if (g.role == Role::kAdmin) c.role = Role::kAdmin;
    if (g.role == Role::kQueueAdmin) {
      if (c.role == Role::kUser) c.role = Role::kQueueAdmin;
      for (const std::string& q : g.queues) {
        if (std::find(c.queues.begin(), c.queues.end(), q) == c.queues.end()) c.queues.push_back(q);
      }
    }
  }
  if (c.role != Role::kQueueAdmin) c.queues.clear();
  return c;
}

}  // namespace corral::api
