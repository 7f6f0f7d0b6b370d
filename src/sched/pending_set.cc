#include "sched/pending_set.h"

namespace corral::sched {

int32_t PendingSet::GroupOf(int32_t queue, int32_t user) {
  std::pair<int32_t, int32_t> k = fair() ? std::make_pair(queue, user) : std::make_pair(0, 0);
  auto [it, added] = group_ids_.emplace(k, static_cast<int32_t>(groups_.size()));
  if (added) {
    Group g;
    g.sel = k.first;
    g.queue = k.first;
    g.user = k.second;
    groups_.push_back(std::move(g));
  }
  return it->second;
}

int32_t PendingSet::ClassOf(const PendingEntry& e) {
  const PendingJob& j = e.job;
  std::string k = std::to_string(e.queue) + '|' + std::to_string(j.priority) + '|' +
                  std::to_string(j.replicas) + '|' + std::to_string(j.per_replica.gpu_milli) + '|' +
                  std::to_string(j.per_replica.cpu_milli) + '|' +
                  std::to_string(j.per_replica.memory_mb) + '|' + std::to_string(j.time_limit_ms) +
                  '|' + j.gpu_model;
  for (const auto& [lk, lv] : j.node_labels) {
    k += '|';
    k += lk;
    k += '=';
    k += lv;
  }
  auto [it, added] = class_ids_.emplace(std::move(k), static_cast<int32_t>(class_members_.size()));
  if (added) class_members_.push_back(0);
  return it->second;
}

PendingEntry* PendingSet::Add(const PendingJob& job) {
  Remove(job.id);
  PendingEntry& e = jobs_[job.id];
  e.job = job;
  e.key = StaticKey(config_, job, job.attained_ms);
  e.queue = queues_.Id(job.queue.empty() ? "default" : job.queue);
  e.user = queues_.UserId(e.queue, job.user);
  e.group = GroupOf(e.queue, e.user);
  e.klass = ClassOf(e);
  if (class_members_[e.klass]++ == 0) ++live_classes_;
  groups_[e.group].members.emplace(e.key, &e);
  return &e;
}

void PendingSet::Remove(JobId id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  PendingEntry& e = it->second;
  groups_[e.group].members.erase(e.key);
  if (--class_members_[e.klass] == 0) --live_classes_;
  jobs_.erase(it);
}

PendingEntry* PendingSet::Find(JobId id) {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

void PendingSet::SetAttained(JobId id, DurationMs attained_gpu_ms) {
  PendingEntry* e = Find(id);
  if (!e) return;
  Group& g = groups_[e->group];
  g.members.erase(e->key);
  e->job.attained_ms = attained_gpu_ms;
  e->key = StaticKey(config_, e->job, attained_gpu_ms);
  g.members.emplace(e->key, e);
}

}  // namespace corral::sched
