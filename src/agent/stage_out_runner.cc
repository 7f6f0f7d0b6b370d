#include "agent/stage_out_runner.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <mutex>
#include <thread>

#include "agent/data/stage_out_copy.h"
#include "core/byte_units.h"

namespace corral::agent {
struct StageOutRunner::Task {
  std::string to;
  StageOutProgress progress;  // its own atomics: read without the lock
  std::mutex mu;
  bool done = false;      // GUARDED_BY(mu)
  StageOutResult result;  // GUARDED_BY(mu)
};

StageOutRunner::StageOutRunner(bool as_owner, std::string node)
    : as_owner_(as_owner), node_(std::move(node)) {}

void StageOutRunner::Start(const RunKey& key, const RunOrder& order) {
  if (tasks_.count(key) > 0) return;
  auto task = std::make_shared<Task>();
  tasks_.emplace(key, task);
  const std::string from = order.stage_out.dir;
  const int32_t replicas =
      std::max<int32_t>(1, static_cast<int32_t>(order.layout.placement.size()));
  const std::string to = StageOutTarget(order.stage_out, order.replica, replicas);
  task->to = to;
  std::optional<UnixIdentity> who;
  std::string refused;
  if (as_owner_) {  // looked up here, not in the thread: getpwnam is not for every thread
    auto id = IdentityForJob(order.user, node_, /*allow_root=*/true);
    if (id.ok()) {
      who = *id;
    } else {
      refused = id.status().message();
    }
  }
  spdlog::info("stage-out of run {} replica {}: {} to {}", key.run_id, key.replica, from, to);
  // Detached: the thread holds its task; the runner may forget it before the copy ends.
  std::thread([task, from, to, who, refused, key] {
    StageOutResult r;
    if (!refused.empty()) {
      r = StageOutResult{true, 0, 0, 0, from, to, refused};
    } else {
      r = CopyStageOut(from, to, who ? &*who : nullptr, &task->progress);
    }
    if (r.error.empty()) {
      spdlog::info("stage-out of run {} replica {}: {} bytes, {} files in {} ms", key.run_id,
                   key.replica, r.bytes, r.files, r.ms);
    } else {
      spdlog::error("stage-out of run {} replica {} failed: {}", key.run_id, key.replica, r.error);
    }
    std::lock_guard lock(task->mu);
    task->result = std::move(r);
    task->done = true;
  }).detach();
}

std::optional<StageOutResult> StageOutRunner::Result(const RunKey& key) const {
  auto it = tasks_.find(key);
  if (it == tasks_.end()) return std::nullopt;
  std::lock_guard lock(it->second->mu);
  if (!it->second->done) return std::nullopt;
  return it->second->result;
}

int32_t StageOutRunner::Percent(const RunKey& key) const {
  auto it = tasks_.find(key);
  if (it == tasks_.end()) return -1;
  const int64_t total = it->second->progress.total;
  const int64_t copied = it->second->progress.copied;
  return total > 0 ? static_cast<int32_t>(std::min<int64_t>(100, copied * 100 / total)) : 0;
}

std::string StageOutRunner::Note(const RunKey& key) const {
  auto it = tasks_.find(key);
  if (it == tasks_.end()) return "";
  return "staging out to " + it->second->to + " on " + node_ + ": " + std::to_string(Percent(key)) +
         "% (" + FormatBytes(it->second->progress.copied) + " of " +
         FormatBytes(it->second->progress.total) + ")";
}

bool WantsStageOut(const RunOrder& order, int32_t pgid, bool running, const std::string& error) {
  return !order.stage_out.empty() && pgid > 0 && !running && error.empty();
}

}  // namespace corral::agent
