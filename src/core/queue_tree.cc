#include "core/queue_tree.h"

namespace corral {

namespace {

// The nearest ancestor of `name` with a quota, with `q` in place of its configured namesake;
// nullptr: none.
const QueueConfig* QuotaParent(const std::string& name, const QueueConfig& q,
                               const std::map<std::string, QueueConfig>& queues) {
  for (const std::string& parent : QueueAncestors(name)) {
    const QueueConfig* p = nullptr;
    if (parent == q.name) {
      p = &q;
    } else if (auto it = queues.find(parent); it != queues.end()) {
      p = &it->second;
    }
    if (p != nullptr && p->quota_gpus > 0) return p;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> QueueAncestors(const std::string& name) {
  std::vector<std::string> out;
  for (size_t slash = name.rfind('/'); slash != std::string::npos && slash > 0;
       slash = name.rfind('/', slash - 1)) {
    out.push_back(name.substr(0, slash));
  }
  return out;
}

Status ValidateQuotaInTree(const QueueConfig& q, const std::map<std::string, QueueConfig>& queues) {
  if (const QueueConfig* p = QuotaParent(q.name, q, queues); p && q.quota_gpus > p->quota_gpus) {
    return InvalidArgument("field 'quota_gpus': " + std::to_string(q.quota_gpus) +
                           " exceeds the quota of parent queue '" + p->name + "' (" +
                           std::to_string(p->quota_gpus) +
                           " GPUs): a sub-queue's quota is part of its parent's");
  }
  const std::string prefix = q.name + "/";
  for (auto it = queues.lower_bound(prefix);
       it != queues.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    const QueueConfig& sub = it->second;
    const QueueConfig* p = QuotaParent(sub.name, q, queues);
    if (p && sub.quota_gpus > p->quota_gpus) {
      return InvalidArgument("field 'quota_gpus': " + std::to_string(q.quota_gpus) +
                             " would leave sub-queue '" + sub.name + "' with a quota of " +
                             std::to_string(sub.quota_gpus) +
                             " GPUs, above the quota of its parent '" + p->name + "' (" +
                             std::to_string(p->quota_gpus) + " GPUs)");
    }
  }
  return Status::Ok();
}

}  // namespace corral
