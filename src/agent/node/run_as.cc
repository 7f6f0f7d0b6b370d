#include "agent/node/run_as.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace corral::agent {

Result<UnixIdentity> IdentityForJob(const std::string& user, const std::string& node,
                                    bool allow_root) {
  if (user.empty()) {
    return FailedPrecondition("the job has no owner, and node " + node +
                              " runs jobs as their owners");
  }
  long size = sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buf(static_cast<size_t>(size > 0 ? size : 16384));
  struct passwd pw {};
  struct passwd* found = nullptr;
  int err = 0;
  while ((err = getpwnam_r(user.c_str(), &pw, buf.data(), buf.size(), &found)) == ERANGE) {
    buf.resize(buf.size() * 2);
  }
  if (err != 0) {
    return FailedPrecondition("cannot look up user \"" + user + "\" on node " + node + ": " +
                              std::strerror(err));
  }
  if (found == nullptr) {
    return FailedPrecondition("user \"" + user + "\" does not exist on node " + node +
                              " (jobs run as their owner's Unix user)");
  }
  if (pw.pw_uid == 0 && !allow_root) {
    return FailedPrecondition("node " + node + " does not run jobs as root (user \"" + user +
                              "\"); start its agent with --allow-root-jobs to permit it");
  }
  UnixIdentity id;
  id.name = pw.pw_name;
  id.uid = pw.pw_uid;
  id.gid = pw.pw_gid;
  id.home = pw.pw_dir != nullptr ? pw.pw_dir : "/";
  id.shell = pw.pw_shell != nullptr ? pw.pw_shell : "";
  int n = 32;
  id.groups.resize(static_cast<size_t>(n));
  while (getgrouplist(id.name.c_str(), id.gid, id.groups.data(), &n) < 0) {
    id.groups.resize(static_cast<size_t>(n) + 32);
    n = static_cast<int>(id.groups.size());
  }
  id.groups.resize(static_cast<size_t>(n));
  return id;
}

std::string CurrentUserName() {
  long size = sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buf(static_cast<size_t>(size > 0 ? size : 16384));
  struct passwd pw {};
  struct passwd* found = nullptr;
  if (getpwuid_r(getuid(), &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr) {
    return pw.pw_name;
  }
  return std::to_string(getuid());
}

}  // namespace corral::agent
