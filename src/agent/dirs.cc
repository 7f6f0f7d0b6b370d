#include "agent/dirs.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <sstream>

namespace corral::agent {

Status MakeDirs(const std::string& path) {
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

}  // namespace corral::agent
