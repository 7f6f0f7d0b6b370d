// A thread acting on files as a job's owner: the dataset cache checks that the owner may read
// a source (dataset_cache.h), a stage-out copies as the owner (stage_out_copy.h).
#pragma once

#include <sys/syscall.h>
#include <unistd.h>

#include <vector>

#include "agent/node/run_as.h"

namespace corral::agent {

// This thread's file-system identity switched to a user's for as long as it lives: the
// kernel's credentials are per thread, and setfsuid/setfsgid/setgroups as raw system calls
// change only the calling thread's (glibc's setgroups would change every thread's).
// REQUIRES: the process runs as root (otherwise the calls change nothing).
class ActAs {
 public:
  explicit ActAs(const UnixIdentity& who) {
    saved_groups_.resize(64);
    int n = getgroups(static_cast<int>(saved_groups_.size()), saved_groups_.data());
    saved_groups_.resize(n > 0 ? n : 0);
    syscall(SYS_setgroups, who.groups.size(), who.groups.data());
    syscall(SYS_setfsgid, who.gid);
    syscall(SYS_setfsuid, who.uid);
  }
  ~ActAs() {
    syscall(SYS_setfsuid, 0);
    syscall(SYS_setfsgid, 0);
    syscall(SYS_setgroups, saved_groups_.size(), saved_groups_.data());
  }
  ActAs(const ActAs&) = delete;
  ActAs& operator=(const ActAs&) = delete;

 private:
  std::vector<gid_t> saved_groups_;
};

}  // namespace corral::agent
