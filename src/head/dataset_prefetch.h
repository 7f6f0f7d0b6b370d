// Datasets fetched ahead for pending jobs that hold a reservation (docs/datasets.md, "Staging
// while a job waits"). After each pass, the first kJobs of its reservations whose jobs declare
// datasets ask each reserved node for what it lacks of them (a PrefetchOrder, in every sync
// answer to that node); a node that holds them all is asked nothing. The agents report how far
// their fetches are, and the job's reason says so. Owned by HeadCore and used on its thread;
// not durable: the next pass plans again (a new leader's first pass too).
#pragma once

#include <utility>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/agent_protocol.h"
#include "core/job.h"
#include "head/scheduler_model.h"
#include "sched/scheduler.h"

namespace corral::head {

class DatasetPrefetch {
 public:
  // Jobs fetched for at once. The first reservations are the firmest (later ones move as the
  // runs ahead of them end early or late), and each fetch takes a turn at its source that a
  // placed job may be waiting for.
  static constexpr size_t kJobs = 4;

  // Replaces the plan with one for this pass's reservations (in the pass's order). Returns the
  // (node, job) pairs whose orders were added or dropped, so that those nodes are answered.
  // Nothing is fetched ahead from a source in `budgeted` (source keys, DatasetSourceKey): a
  // cluster budget's line admits placed runs only, and a fetch ahead would read beside it.
  std::vector<std::pair<std::string, JobId>> Plan(
      const std::vector<sched::Reservation>& reservations, const std::map<JobId, Job>& jobs,
      const DatasetHolders& holders, const std::set<std::string>& budgeted);

  // What `node` is asked to fetch ahead now, by job.
  const std::vector<PrefetchOrder>& For(const std::string& node) const;
  // Whether `node` was asked to fetch ahead for `job` (its start there measures no source).
  bool Asked(JobId job, const std::string& node) const;
  // A node's fetches ahead under way, replacing what it reported before.
  void Observe(const std::string& node, const std::vector<PrefetchReport>& reports);
  // Adds to a pending job's reason how far its data is fetched ahead on its reserved nodes.
  void Explain(Job* view) const;

 private:
  std::map<std::string, std::vector<PrefetchOrder>> orders_;   // node -> orders, by job
  std::map<JobId, std::vector<std::string>> reserved_;         // planned job -> its nodes
  std::map<std::string, std::map<JobId, std::string>> notes_;  // node -> job -> its note
};

}  // namespace corral::head
