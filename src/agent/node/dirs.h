// Files and directories of the agent's state (run records, logs, cgroups).
#pragma once

#include <sys/types.h>

#include <string>

#include "core/status.h"

namespace corral::agent {

// The whole of a (small) file; false if it cannot be opened.
bool ReadFile(const std::string& path, std::string* out);

// mkdir -p with mode 0755 for each directory it creates; existing ones are left as they are.
Status MakeDirs(const std::string& path);

// Asks the file system to spread the subdirectories of `path` over its block groups, as it
// does for those of `/` (ext4's Orlov allocator and its TOPDIR flag, `chattr +T`). A run's
// directory and files then land in a group of their own instead of the one `path` and its
// neighbours churn: on an ext4 without a journal, allocating an inode skips, one by one, every
// inode its group freed in the last minutes, which made each file of a run cost ~0.6 ms here.
// Best effort: false where the file system has no such flag (tmpfs, XFS); nothing else changes.
bool SpreadSubdirectories(const std::string& path);

// mkdir(path, mode); where the parent is missing, makes it (MakeDirs), spreads its
// subdirectories (SpreadSubdirectories) and tries again. kAlreadyExists if `path` was there
// (the caller decides what that means); another failure names the directory and the reason.
Status MakeDirInSpreadParent(const std::string& path, mode_t mode);

}  // namespace corral::agent
