// File-system checks and writes, and the paths in a run's directory, that several of the
// agent's files share.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

namespace corral::agent {

// Where a container replica keeps its state (container.h): in its run's directory.
inline std::string ContainerDir(const std::string& run_dir) { return run_dir + "/container"; }

inline bool IsDir(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

inline bool PathExists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

// `text` as the whole of `path` (created with `mode`, truncated if there); never follows a
// symbolic link at `path`: a job may own the directory.
inline bool WriteTextFile(const std::string& path, const std::string& text, mode_t mode = 0600) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) return false;
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

}  // namespace corral::agent
