// What the core last said about why something is not (yet) doing what its owner wants: a
// pending job's reason (a hold's, or the scheduler's from its last pass), a placed run's
// staging progress, a pending job's estimated start, a service's shortfall. Not durable: the
// next pass, report or tick says it again, so a new leadership starts with none (Clear).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/job.h"
#include "sched/scheduler.h"

namespace corral::head {

class Explanations {
 public:
  void Clear();

  // Why a pending job waits; dropped once it is admitted, placed or ended.
  void Waiting(JobId job, PendingReason why) { waiting_[job] = std::move(why); }
  void Admitted(JobId job) { waiting_.erase(job); }
  const std::map<JobId, PendingReason>& waiting() const { return waiting_; }

  // A placed run's staging note (`staging imagenet on node2: 41%`) until it starts, or a running
  // one's stage-out (`staging out to /shared/out on node2: 41% (...)`) until it is over.
  void Staging(JobId job, std::string note) { staging_[job] = std::move(note); }
  void StagingDone(JobId job) { staging_.erase(job); }

  // The start estimates of the last estimate, replacing all earlier ones.
  void Estimated(std::vector<sched::StartEstimate> estimates);
  const std::map<JobId, sched::StartEstimate>& estimates() const { return estimates_; }

  // A job that ended: nothing is left to explain.
  void Ended(JobId job);

  // Fills a view of the job with what is known of it: its reason while pending (or its
  // staging note while placed or staging out), its estimate while pending and not held.
  void Explain(Job* view) const;

  void ServiceShort(const std::string& service, std::string why) {
    service_notes_[service] = std::move(why);
  }
  void ServiceFine(const std::string& service) { service_notes_.erase(service); }
  // Why the service has fewer replicas than it wants, or empty.
  std::string ServiceNote(const std::string& service) const;

 private:
  std::map<JobId, PendingReason> waiting_;
  std::map<JobId, std::string> staging_;
  std::map<JobId, sched::StartEstimate> estimates_;
  std::map<std::string, std::string> service_notes_;
};

}  // namespace corral::head
