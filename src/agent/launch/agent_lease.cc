#include "agent/launch/agent_lease.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace corral::agent {

std::string AgentLeasePath(const std::string& state_dir) { return state_dir + "/agent-lease"; }

bool RenewAgentLease(const std::string& path) {
  if (utimensat(AT_FDCWD, path.c_str(), nullptr, AT_SYMLINK_NOFOLLOW) == 0) return true;
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  bool ok = futimens(fd, nullptr) == 0;
  close(fd);
  return ok;
}

}  // namespace corral::agent
