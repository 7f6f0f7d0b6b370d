#include "head/elastic_sizes.h"

#include <string>

namespace corral::head {
namespace {

bool ElasticRunIsLive(const Job& job) {
  const Run* run = job.CurrentRun();
  return job.spec.IsElastic() && run != nullptr && !IsRunOver(run->state) &&
         (job.state == JobState::kScheduled || job.state == JobState::kRunning);
}

}  // namespace

void ElasticSizes::Set(const Job& job) {
  if (!ElasticRunIsLive(job)) {
    sizes_.erase(job.id);
    return;
  }
  const Run& run = *job.CurrentRun();
  sizes_[job.id] = ElasticSize{run.attempt, job.spec.min_replicas, job.spec.replicas,
                               run.LiveReplicas(), run.resizes};
}

void ElasticSizes::Apply(const ClusterState& s, const Change& c) {
  if (const auto* e = std::get_if<RunPlaced>(&c.what)) {
    Set(s.jobs.at(e->job));
  } else if (const auto* e = std::get_if<JobResized>(&c.what)) {
    Set(s.jobs.at(e->job));
    ++(e->added.empty() ? shrunk_ : grown_);
  } else if (const auto* e = std::get_if<RunEnded>(&c.what)) {
    sizes_.erase(e->job);
  } else if (const auto* e = std::get_if<JobsRetired>(&c.what)) {
    for (JobId id : e->jobs) sizes_.erase(id);
  }
}

void ElasticSizes::Rebuild(const ClusterState& s, TimeMs) {
  sizes_.clear();
  for (const auto& [id, job] : s.jobs) Set(job);
}

const ElasticSize* ElasticSizes::Of(JobId id) const {
  auto it = sizes_.find(id);
  return it == sizes_.end() ? nullptr : &it->second;
}

}  // namespace corral::head
