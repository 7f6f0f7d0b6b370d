#include "cli/stage_out_dest.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace corral::cli {

Status CheckStageOutDest(const JobSpec& spec) {
  if (spec.stage_out.empty()) return Status::Ok();
  const std::string& dest = spec.stage_out.dest;
  std::filesystem::path at(dest);
  struct stat st {};
  while (stat(at.c_str(), &st) != 0) {  // the nearest part of DEST that exists
    if (errno != ENOENT || at == at.root_path()) {
      return InvalidArgument("field 'stage_out': destination " + dest + ": cannot reach " +
                             at.string() + ": " + std::strerror(errno));
    }
    at = at.parent_path();
  }
  if (!S_ISDIR(st.st_mode)) {
    return InvalidArgument("field 'stage_out': destination " + dest + ": " + at.string() +
                           " is not a directory");
  }
  if (access(at.c_str(), W_OK | X_OK) != 0) {
    return InvalidArgument("field 'stage_out': destination " + dest + ": you may not write in " +
                           at.string() + " (" + std::strerror(errno) + ")");
  }
  return Status::Ok();
}

}  // namespace corral::cli
