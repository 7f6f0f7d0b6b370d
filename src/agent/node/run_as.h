// Whose Unix identity a job's tasks take (DESIGN §10). An agent running as root runs every
// task as its owner, like slurmd; the lookup happens in the agent, before fork, because
// getpwnam may allocate and open files, which a forked child of a threaded process may not.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "core/status.h"

namespace corral::agent {

struct RunAsPolicy {
  bool as_owner = false;    // switch each task to the order's user (the agent must be root)
  bool allow_root = false;  // with as_owner: also run jobs whose owner is root
};

// A user as the node knows it.
struct UnixIdentity {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups, the primary one included
  std::string home;
  std::string shell;
};

// The node's account for `user` and the groups it belongs to. Fails (kFailedPrecondition) with
// a reason a job's owner can act on: no owner, no such user here, a root job refused.
Result<UnixIdentity> IdentityForJob(const std::string& user, const std::string& node,
                                    bool allow_root);

// The identity of this process's real user (for `corral up`: jobs run as whoever started it).
std::string CurrentUserName();

}  // namespace corral::agent
