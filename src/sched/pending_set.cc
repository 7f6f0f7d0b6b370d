#include "sched/pending_set.h"

#include <algorithm>

#include "sched/cluster_model.h"

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
  if (j.max_replicas_per_node > 0) k += "|spread" + std::to_string(j.max_replicas_per_node);
  if (j.min_replicas > 0) k += "|min" + std::to_string(j.min_replicas);
  if (!j.may_preempt) k += "|nopreempt";
  if (j.serving) k += "|serving";  // it may preempt training that its class-mates may not
  for (const auto& [lk, lv] : j.node_labels) {
    k += '|';
    k += lk;
    k += '=';
    k += lv;
  }
  auto [it, added] = class_ids_.emplace(std::move(k), static_cast<int32_t>(class_members_.size()));
  if (added) {
    // An elastic job starts with its minimum: what "could any class fit" must count.
    class_totals_.push_back(j.min_replicas > 0 ? TotalGpus(j) / j.replicas * j.min_replicas
                                               : TotalGpus(e.job));
    class_limits_.push_back(e.job.time_limit_ms);
    class_replica_gpus_.push_back(ShapeOf(e.job).gpus);
    class_queue_.push_back(e.queue);
    class_priority_.push_back(j.priority);
    class_hidden_.push_back(0);
    class_hidden_jobs_.push_back(0);
    class_members_.push_back(0);
    class_groups_.emplace_back();
  }
  return it->second;
}

void PendingSet::Count(const PendingEntry& e, int sign) {
  bool was_visible = Visible(e.klass);
  int64_t& members = class_members_[e.klass];
  if (sign > 0 && members++ == 0) {
    ++live_classes_;
    ++live_totals_[class_totals_[e.klass]];
  }
  if (sign < 0 && --members == 0) {
    --live_classes_;
    if (--live_totals_[class_totals_[e.klass]] == 0) live_totals_.erase(class_totals_[e.klass]);
  }
  Revisit(e.klass, was_visible);
}

void PendingSet::Revisit(int32_t klass, bool was_visible) {
  bool visible = Visible(klass);
  if (visible != was_visible) CountVisible(klass, visible ? +1 : -1);
}

void PendingSet::CountVisible(int32_t klass, int sign) {
  std::tuple<int64_t, DurationMs, int32_t> k{class_totals_[klass], class_limits_[klass],
                                             class_replica_gpus_[klass]};
  int64_t& n = visible_[k];
  n += sign;
  if (n == 0) visible_.erase(k);
  int32_t priority = class_priority_[klass];
  int64_t& p = visible_priorities_[priority];
  p += sign;
  if (p == 0) visible_priorities_.erase(priority);
  int32_t q = class_queue_[klass];
  if (static_cast<int32_t>(visible_totals_by_queue_.size()) <= q) {
    visible_totals_by_queue_.resize(q + 1);
  }
  int64_t& t = visible_totals_by_queue_[q][class_totals_[klass]];
  t += sign;
  if (t == 0) visible_totals_by_queue_[q].erase(class_totals_[klass]);
}

bool PendingSet::AnyVisibleFits(int64_t free_unheld, int64_t node_unheld, int64_t free_all,
                                int64_t node_all, DurationMs max_limit) const {
  for (const auto& [k, n] : visible_) {
    (void)n;
    const auto& [total, limit, per_replica] = k;
    if (total > free_all) break;  // ordered by GPUs
    if (total <= free_unheld && per_replica <= node_unheld) return true;
    if (max_limit >= 0 && limit > 0 && limit <= max_limit && per_replica <= node_all) {
      return true;
    }
  }
  return false;
}

void PendingSet::Reseat(int32_t g, int32_t klass) {
  Group& group = groups_[g];
  auto it = group.classes.find(klass);
  if (it == group.classes.end()) return;
  ClassList& cl = it->second;
  if (cl.in_heads) {
    group.heads.erase({cl.head_key, klass});
    cl.in_heads = false;
  }
  if (cl.jobs.empty() && !cl.hidden) {
    group.classes.erase(it);
    class_groups_[klass].erase(g);
    return;
  }
  if (!cl.jobs.empty() && !cl.hidden) {
    cl.head_key = cl.jobs.begin()->first;
    group.heads.insert({cl.head_key, klass});
    cl.in_heads = true;
  }
}

void PendingSet::Insert(PendingEntry* e) {
  Group& g = groups_[e->group];
  g.classes[e->klass].jobs.emplace(e->key, e);
  class_groups_[e->klass].insert(e->group);
  Reseat(e->group, e->klass);
}

void PendingSet::Erase(PendingEntry* e) {
  Group& g = groups_[e->group];
  auto it = g.classes.find(e->klass);
  if (it == g.classes.end()) return;
  it->second.jobs.erase(e->key);
  Reseat(e->group, e->klass);
}

PendingEntry* PendingSet::Add(const PendingJob& job) {
  Remove(job.id);
  PendingEntry& e = jobs_[job.id];
  e.job = job;
  e.key = policy_.Key(job, job.attained_ms);
  e.queue = queues_.Id(job.queue.empty() ? "default" : job.queue);
  e.user = queues_.UserId(e.queue, job.user);
  e.group = GroupOf(e.queue, e.user);
  e.klass = ClassOf(e);
  Count(e, +1);
  Insert(&e);
  ScheduleAging(e);
  return &e;
}

DurationMs PendingSet::AgeBound(int32_t q) const {
  if (!policy_.ByFairShare()) return 0;
  DurationMs own = queues_.MaxWait(q);
  return own > 0 ? own : std::max<DurationMs>(0, config_.corral.max_wait_ms);
}

void PendingSet::ScheduleAging(PendingEntry& e) {
  if (e.aged_at != kUnknownTime) aging_.erase({e.aged_at, e.job.id});
  e.aged_at = e.aged ? kUnknownTime : AgedAt(e.job, AgeBound(e.queue));
  if (e.aged_at != kUnknownTime) aging_.insert({e.aged_at, e.job.id});
}

void PendingSet::Reage() {
  // The resulting set does not depend on the visiting order.
  for (auto& [id, e] : jobs_) ScheduleAging(e);
}

void PendingSet::Remove(JobId id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  PendingEntry& e = it->second;
  Erase(&e);
  if (std::erase(hidden_jobs_, &e) > 0) {
    bool was_visible = Visible(e.klass);
    --class_hidden_jobs_[e.klass];
    Revisit(e.klass, was_visible);
  }
  Count(e, -1);
  if (e.aged_at != kUnknownTime) aging_.erase({e.aged_at, id});
  jobs_.erase(it);
}

PendingEntry* PendingSet::Find(JobId id) {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

const PendingEntry* PendingSet::Find(JobId id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

void PendingSet::SetAttained(JobId id, DurationMs attained_gpu_ms) {
  PendingEntry* e = Find(id);
  if (!e) return;
  Erase(e);
  e->job.attained_ms = attained_gpu_ms;
  e->key = policy_.Key(e->job, attained_gpu_ms);
  if (e->aged) e->key.aged = e->job.submitted_at;
  Insert(e);
  ScheduleAging(*e);
}

void PendingSet::Promote(TimeMs now) {
  while (!aging_.empty() && aging_.begin()->first <= now) {
    PendingEntry* e = Find(aging_.begin()->second);
    aging_.erase(aging_.begin());
    if (!e) continue;
    Erase(e);
    e->aged_at = kUnknownTime;
    e->aged = true;
    e->key.aged = e->job.submitted_at;
    Insert(e);
  }
}

void PendingSet::HideJob(PendingEntry* e) {
  Erase(e);
  hidden_jobs_.push_back(e);
  bool was_visible = Visible(e->klass);
  ++class_hidden_jobs_[e->klass];
  Revisit(e->klass, was_visible);
}

void PendingSet::HideClass(int32_t klass) {
  if (class_hidden_[klass]) return;
  bool was_visible = Visible(klass);
  class_hidden_[klass] = 1;
  Revisit(klass, was_visible);
  hidden_classes_.push_back(klass);
  for (int32_t g : class_groups_[klass]) {
    groups_[g].classes.at(klass).hidden = true;
    Reseat(g, klass);
  }
}

void PendingSet::RestoreAll() {
  for (int32_t k : hidden_classes_) {
    bool was_visible = Visible(k);
    class_hidden_[k] = 0;
    Revisit(k, was_visible);
    // Reseat may drop the group it is given from class_groups_[k] (an empty class), never
    // another: step past it first.
    std::set<int32_t>& gs = class_groups_[k];
    for (auto it = gs.begin(); it != gs.end();) {
      int32_t g = *it++;
      groups_[g].classes.at(k).hidden = false;
      Reseat(g, k);
    }
  }
  hidden_classes_.clear();
  for (PendingEntry* e : hidden_jobs_) {
    Insert(e);
    bool was_visible = Visible(e->klass);
    --class_hidden_jobs_[e->klass];
    Revisit(e->klass, was_visible);
  }
  hidden_jobs_.clear();
}

std::vector<JobId> PendingSet::Ids() const {
  std::vector<JobId> ids;
  for (const auto& [id, e] : jobs_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace corral::sched
