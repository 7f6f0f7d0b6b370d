#include "store/private_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace corral::store {
namespace {

Status Narrow(const std::string& path, mode_t want) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::Ok();
    return Unavailable("cannot stat " + path + ": " + std::strerror(errno));
  }
  // A link is not followed: narrowing its target could change a file that is not ours.
  if (S_ISLNK(st.st_mode) || (st.st_mode & 0777) == want) return Status::Ok();
  if (chmod(path.c_str(), want) != 0) {
    return Unavailable("cannot make " + path + " private (" + (want == 0600 ? "0600" : "0700") +
                       "): " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace

Status SecureStateDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::path p(dir);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Unavailable("cannot create state dir " + dir + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Unavailable("state dir " + dir + " is not a directory");
  }
  if ((st.st_mode & 0777) != 0700 && chmod(dir.c_str(), 0700) != 0) {
    return Unavailable("cannot make state dir " + dir + " private (0700): " + std::strerror(errno));
  }
  DIR* d = opendir(dir.c_str());
  if (d == nullptr)
    return Unavailable("cannot list state dir " + dir + ": " + std::strerror(errno));
  Status result = Status::Ok();
  while (struct dirent* e = readdir(d)) {
    std::string path = dir + "/" + e->d_name;
    struct stat fst {};
    if (lstat(path.c_str(), &fst) != 0 || !S_ISREG(fst.st_mode)) continue;
    if ((fst.st_mode & 077) == 0) continue;
    if (Status s = Narrow(path, 0600); !s.ok() && result.ok()) result = s;
  }
  closedir(d);
  return result;
}

Status SecureDatabaseFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Unavailable("cannot open store " + path + ": " + std::strerror(errno));
  struct stat st {};
  int rc = fstat(fd, &st);
  if (rc == 0 && (st.st_mode & 0777) != 0600) rc = fchmod(fd, 0600);
  int err = errno;
  close(fd);
  if (rc != 0) {
    return Unavailable("cannot make store " + path + " private (0600): " + std::strerror(err));
  }
  for (const char* suffix : {"-wal", "-shm", "-journal"}) {
    CORRAL_RETURN_IF_ERROR(Narrow(path + suffix, 0600));
  }
  return Status::Ok();
}

}  // namespace corral::store
