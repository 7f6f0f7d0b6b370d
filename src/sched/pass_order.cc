#include "sched/pass_order.h"

namespace corral::sched {

PassOrder::PassOrder(PendingSet& pending, const QueueBook& queues)
    : pending_(pending), queues_(queues) {
  auto& groups = pending_.groups();
  int32_t sels = 1;
  for (const auto& g : groups) sels = std::max(sels, g.sel + 1);
  users_.resize(sels);
  queue_keys_.resize(sels);
  user_keys_.resize(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) RekeyUser(static_cast<int32_t>(g));
  for (int32_t s = 0; s < sels; ++s) RekeyQueue(s);
}

std::optional<PassOrder::UserKey> PassOrder::MakeUserKey(int32_t g) const {
  const PendingSet::Group& group = pending_.groups()[g];
  if (group.heads.empty()) return std::nullopt;
  const JobKey& k = group.heads.begin()->first;
  if (k.aged != kUnknownTime) return UserKey{k.a, k.aged, 0, 0, 0.0, k.b, k.id, g};
  double share = pending_.fair() ? queues_.UserShare(group.queue, group.user) : 0.0;
  return UserKey{k.a, k.aged, k.order_level, k.pred, share, k.b, k.id, g};
}

std::optional<PassOrder::QueueKey> PassOrder::MakeQueueKey(int32_t sel) const {
  if (users_[sel].empty()) return std::nullopt;
  const UserKey& head = *users_[sel].begin();
  if (std::get<1>(head) != kUnknownTime) {  // aged: by submit time alone
    return QueueKey{std::get<0>(head), std::get<1>(head), 0,  0, 0, 0.0, {}, 0, 0,
                    std::get<5>(head), std::get<6>(head), sel};
  }
  // 0 within its own quota, 1 within an ancestor's (lent its subtree's idle share before the
  // rest of the cluster), 2 borrowing from the cluster; flat queues are 0 or 2.
  int tier = 2;
  double share = 0;
  std::vector<double> deeper;
  int64_t borrow_level = 0, borrow_bucket = 0;
  if (pending_.fair()) {
    tier = queues_.QuotaTier(sel);
    share = queues_.FairPath(sel, &deeper);
    const SchedulerConfig& cfg = pending_.config();
    if (tier == 2 && cfg.corral.borrowing_queues_by_level && cfg.corral.las_within_queue) {
      borrow_level = std::get<2>(head);
      borrow_bucket = MinuteBucket(std::get<3>(head));
    }
  }
  return QueueKey{
      std::get<0>(head), std::get<1>(head), tier,
      borrow_level,      borrow_bucket,     share,
      std::move(deeper), std::get<2>(head), std::get<3>(head),
      std::get<5>(head), std::get<6>(head), sel,
  };
}

void PassOrder::RekeyUser(int32_t g) {
  int32_t sel = pending_.groups()[g].sel;
  if (user_keys_[g]) users_[sel].erase(*user_keys_[g]);
  user_keys_[g] = MakeUserKey(g);
  if (user_keys_[g]) users_[sel].insert(*user_keys_[g]);
}

void PassOrder::RekeyQueue(int32_t sel) {
  if (queue_keys_[sel]) queue_set_.erase(*queue_keys_[sel]);
  queue_keys_[sel] = MakeQueueKey(sel);
  if (queue_keys_[sel]) queue_set_.insert(*queue_keys_[sel]);
}

PendingEntry* PassOrder::Next() {
  while (!queue_set_.empty()) {
    int32_t sel = std::get<11>(*queue_set_.begin());
    // Re-validate the best user of the best queue: a hidden class may have moved its head.
    bool changed = false;
    while (!users_[sel].empty()) {
      int32_t g = std::get<7>(*users_[sel].begin());
      std::optional<UserKey> fresh = MakeUserKey(g);
      if (fresh && *fresh == *user_keys_[g]) break;
      RekeyUser(g);
      changed = true;
    }
    if (changed || MakeQueueKey(sel) != queue_keys_[sel]) {
      RekeyQueue(sel);
      continue;
    }
    current_ = std::get<7>(*users_[sel].begin());
    return pending_.Head(current_);
  }
  return nullptr;
}

void PassOrder::Done() {
  if (current_ < 0) return;
  int32_t sel = pending_.groups()[current_].sel;
  RekeyUser(current_);  // re-reads the head and the user's share
  RekeyQueue(sel);      // re-reads the queue's share and its best user
  current_ = -1;
}

}  // namespace corral::sched
