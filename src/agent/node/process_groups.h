// The processes of a job's process groups, read from /proc: for signals meant for some of a
// replica's processes rather than its whole group (docs/elastic.md: a lost peer's survivors).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace corral::agent {

// The processes of process group `pgid` now.
std::vector<pid_t> ProcessGroupMembers(pid_t pgid);

// Whether process `pid`'s environment (as it was started) sets `name`; false where it cannot be
// read (gone, or another user's without the right to read it).
bool ProcessSetsEnv(pid_t pid, const std::string& name);

}  // namespace corral::agent
