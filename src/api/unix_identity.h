// Who calls over the head's local Unix socket: the connecting process's Unix user, as the
// kernel reports it (SO_PEERCRED), with the role an admin gave its Unix groups
// (`corral head --unix-group-role GROUP=ROLE`). No token: the socket is on the head's host, and
// only the kernel, never the request, says who is at the other end (docs/security.md).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/identity.h"
#include "core/status.h"
#include "net/http.h"

namespace corral::api {

// What one Unix group grants its members: a role, and for a queue admin the queues it manages.
struct GroupGrant {
  Role role = Role::kUser;
  std::vector<std::string> queues;  // Role::kQueueAdmin only
};

// The admin's mapping of Unix group names to Corral roles. Groups not in it grant nothing
// beyond the plain user role (a user's own jobs).
struct UnixGroupRoles {
  std::map<std::string, GroupGrant> by_group;
};

// Parses `--unix-group-role` values: GROUP=user, GROUP=admin or GROUP=queue-admin:QUEUE
// (one queue per value; repeat the value for several). A group given two different roles is
// an error naming both; errors name the flag and the value.
Result<UnixGroupRoles> ParseUnixGroupRoles(const std::vector<std::string>& values);

// A Unix user as the host's user database (NSS: /etc/passwd, LDAP, SSSD) names it.
struct UnixUser {
  uint32_t uid = 0;
  std::string name;
  std::vector<std::string> groups;  // every group it is in, its primary group included
};

// Looks up the user of `peer` (getpwuid_r, then getgrouplist and getgrgid_r for its groups).
// Unauthenticated when the uid has no name here: the head serves no caller it cannot name.
// Blocking (NSS may ask a directory); a few microseconds with local files.
Result<UnixUser> LookUpUnixUser(const net::PeerCredentials& peer);

// The caller a Unix user is: a user of that name, with the highest role any of its groups
// grants (admin over queue-admin over user; a queue admin manages the union of its groups'
// queues) and its Unix groups as the caller's groups (queues' --allow-group lists). Pure.
Caller CallerOfUnixUser(const UnixUser& user, const UnixGroupRoles& roles);

}  // namespace corral::api
