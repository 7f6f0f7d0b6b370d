#include "agent/node/dirs.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace corral::agent {

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

Status MakeDirs(const std::string& path) {
  // The whole path first: its parents are there nearly always (a run's cgroup under its node's),
  // and one mkdir is then all it costs.
  if (!path.empty() && (mkdir(path.c_str(), 0755) == 0 || errno == EEXIST)) return Status::Ok();
  std::string partial;
  std::istringstream in(path);
  // push_back, not `= "/"`: GCC 12 -O2 reports a false -Werror=restrict on that assignment
  // here.
  if (!path.empty() && path[0] == '/') partial.push_back('/');
  for (std::string part; std::getline(in, part, '/');) {
    if (part.empty()) continue;
    partial += part + "/";
    if (mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
      return Internal("mkdir " + partial + ": " + std::strerror(errno));
    }
  }
  return Status::Ok();
}

bool SpreadSubdirectories(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  int flags = 0;
  bool ok = ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
  if (ok && (flags & FS_TOPDIR_FL) == 0) {
    flags |= FS_TOPDIR_FL;
    ok = ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
  }
  close(fd);
  return ok;
}

Status MakeDirInSpreadParent(const std::string& path, mode_t mode) {
  int made = mkdir(path.c_str(), mode);
  auto slash = path.find_last_of('/');
  if (made != 0 && errno == ENOENT && slash != std::string::npos && slash > 0) {
    const std::string parent = path.substr(0, slash);
    CORRAL_RETURN_IF_ERROR(MakeDirs(parent));
    (void)SpreadSubdirectories(parent);
    made = mkdir(path.c_str(), mode);
  }
  if (made == 0) return Status::Ok();
  if (errno == EEXIST) return Status(ErrorCode::kAlreadyExists, path + " exists");
  return Internal("mkdir " + path + ": " + std::strerror(errno));
}

}  // namespace corral::agent
