#include "head/audit_log.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace corral::head {

Result<std::unique_ptr<AuditLog>> AuditLog::Open(const std::string& path) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return Unavailable("cannot open audit log " + path + ": " + std::strerror(errno));
  return std::unique_ptr<AuditLog>(new AuditLog(fd));
}

AuditLog::~AuditLog() { close(fd_); }

void AuditLog::Write(const Json& record) { WriteAll({record}); }

void AuditLog::WriteAll(const std::vector<Json>& records) {
  std::string lines;
  for (const Json& r : records) lines += r.dump() + "\n";
  std::lock_guard lock(mu_);
  // One write(2) on an O_APPEND descriptor: lines never interleave.
  ssize_t n = write(fd_, lines.data(), lines.size());
  if (n != static_cast<ssize_t>(lines.size()) && !warned_) {
    warned_ = true;
    spdlog::error("cannot append to the audit log: {}", std::strerror(errno));
  }
}

}  // namespace corral::head
