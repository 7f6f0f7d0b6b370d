// Who is told when a job begins, ends, fails, is requeued or is preempted: Slurm's
// --mail-type and --mail-user, and the head's webhooks (docs/notifications.md).
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace corral {

enum class NotifyEvent : uint32_t {
  kBegin = 1u << 0,    // the job's run started
  kEnd = 1u << 1,      // the job ended, whatever its state
  kFail = 1u << 2,     // the job ended failed
  kRequeue = 1u << 3,  // a run ended and the job waits again
  kPreempt = 1u << 4,  // a run was asked to stop for another job
};
const char* NotifyEventName(NotifyEvent e);  // "begin", "end", ...

// The events a job's mail is sent for, and to whom ("" : the job's owner, as Slurm does).
struct NotifySpec {
  uint32_t events = 0;  // NotifyEvent bits; 0: none
  std::string mail_user;
  bool Wants(NotifyEvent e) const { return (events & static_cast<uint32_t>(e)) != 0; }
  bool operator==(const NotifySpec&) const = default;
};

// Slurm's list, case-insensitive: "END,FAIL", "ALL" (every event), "NONE". Slurm's other
// types (TIME_LIMIT_90, ARRAY_TASKS, ...) are errors naming `field` and what is taken.
Result<uint32_t> ParseMailTypes(const std::string& field, const std::string& text);
// "begin,end" (canonical order); "" for none.
std::string MailTypesText(uint32_t events);
// A mail address or user name as it may go into a mail header: no spaces, controls or commas.
Status ValidateMailUser(const std::string& field, const std::string& text);

}  // namespace corral
