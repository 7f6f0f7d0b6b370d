#include "testing/fakes.h"

#include <algorithm>
#include <set>

namespace corral::testing {

Result<store::StoredState> MemoryStore::Load() {
  std::lock_guard<std::mutex> l(disk_->mu);
  store::StoredState out = disk_->state;
  uint64_t snapshot = 0;
  if (auto it = out.meta.find(store::kSnapshotRevisionKey); it != out.meta.end()) {
    snapshot = std::stoull(it->second);
  }
  std::erase_if(out.changes, [&](const store::ChangeRecord& c) { return c.revision <= snapshot; });
  std::set<JobId> retired;
  for (const auto& [id, state] : out.retired) retired.insert(id);
  std::erase_if(out.jobs, [&](const Job& j) { return retired.count(j.id) > 0; });
  return out;
}

Result<std::vector<Job>> MemoryStore::ReadRetiredJobs(const store::RetiredJobsQuery& q) const {
  std::lock_guard<std::mutex> l(disk_->mu);
  std::set<JobId> retired;
  for (const auto& [id, state] : disk_->state.retired) retired.insert(id);
  std::vector<Job> out;
  for (const Job& j : disk_->state.jobs) {
    if (static_cast<int32_t>(out.size()) >= q.limit) break;
    if (!retired.count(j.id) || j.id <= q.after || j.ended_at < q.ended_since) continue;
    if ((!q.user.empty() && j.owner != q.user) || (!q.queue.empty() && j.spec.queue != q.queue)) {
      continue;
    }
    if (q.id == 0 || j.id == q.id) out.push_back(j);
  }
  return out;
}

Status MemoryStore::Commit(const std::vector<store::StateEdit>& edits) {
  std::lock_guard<std::mutex> l(disk_->mu);
  store::StoredState next = disk_->state;  // all or nothing, like a transaction
  auto put = [](auto& rows, auto&& key, auto value) {
    auto it = std::find_if(rows.begin(), rows.end(), key);
    if (it == rows.end()) {
      rows.push_back(std::move(value));
    } else {
      *it = std::move(value);
    }
  };
  for (const store::StateEdit& e : edits) {
    if (const auto* j = std::get_if<store::PutJob>(&e)) {
      put(
          next.jobs, [&](const Job& x) { return x.id == j->job.id; }, j->job);
    } else if (const auto* n = std::get_if<store::PutNode>(&e)) {
      put(
          next.nodes, [&](const Node& x) { return x.name == n->node.name; }, n->node);
    } else if (const auto* q = std::get_if<store::PutQueue>(&e)) {
      put(
          next.queues, [&](const QueueConfig& x) { return x.name == q->queue.name; }, q->queue);
    } else if (const auto* m = std::get_if<store::PutMeta>(&e)) {
      next.meta[m->key] = m->value;
    } else if (const auto* d = std::get_if<store::DeleteNode>(&e)) {
      std::erase_if(next.nodes, [&](const Node& x) { return x.name == d->name; });
    } else if (const auto* a = std::get_if<store::AppendChange>(&e)) {
      if (!next.changes.empty() && next.changes.back().revision >= a->change.revision) {
        return Internal("change " + std::to_string(a->change.revision) + " written twice");
      }
      next.changes.push_back(a->change);
    } else if (const auto* t = std::get_if<store::TruncateChanges>(&e)) {
      std::erase_if(next.changes,
                    [&](const store::ChangeRecord& c) { return c.revision < t->below; });
    } else if (const auto* r = std::get_if<store::RetireJob>(&e)) {
      next.retired.emplace_back(r->id, r->state);
    }
  }
  std::sort(next.jobs.begin(), next.jobs.end(),
            [](const Job& a, const Job& b) { return a.id < b.id; });
  std::sort(next.retired.begin(), next.retired.end());
  disk_->state = std::move(next);
  return Status::Ok();
}

Result<std::vector<store::ChangeRecord>> MemoryStore::ReadChanges(uint64_t after, int32_t limit) {
  std::lock_guard<std::mutex> l(disk_->mu);
  std::vector<store::ChangeRecord> out;
  for (const store::ChangeRecord& c : disk_->state.changes) {
    if (c.revision > after && static_cast<int32_t>(out.size()) < limit) out.push_back(c);
  }
  return out;
}

void FaultStore::SetMode(Mode m) {
  std::lock_guard<std::mutex> l(mu_);
  mode_ = m;
}

void FaultStore::Release() {
  std::lock_guard<std::mutex> l(mu_);
  mode_ = Mode::kNormal;
  cv_.notify_all();
}

int FaultStore::commits() const {
  std::lock_guard<std::mutex> l(mu_);
  return commits_;
}

bool FaultStore::stalled() const {
  std::lock_guard<std::mutex> l(mu_);
  return stalled_;
}

Status FaultStore::Commit(const std::vector<store::StateEdit>& edits) {
  std::unique_lock<std::mutex> l(mu_);
  ++commits_;
  if (mode_ == Mode::kFail) return Unavailable("injected: disk full");
  if (mode_ == Mode::kStall) {
    stalled_ = true;
    cv_.wait(l, [&] { return mode_ != Mode::kStall; });
    stalled_ = false;
  }
  bool lose_ack = mode_ == Mode::kLostAck;
  l.unlock();
  Status st = inner_->Commit(edits);
  if (lose_ack && st.ok()) return Unavailable("injected: connection lost after commit");
  return st;
}

}  // namespace corral::testing
