// What a durable change tells the people who follow a job: its begin, end, failure, requeue
// or preemption, with what a mail or a webhook says about it. Pure: the head's shell calls it
// for each committed change and hands the notice to whoever delivers (HeadConfig::on_job_notice).
#pragma once

#include <optional>
#include <string>

#include "core/codec.h"
#include "core/notify_spec.h"
#include "head/change.h"
#include "head/cluster_state.h"

namespace corral::head {

struct JobNotice {
  NotifyEvent event = NotifyEvent::kEnd;  // kFail for a failed end (which is also an end)
  uint64_t revision = 0;                  // of the change: a receiver's key against repeats
  TimeMs at = 0;
  JobId job = 0;
  std::string name;
  std::string owner;
  std::string queue;
  std::string state;  // the job's state after the change ("running", "failed", "pending")
  int32_t exit_code = 0;
  std::string reason;  // why it stopped or was preempted, in words; "" for a begin
  StopCause cause = StopCause::kNone;
  NotifySpec notify;  // the job's own --mail-type/--mail-user
  // Whether the job's mail types ask for this notice (a failure is also an end).
  bool MailWanted() const;
};

// The notice change `c` makes, read against the state it left (`s`, the job still present);
// nullopt for changes nobody is told of.
std::optional<JobNotice> NoticeFor(const Change& c, const ClusterState& s);

// The webhook's body: {"event", "revision", "at", "job", "name", "owner", "queue", "state",
// "exit_code", "reason", "cause"}.
Json NoticeJson(const JobNotice& n);

}  // namespace corral::head
