// Recent run times for start-time estimates (run_history.h).
#include "sched/run_history.h"

#include <algorithm>
#include <cmath>

#include "sched/order_policy.h"

namespace corral::sched {

void RunHistory::Removed(const PendingJob& job, int64_t gpus, TimeMs started_at) {
  const int64_t g = std::max<int64_t>(1, gpus);
  ending_[job.id] = {job.user,
                     job.queue,
                     std::max<int64_t>(1, TotalGpus(job)),
                     job.attained_ms / g,
                     started_at,
                     job.run_quantiles,
                     job.predicted_ms};
}

DurationMs ApplyRemainingRule(RemainingRule rule, DurationMs centre_ms, DurationMs done_ms) {
  const DurationMs elapsed = std::max(done_ms, kElapsedFloorMs);
  switch (rule) {
    case RemainingRule::kCentre:
      return std::max<DurationMs>(1, centre_ms);
    case RemainingRule::kElapsed:
      return elapsed;
    case RemainingRule::kBlend: {
      const double centre = static_cast<double>(std::max<DurationMs>(1, centre_ms));
      return std::max<DurationMs>(
          1, std::llround(std::sqrt(centre) * std::sqrt(static_cast<double>(elapsed))));
    }
  }
  return std::max<DurationMs>(1, centre_ms);
}

void RunHistory::Keep(Runs& runs, DurationMs run_ms) {
  runs.push_back(run_ms);
  while (static_cast<int>(runs.size()) > kRunHistoryWindow) runs.pop_front();
}

void RunHistory::Ended(TimeMs now) {
  for (const auto& [id, r] : ending_) {
    const DurationMs run_ms = r.before_ms + std::max<DurationMs>(0, now - r.started_at);
    if (run_ms <= 0) continue;
    Score(r, run_ms);  // before the run joins the history its centre counts on
    if (!r.user.empty()) {
      Keep(by_user_gpus_[{r.user, r.gpus}], run_ms);
      Keep(by_user_[r.user], run_ms);
    }
    Keep(by_queue_gpus_[{r.queue, r.gpus}], run_ms);
    Keep(by_queue_[r.queue], run_ms);
  }
  ending_.clear();
}

std::vector<const RunHistory::Runs*> RunHistory::KeysOf(const std::string& user,
                                                        const std::string& queue,
                                                        int64_t gpus) const {
  std::vector<const Runs*> keys;
  auto add = [&keys](const auto& map, const auto& key) {
    auto it = map.find(key);
    if (it != map.end()) keys.push_back(&it->second);
  };
  if (!user.empty()) {
    add(by_user_gpus_, std::pair<std::string, int64_t>{user, gpus});
    add(by_user_, user);
  }
  add(by_queue_gpus_, std::pair<std::string, int64_t>{queue, gpus});
  add(by_queue_, queue);
  return keys;
}

std::vector<const RunHistory::Runs*> RunHistory::KeysOf(const PendingJob& job) const {
  return KeysOf(job.user, job.queue, std::max<int64_t>(1, TotalGpus(job)));
}

DurationMs RunHistory::RemainingMs(const PendingJob& job, DurationMs done_ms) const {
  return RemainingByKeys(KeysOf(job), done_ms);
}

DurationMs RunHistory::RemainingByKeys(const std::vector<const Runs*>& keys, DurationMs done_ms) {
  for (const Runs* runs : keys) {
    if (static_cast<int>(runs->size()) < kRunHistoryMinRuns) continue;
    double log_left = 0;
    int longer = 0;
    for (DurationMs run_ms : *runs) {
      if (run_ms <= done_ms) continue;
      log_left += std::log(static_cast<double>(run_ms - done_ms));
      ++longer;
    }
    if (longer == 0) continue;  // it outlived them all: a broader key may know longer runs
    return std::max<DurationMs>(1, std::llround(std::exp(log_left / longer)));
  }
  return kUnknownTime;
}

namespace {

// The centre an estimate counted on for a run that had run `done_ms` (EstimatedRemainingMs in
// estimate_state.cc, without a time limit): its owner's conditional mean, else its keys'
// recent runs, else its prediction (as long again as it has run, once outlived).
DurationMs CentreLeftMs(const SharedQuantiles& quantiles, DurationMs recent_ms,
                        DurationMs predicted_ms, DurationMs done_ms) {
  if (!quantiles.empty()) {
    return ConditionalRemainingMs(quantiles.get(), done_ms, PredictionRule::kMean, 0);
  }
  if (recent_ms != kUnknownTime) return recent_ms;
  return PredictionLeftMs(predicted_ms, done_ms);
}

}  // namespace

void RunHistory::Score(const Removal& r, DurationMs run_ms) {
  const std::vector<const Runs*> keys = KeysOf(r.user, r.queue, r.gpus);
  RuleScores& scores = r.user.empty() ? scores_by_queue_[r.queue] : scores_by_user_[r.user];
  for (DurationMs done = 0; done < run_ms; done = done == 0 ? kMinute : 4 * done) {
    const DurationMs centre = CentreLeftMs(
        r.run_quantiles, r.run_quantiles.empty() ? RemainingByKeys(keys, done) : kUnknownTime,
        r.predicted_ms, done);
    if (centre <= 0) continue;  // nothing was counted on
    const double left = std::log(static_cast<double>(run_ms - done));
    for (int i = 0; i < kRemainingRules; ++i) {
      const DurationMs counted = ApplyRemainingRule(static_cast<RemainingRule>(i), centre, done);
      const double miss = std::log(static_cast<double>(counted)) - left;
      const double loss = miss < 0 ? -kRuleLateWeight * miss : miss;
      scores.loss[i] = (1 - kRuleScoreWeight) * scores.loss[i] + kRuleScoreWeight * loss;
    }
    ++scores.points;
  }
}

RemainingRule RunHistory::RuleFor(const PendingJob& job) const {
  const auto& by = job.user.empty() ? scores_by_queue_ : scores_by_user_;
  auto it = by.find(job.user.empty() ? job.queue : job.user);
  if (it == by.end() || it->second.points < kRuleMinPoints) return RemainingRule::kCentre;
  int best = 0;
  for (int i = 1; i < kRemainingRules; ++i) {
    if (it->second.loss[i] < it->second.loss[best]) best = i;
  }
  return static_cast<RemainingRule>(best);
}

std::vector<std::vector<DurationMs>> RunHistory::KeptFor(const PendingJob& job) const {
  std::vector<std::vector<DurationMs>> out;
  for (const Runs* runs : KeysOf(job)) out.emplace_back(runs->begin(), runs->end());
  return out;
}

}  // namespace corral::sched
