// Reading a run's logs from its directory: the agent's log endpoint serves them from any
// thread, with or without a launcher, and never follows or blocks on what the job made there.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "agent/launch/launcher.h"
#include "agent/launch/launcher_internal.h"
#include "agent/node/file_util.h"

namespace corral::agent {
namespace {

using launcher_detail::ErrnoText;

bool ValidStream(const std::string& s) { return s == "stdout" || s == "stderr"; }

// Reads one task's log of a run directory under `runs_dir` (no launcher needed: the agent's
// log endpoint serves it from any thread).
Result<std::string> ReadLogIn(const std::string& runs_dir, const RunKey& key, int32_t task,
                              const std::string& stream, int64_t offset, int64_t max_bytes) {
  CORRAL_RETURN_IF_ERROR(ValidateRunId(key.run_id));
  if (!ValidStream(stream)) {
    return InvalidArgument("stream \"" + stream + "\" is not valid: expected stdout or stderr");
  }
  if (offset < 0) return InvalidArgument("offset " + std::to_string(offset) + " must be >= 0");
  if (task < 0) return InvalidArgument("task " + std::to_string(task) + " must be >= 0");
  if (max_bytes <= 0)
    return InvalidArgument("max_bytes " + std::to_string(max_bytes) + " must be > 0");
  max_bytes = std::min<int64_t>(max_bytes, 16 << 20);
  const std::string run_dir = runs_dir + "/" + key.DirName();
  std::string path = run_dir + "/logs/" + LogFileName(stream, task);
  if (!PathExists(run_dir + "/logs"))
    path = run_dir + "/" + LogFileName(stream, task);  // older agents
  // The job owns logs/ and may put anything there under a log's name. O_NOFOLLOW: not a
  // symlink to any file; O_NONBLOCK: opening a FIFO does not wait for a writer, and the
  // fstat then refuses it (or a device): reads never block on what a job made.
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) {
      return NotFound("no " + stream + " log for run " + key.run_id + " replica " +
                      std::to_string(key.replica) + " task " + std::to_string(task) +
                      " on this node");
    }
    return Internal(ErrnoText("open " + path, errno));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return FailedPrecondition("the " + stream + " log of run " + key.run_id + " replica " +
                              std::to_string(key.replica) + " task " + std::to_string(task) +
                              " is not a regular file; its job replaced it");
  }
  std::string data(static_cast<size_t>(max_bytes), '\0');
  size_t got = 0;
  while (got < data.size()) {
    ssize_t n = pread(fd, data.data() + got, data.size() - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  data.resize(got);
  return data;
}

}  // namespace

Result<std::string> PosixLauncher::ReadLog(const RunKey& key, int32_t task,
                                           const std::string& stream, int64_t offset,
                                           int64_t max_bytes) {
  return ReadLogIn(runs_dir_, key, task, stream, offset, max_bytes);
}

Result<std::string> ReadRunLog(const std::string& state_dir, const std::string& run_id,
                               int32_t replica, int32_t task, const std::string& stream,
                               int64_t offset, int64_t max_bytes) {
  return ReadLogIn(state_dir + "/runs", {run_id, replica}, task, stream, offset, max_bytes);
}

}  // namespace corral::agent
