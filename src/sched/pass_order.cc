#include "sched/pass_order.h"

namespace corral::sched {

PassOrder::PassOrder(PendingSet& pending, const QueueBook& queues,
                     const std::vector<uint8_t>& class_failed,
                     std::function<void(PendingEntry*)> on_skip)
    : pending_(pending), queues_(queues), failed_(class_failed), on_skip_(std::move(on_skip)) {
  auto& groups = pending_.groups();
  cursors_.resize(groups.size());
  int32_t sels = 1;
  for (const auto& g : groups) sels = std::max(sels, g.sel + 1);
  users_.resize(sels);
  queue_keys_.resize(sels);
  queue_in_set_.assign(sels, 0);
  for (size_t g = 0; g < groups.size(); ++g) {
    cursors_[g].it = groups[g].members.begin();
    Skip(static_cast<int32_t>(g));
    InsertUser(static_cast<int32_t>(g));
  }
  for (int32_t s = 0; s < sels; ++s) InsertQueue(s);
}

void PassOrder::Skip(int32_t g) {
  auto& members = pending_.groups()[g].members;
  Cursor& c = cursors_[g];
  while (c.it != members.end()) {
    PendingEntry* e = c.it->second;
    if (e->klass >= static_cast<int32_t>(failed_.size()) || !failed_[e->klass]) break;
    on_skip_(e);
    ++c.it;
  }
}

void PassOrder::InsertUser(int32_t g) {
  const PendingSet::Group& group = pending_.groups()[g];
  Cursor& c = cursors_[g];
  if (c.in_set || c.it == group.members.end()) return;
  const PendingEntry* e = c.it->second;
  double share = pending_.fair() ? queues_.UserShare(group.queue, group.user) : 0.0;
  c.key = UserKey{e->key.a, share, e->key.b, e->key.id, g};
  users_[group.sel].insert(c.key);
  c.in_set = true;
}

void PassOrder::EraseUser(int32_t g) {
  Cursor& c = cursors_[g];
  if (!c.in_set) return;
  users_[pending_.groups()[g].sel].erase(c.key);
  c.in_set = false;
}

void PassOrder::InsertQueue(int32_t sel) {
  if (queue_in_set_[sel] || users_[sel].empty()) return;
  const UserKey& head = *users_[sel].begin();
  int below = 1;
  double share = 0;
  if (pending_.fair()) {
    below = queues_.BelowQuota(sel) ? 0 : 1;
    share = queues_.Share(sel);
  }
  queue_keys_[sel] =
      QueueKey{std::get<0>(head), below, share, std::get<2>(head), std::get<3>(head), sel};
  queue_set_.insert(queue_keys_[sel]);
  queue_in_set_[sel] = 1;
}

void PassOrder::EraseQueue(int32_t sel) {
  if (!queue_in_set_[sel]) return;
  queue_set_.erase(queue_keys_[sel]);
  queue_in_set_[sel] = 0;
}

PendingEntry* PassOrder::Next() {
  if (queue_set_.empty()) return nullptr;
  int32_t sel = std::get<5>(*queue_set_.begin());
  current_ = std::get<4>(*users_[sel].begin());
  return cursors_[current_].it->second;
}

void PassOrder::Done(bool /*placed*/) {
  int32_t g = current_;
  int32_t sel = pending_.groups()[g].sel;
  EraseQueue(sel);
  EraseUser(g);
  ++cursors_[g].it;
  Skip(g);
  InsertUser(g);     // re-reads the user's share
  InsertQueue(sel);  // re-reads the queue's share and its best user
  current_ = -1;
}

}  // namespace corral::sched
