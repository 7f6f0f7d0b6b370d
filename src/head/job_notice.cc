#include "head/job_notice.h"

namespace corral::head {
namespace {

// The notice about `job` with its identity and state filled in.
JobNotice NoticeAbout(const Job& job, NotifyEvent event, const Change& c) {
  JobNotice n;
  n.event = event;
  n.revision = c.revision;
  n.at = c.at;
  n.job = job.id;
  n.name = job.spec.name;
  n.owner = job.owner;
  n.queue = job.spec.queue;
  n.state = JobStateName(job.state);
  n.notify = job.spec.notify;
  return n;
}

const Job* FindNoticeJob(const ClusterState& s, JobId id) {
  auto it = s.jobs.find(id);
  return it == s.jobs.end() ? nullptr : &it->second;
}

}  // namespace

bool JobNotice::MailWanted() const {
  if (event == NotifyEvent::kFail) {
    return notify.Wants(NotifyEvent::kFail) || notify.Wants(NotifyEvent::kEnd);
  }
  return notify.Wants(event);
}

std::optional<JobNotice> NoticeFor(const Change& c, const ClusterState& s) {
  if (const auto* e = std::get_if<RunStarted>(&c.what)) {
    const Job* job = FindNoticeJob(s, e->job);
    if (job == nullptr) return std::nullopt;
    return NoticeAbout(*job, NotifyEvent::kBegin, c);
  }
  if (const auto* e = std::get_if<StopRequested>(&c.what); e && e->cause == StopCause::kPreempted) {
    const Job* job = FindNoticeJob(s, e->job);
    if (job == nullptr) return std::nullopt;
    JobNotice n = NoticeAbout(*job, NotifyEvent::kPreempt, c);
    n.reason = e->reason;
    n.cause = e->cause;
    return n;
  }
  if (const auto* e = std::get_if<RunEnded>(&c.what)) {
    const Job* job = FindNoticeJob(s, e->job);
    if (job == nullptr) return std::nullopt;
    NotifyEvent event = !IsTerminal(e->job_state)           ? NotifyEvent::kRequeue
                        : e->job_state == JobState::kFailed ? NotifyEvent::kFail
                                                            : NotifyEvent::kEnd;
    JobNotice n = NoticeAbout(*job, event, c);
    n.state = JobStateName(e->job_state);
    n.exit_code = e->exit_code;
    n.reason = e->reason;
    n.cause = e->cause;
    return n;
  }
  if (const auto* e = std::get_if<JobEnded>(&c.what)) {  // cancelled while it waited
    const Job* job = FindNoticeJob(s, e->job);
    if (job == nullptr) return std::nullopt;
    JobNotice n = NoticeAbout(*job, NotifyEvent::kEnd, c);
    n.state = JobStateName(e->state);
    n.reason = e->reason;
    n.cause = StopCause::kCancelled;
    return n;
  }
  return std::nullopt;
}

Json NoticeJson(const JobNotice& n) {
  return Json{{"event", NotifyEventName(n.event)},
              {"revision", n.revision},
              {"at", n.at},
              {"job", n.job},
              {"name", n.name},
              {"owner", n.owner},
              {"queue", n.queue},
              {"state", n.state},
              {"exit_code", n.exit_code},
              {"reason", n.reason},
              {"cause", StopCauseName(n.cause)}};
}

}  // namespace corral::head
