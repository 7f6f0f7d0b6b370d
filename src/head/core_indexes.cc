#include "head/core_indexes.h"

#include <set>

namespace corral::head {
namespace {

bool IsLive(JobState s) { return s == JobState::kScheduled || s == JobState::kRunning; }

// The ids a submission made: one, or an array's elements.
template <typename F>
void ForEachSubmitted(const Change& c, F&& f) {
  if (const auto* e = std::get_if<JobSubmitted>(&c.what)) f(e->job->id);
  if (const auto* e = std::get_if<ArraySubmitted>(&c.what)) {
    for (size_t i = 0; i < e->size(); ++i) f(e->job->id + i);
  }
}

}  // namespace

// --- ActiveRuns ---

void ActiveRuns::Apply(const ClusterState& s, const Change& c) {
  if (const auto* e = std::get_if<RunPlaced>(&c.what)) {
    jobs_.insert(e->job);
    for (const ReplicaPlacement& p : e->placement) by_node_[p.node].insert(e->job);
  } else if (const auto* e = std::get_if<JobResized>(&c.what)) {
    // A replica that left keeps its node listed until the run ends, as a rebuild lists it.
    for (const ReplicaPlacement& p : e->added) by_node_[p.node].insert(e->job);
  } else if (const auto* e = std::get_if<RunEnded>(&c.what)) {
    for (const ReplicaPlacement& p : s.jobs.at(e->job).runs[e->attempt - 1].placement) {
      auto it = by_node_.find(p.node);
      if (it == by_node_.end()) continue;
      it->second.erase(e->job);
      if (it->second.empty()) by_node_.erase(it);
    }
    jobs_.erase(e->job);
  }
}

void ActiveRuns::Rebuild(const ClusterState& s, TimeMs) {
  jobs_.clear();
  by_node_.clear();
  for (const auto& [id, job] : s.jobs) {
    if (!IsLive(job.state)) continue;
    jobs_.insert(id);
    for (const ReplicaPlacement& p : job.CurrentRun()->placement) by_node_[p.node].insert(id);
  }
}

const std::set<JobId>& ActiveRuns::OnNode(const std::string& node) const {
  static const std::set<JobId> kNone;
  auto it = by_node_.find(node);
  return it == by_node_.end() ? kNone : it->second;
}

// --- PendingCounts ---

void PendingCounts::Add(const Job& job, int32_t delta) { Add(job.spec.queue, job.owner, delta); }

void PendingCounts::Add(const std::string& queue, const std::string& owner, int32_t delta) {
  auto [it, added] = counts_.try_emplace({queue, owner}, 0);
  it->second += delta;
  if (it->second == 0) counts_.erase(it);
}

void PendingCounts::Apply(const ClusterState& s, const Change& c) {
  ForEachSubmitted(c, [&](JobId id) { Add(s.jobs.at(id), +1); });
  if (const auto* e = std::get_if<RunPlaced>(&c.what)) {
    Add(s.jobs.at(e->job), -1);
  } else if (const auto* e = std::get_if<RunEnded>(&c.what)) {
    if (e->job_state == JobState::kPending) Add(s.jobs.at(e->job), +1);  // requeued
  } else if (const auto* e = std::get_if<JobEnded>(&c.what)) {
    Add(s.jobs.at(e->job), -1);  // it ended while pending
  } else if (const auto* e = std::get_if<JobUpdated>(&c.what)) {
    const Job& job = s.jobs.at(e->job);  // only a pending job is updated: it moves queue
    Add(e->previous_queue, job.owner, -1);
    Add(job, +1);
  }
}

void PendingCounts::Rebuild(const ClusterState& s, TimeMs) {
  counts_.clear();
  for (const auto& [id, job] : s.jobs) {
    if (job.state == JobState::kPending) ++counts_[{job.spec.queue, job.owner}];
  }
}

int32_t PendingCounts::Of(const std::string& queue, const std::string& owner) const {
  auto it = counts_.find({queue, owner});
  return it == counts_.end() ? 0 : it->second;
}

// --- RequestIds ---

void RequestIds::Add(const Job& job) {
  if (!job.request_id.empty()) ids_.emplace(Key(job.owner, job.request_id), job.id);
}

void RequestIds::Apply(const ClusterState& s, const Change& c) {
  ForEachSubmitted(c, [&](JobId id) { Add(s.jobs.at(id)); });
  if (const auto* e = std::get_if<JobsRetired>(&c.what)) {
    std::set<JobId> gone(e->jobs.begin(), e->jobs.end());
    std::erase_if(ids_, [&](const auto& kv) { return gone.count(kv.second) > 0; });
  }
}

void RequestIds::Rebuild(const ClusterState& s, TimeMs) {
  ids_.clear();
  for (const auto& [id, job] : s.jobs) Add(job);
}

JobId RequestIds::Find(const std::string& owner, const std::string& request_id) const {
  auto it = ids_.find({owner, request_id});
  return it == ids_.end() ? 0 : it->second;
}

}  // namespace corral::head
