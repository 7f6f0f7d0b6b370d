#include "agent/data/stage_out_copy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>

#include "agent/node/act_as.h"

namespace corral::agent {
namespace {

namespace fs = std::filesystem;

std::string StageOutErrno(const std::string& path) { return path + ": " + std::strerror(errno); }

// A descriptor closed when it goes.
struct StageOutFd {
  int fd = -1;
  explicit StageOutFd(int f) : fd(f) {}
  ~StageOutFd() {
    if (fd >= 0) close(fd);
  }
  StageOutFd(const StageOutFd&) = delete;
  StageOutFd& operator=(const StageOutFd&) = delete;
};

// One regular file's bytes; "" or the path and why it failed.
std::string StageOutFile(const fs::path& from, const fs::path& to, mode_t mode, int64_t* bytes,
                         StageOutProgress* progress) {
  StageOutFd in(open(from.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (in.fd < 0) return StageOutErrno(from.string());
  StageOutFd out(
      open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode & 0777));
  if (out.fd < 0) return StageOutErrno(to.string());
  char buf[1 << 16];
  for (;;) {
    ssize_t n = read(in.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return StageOutErrno(from.string());
    if (n == 0) break;
    for (ssize_t done = 0; done < n;) {
      ssize_t w = write(out.fd, buf + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return StageOutErrno(to.string());
      done += w;
    }
    *bytes += n;
    if (progress != nullptr) progress->copied += n;
  }
  if (fchmod(out.fd, mode & 0777) != 0) return StageOutErrno(to.string());
  return "";
}

// One entry of the tree: "" or the path and why it failed.
std::string StageOutEntry(const fs::directory_entry& e, const fs::path& target, StageOutResult* r,
                          StageOutProgress* progress) {
  struct stat st {};
  if (lstat(e.path().c_str(), &st) != 0) return StageOutErrno(e.path().string());
  if (S_ISDIR(st.st_mode)) {
    if (mkdir(target.c_str(), (st.st_mode & 0777) | 0700) != 0 && errno != EEXIST) {
      return StageOutErrno(target.string());
    }
    return "";
  }
  if (S_ISLNK(st.st_mode)) {
    std::error_code ec;
    const fs::path link = fs::read_symlink(e.path(), ec);
    if (ec) return e.path().string() + ": " + ec.message();
    unlink(target.c_str());  // an earlier stage-out's
    if (symlink(link.c_str(), target.c_str()) != 0) return StageOutErrno(target.string());
    ++r->files;
    return "";
  }
  if (!S_ISREG(st.st_mode)) return "";  // a FIFO, a socket, a device: not data
  ++r->files;
  return StageOutFile(e.path(), target, st.st_mode, &r->bytes, progress);
}

// The bytes of the regular files under `from`, what the copy's progress is measured against
// (what cannot be listed counts nothing: the copy itself says why).
int64_t StageOutTotalBytes(const std::string& from) {
  int64_t total = 0;
  std::error_code ec;
  fs::recursive_directory_iterator it(from, fs::directory_options::none, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    struct stat st {};
    if (lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) total += st.st_size;
  }
  return total;
}

StageOutResult CopyStageOutAs(const std::string& from, const std::string& to,
                              StageOutProgress* progress) {
  StageOutResult r;
  r.done = true;
  r.from = from;
  r.to = to;
  struct stat st {};
  if (stat(from.c_str(), &st) != 0) {
    r.error = StageOutErrno(from);
    return r;
  }
  if (!S_ISDIR(st.st_mode)) {
    r.error = from + ": not a directory";
    return r;
  }
  if (progress != nullptr) progress->total = StageOutTotalBytes(from);
  std::error_code ec;
  fs::create_directories(to, ec);
  if (ec) {
    r.error = "cannot make " + to + ": " + ec.message();
    return r;
  }
  fs::recursive_directory_iterator it(from, fs::directory_options::none, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const fs::path target = fs::path(to) / it->path().lexically_relative(from);
    r.error = StageOutEntry(*it, target, &r, progress);
    if (!r.error.empty()) return r;
  }
  if (ec) {
    r.error = "cannot list " + from + ": " + ec.message();
    return r;
  }
  StageOutFd dest(open(to.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dest.fd < 0 || syncfs(dest.fd) != 0) r.error = StageOutErrno(to);
  return r;
}

}  // namespace

StageOutResult CopyStageOut(const std::string& from, const std::string& to, const UnixIdentity* who,
                            StageOutProgress* progress) {
  const auto start = std::chrono::steady_clock::now();
  std::optional<ActAs> as;
  if (who != nullptr) as.emplace(*who);
  StageOutResult r = CopyStageOutAs(from, to, progress);
  r.ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start)
             .count();
  return r;
}

std::string StageOutTarget(const StageOut& s, int32_t replica, int32_t replicas) {
  return replicas > 1 ? s.dest + "/replica-" + std::to_string(replica) : s.dest;
}

}  // namespace corral::agent
