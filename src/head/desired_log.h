// One node's desired-state version, and which jobs' orders changed at each of its recent
// versions, so that a sync from a recent version is answered with those jobs' orders only
// (O(changes)), not with the node's whole desired state. Memory only: a new head (a new
// epoch) starts every node at epoch << 32 with no history, and answers older versions in full.
#pragma once

#include <utility>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/job.h"

namespace corral::head {

class DesiredLog {
 public:
  explicit DesiredLog(uint64_t version = 0) : version_(version), since_(version) {}

  uint64_t version() const { return version_; }

  // The orders of `job` on this node changed.
  void Changed(JobId job) {
    changes_.emplace_back(++version_, job);
    if (changes_.size() > 2 * kKept) {  // amortised: drop the older half at once
      changes_.erase(changes_.begin(), changes_.end() - kKept);
      since_ = changes_.front().first - 1;
    }
  }
  // Something beyond single jobs changed (the node registered again): every older version is
  // answered in full.
  void ChangedAll() {
    changes_.clear();
    since_ = ++version_;
  }

  // The jobs whose orders changed after version `from`, ascending and distinct; nullopt when
  // this log cannot tell (too old, or not a version of this log): answer in full.
  std::optional<std::vector<JobId>> ChangedSince(uint64_t from) const {
    if (from < since_ || from > version_) return std::nullopt;
    auto first = std::upper_bound(changes_.begin(), changes_.end(), from,
                                  [](uint64_t v, const auto& c) { return v < c.first; });
    std::vector<JobId> jobs;
    for (auto it = first; it != changes_.end(); ++it) jobs.push_back(it->second);
    std::sort(jobs.begin(), jobs.end());
    jobs.erase(std::unique(jobs.begin(), jobs.end()), jobs.end());
    return jobs;
  }

 private:
  // Versions a delta can start from: an agent is a few versions behind at most, unless it was
  // away, and then a full answer is as cheap as a long delta.
  static constexpr size_t kKept = 64;

  uint64_t version_;
  uint64_t since_;                                   // the oldest version a delta can start from
  std::vector<std::pair<uint64_t, JobId>> changes_;  // (version it made, job), ascending
};

}  // namespace corral::head
