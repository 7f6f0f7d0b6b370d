// An append-only record of who did what to the cluster (DESIGN §10): every change an admin or
// queue admin made, and every refused call (401, 403), one JSON object per line in
// STATE_DIR/audit.log. Written from the head's strand and from the API's threads alike.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "core/codec.h"
#include "core/status.h"

namespace corral::head {

class AuditLog {
 public:
  // Opens `path` for appending (creating it 0600).
  static Result<std::unique_ptr<AuditLog>> Open(const std::string& path);
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // Appends `record` as one line. A failure is reported once on stderr and otherwise ignored:
  // the cluster keeps working when its audit disk fills.
  void Write(const Json& record);
  // The records in one write(2), so a batch's lines stay together.
  void WriteAll(const std::vector<Json>& records);

 private:
  explicit AuditLog(int fd) : fd_(fd) {}
  std::mutex mu_;
  int fd_;
  bool warned_ = false;
};

}  // namespace corral::head
