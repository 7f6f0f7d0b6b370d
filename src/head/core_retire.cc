// Retirement (DESIGN §9): jobs that ended longer ago than the retention window leave memory in
// one JobsRetired change. Their rows stay in the store, which the shell reads for them on
// demand; a tombstone (ClusterState::retired) keeps each final state for dependencies, and
// the usage of their runs stays in fair share as per-day sums.
#include <algorithm>

#include "core/spec.h"
#include "head/head_core.h"

namespace corral::head {
namespace {

// One change retires at most this many jobs (the rest at the next tick): answers wait for the
// commit that marks them, about 0.1 s for 5,000 rows on SQLite or PostgreSQL here.
constexpr size_t kMaxRetiredPerChange = 5000;

}  // namespace

void HeadCore::RetireEnded(TimeMs now) {
  if (config_.retain_finished_ms <= 0 || now < agenda_.next_retire_check) return;
  bool first = agenda_.next_retire_check == 0;
  agenda_.next_retire_check =
      now + std::clamp(config_.retain_finished_ms / 10, kSecond, 10 * kMinute);
  // Not at a leadership's first tick: its first answers would wait for that commit.
  if (first) return;
  TimeMs cutoff = now - config_.retain_finished_ms;
  bool waits_on_snapshot = false;
  // Over, long enough ago, and its row in the store is the job as it ended: a job changed since
  // the last snapshot rows waits for the next one (the row is all that will be left of it).
  auto retirable = [&](const Job& job) {
    if (!IsTerminal(job.state) || job.ended_at > cutoff) return false;
    if (dirty_.jobs.count(job.id)) {
      waits_on_snapshot = true;
      return false;
    }
    return true;
  };
  std::vector<JobId> out;
  for (auto it = state_.jobs.begin();
       it != state_.jobs.end() && out.size() < kMaxRetiredPerChange;) {
    if (!it->second.IsArrayElement()) {
      if (retirable(it->second)) out.push_back(it->first);
      ++it;
      continue;
    }
    // An array leaves whole (its elements' ids follow its own), so that its id keeps meaning
    // all of it.
    JobId array = it->second.array_id;
    std::vector<JobId> elements;
    bool all = true;
    for (; it != state_.jobs.end() && it->second.array_id == array; ++it) {
      all = retirable(it->second) && all;
      elements.push_back(it->first);
    }
    if (all) out.insert(out.end(), elements.begin(), elements.end());
  }
  agenda_.snapshot |= waits_on_snapshot;
  if (out.size() >= kMaxRetiredPerChange) agenda_.next_retire_check = now;  // more at the next tick
  if (!out.empty()) Emit(Caller::System(), now, JobsRetired{out});
}

void HeadCore::OnRetired(const JobsRetired& e) {
  for (JobId id : e.jobs) {
    explained_.Ended(id);
    admission_.Forget(id);
  }
}

std::optional<JobState> HeadCore::RetiredState(JobId id) const {
  auto it = state_.retired.find(id);
  if (it == state_.retired.end()) return std::nullopt;
  return it->second;
}

Status HeadCore::UnknownJob(JobId id) const {
  auto it = state_.retired.find(id);
  if (it == state_.retired.end()) return NotFound("no job " + std::to_string(id));
  return FailedPrecondition("job " + std::to_string(id) + " ended (" + JobStateName(it->second) +
                            ") more than " + FormatDuration(config_.retain_finished_ms) +
                            " ago and was retired: it can only be read");
}

Job HeadCore::JobAsSeenBy(const Caller& by, Job job) const {
  if (!MayManageJob(by, job)) {
    job.spec.env.clear();
    for (Run& run : job.runs) {
      for (Step& step : run.steps) step.env.clear();
    }
  }
  return job;
}

}  // namespace corral::head
