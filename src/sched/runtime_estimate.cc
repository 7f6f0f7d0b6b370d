#include "sched/runtime_estimate.h"

#include <algorithm>
#include <cmath>

namespace corral::sched {

EndedJob EndedJobOf(const Job& job) {
  EndedJob e;
  e.user = job.owner;
  e.name = job.spec.name;
  e.queue = job.spec.queue;
  e.gpus = int64_t{std::max(1, job.spec.replicas)} * job.spec.per_replica.WholeGpus();
  for (const Run& r : job.runs) {
    // As ToPendingJob: started_at 0 is "never started" in the head, but a run placed at the
    // simulator's t = 0 starts at 0.
    bool ran = r.started_at > 0 || r.scheduled_at == 0;
    if (IsRunOver(r.state) && ran && r.ended_at > r.started_at) {
      e.run_ms += r.ended_at - r.started_at;
    }
  }
  return e;
}

void RuntimeEstimator::Update(Mean& m, double log_ms) const {
  ++m.n;
  double w = std::max(config_.weight, 1.0 / static_cast<double>(m.n));
  m.log_ms += w * (log_ms - m.log_ms);
}

void RuntimeEstimator::Observe(const EndedJob& e) {
  if (e.run_ms <= 0) return;
  ++observed_;
  double x = std::log(static_cast<double>(e.run_ms));
  if (!e.user.empty() && !e.name.empty()) Update(by_user_name_[{e.user, e.name}], x);
  if (!e.user.empty()) Update(by_user_[e.user], x);
  Update(by_queue_gpus_[{e.queue, e.gpus}], x);
  Update(by_queue_[e.queue], x);
  if (!e.user.empty()) {
    const int w = config_.window;
    if (config_.dist_by_user_name && !e.name.empty()) {
      Remember(recent_by_user_name_[{e.user, e.name}], e.run_ms, w);
    }
    if (config_.dist_by_user_gpus) Remember(recent_by_user_gpus_[{e.user, e.gpus}], e.run_ms, w);
    if (config_.dist_by_user) Remember(recent_by_user_[e.user], e.run_ms, w);
    if (config_.global_prior_jobs > 0) Remember(recent_all_, e.run_ms, config_.global_window);
    if (config_.requeue_window > 0) {
      Remember(requeue_by_user_[e.user], e.run_ms, config_.requeue_window);
    }
  }
}

void RuntimeEstimator::Remember(Recent& r, DurationMs run_ms, int window_jobs) const {
  ++r.n;
  const size_t window = static_cast<size_t>(std::max(1, window_jobs));
  if (r.ms.size() < window) {
    r.ms.push_back(run_ms);
    return;
  }
  r.ms[r.next] = run_ms;
  r.next = (r.next + 1) % window;
}

namespace {

// Run times with weights, and their weights' sum.
struct WeightedRunTimes {
  std::vector<std::pair<DurationMs, double>> v;
  double total = 0;
};

// A ring of the latest run times (`next`: where the next goes once full), the newest weighing
// 1 and each older one (1 - recency) times the next newer: a user's next job is most like
// their last ones.
WeightedRunTimes ByRecency(const std::vector<DurationMs>& ring, size_t next, double recency) {
  const size_t m = ring.size();
  const double keep = 1.0 - std::clamp(recency, 0.0, 0.99);
  WeightedRunTimes out;
  out.v.reserve(m);
  double w = 1;
  for (size_t age = 0; age < m; ++age) {
    // The ring's newest is just before `next` once full, else the last pushed.
    size_t at = (next + m - 1 - age) % m;
    out.v.emplace_back(ring[at], w);
    out.total += w;
    w *= keep;
  }
  return out;
}

// `w` given that the run time exceeds done_ms: only the longer ones (the owner's longer
// history instead where `owner_longer` is given), and the cluster's longer ones (`all`)
// weighing `global_prior_jobs` in all.
void GivenDone(DurationMs done_ms, const std::vector<DurationMs>* owner_longer,
               const std::vector<DurationMs>& all, double global_prior_jobs, WeightedRunTimes* w) {
  if (owner_longer != nullptr) {
    w->v.clear();
    for (DurationMs x : *owner_longer) w->v.emplace_back(x, 1.0);
  }
  std::erase_if(w->v, [&](const auto& x) { return x.first <= done_ms; });
  w->total = 0;
  for (const auto& x : w->v) w->total += x.second;
  size_t longer = 0;
  for (DurationMs x : all) longer += x > done_ms;
  if (longer == 0) return;
  const double each = global_prior_jobs / static_cast<double>(longer);
  for (DurationMs x : all) {
    if (x > done_ms) w->v.emplace_back(x, each);
  }
  w->total += global_prior_jobs;
}

}  // namespace

RunTimeQuantiles RuntimeEstimator::Quantiles(const std::string& user, const std::string& name,
                                             int64_t gpus, DurationMs time_limit_ms,
                                             DurationMs done_ms) const {
  RunTimeQuantiles out;
  if (user.empty()) return out;
  // Most specific first; a key with fewer than min_jobs answers only if no other has enough.
  const Recent* keys[3] = {nullptr, nullptr, nullptr};
  if (config_.dist_by_user_name && !name.empty()) {
    auto it = recent_by_user_name_.find({user, name});
    if (it != recent_by_user_name_.end()) keys[0] = &it->second;
  }
  if (config_.dist_by_user_gpus) {
    auto it = recent_by_user_gpus_.find({user, gpus});
    if (it != recent_by_user_gpus_.end()) keys[1] = &it->second;
  }
  if (config_.dist_by_user) {
    auto it = recent_by_user_.find(user);
    if (it != recent_by_user_.end()) keys[2] = &it->second;
  }
  const Recent* use = nullptr;
  for (const Recent* k : keys) {
    if (k && (k->n >= config_.min_jobs || use == nullptr)) use = k;
    if (k && k->n >= config_.min_jobs) break;
  }
  if (!use || use->ms.empty()) return out;
  WeightedRunTimes w = ByRecency(use->ms, use->next, config_.recency);
  if (done_ms > 0 && (config_.global_prior_jobs > 0 || config_.requeue_window > 0)) {
    // The owner's longer history (any size): a window of 16 seldom holds a long job's peers.
    static const std::vector<DurationMs> kNone;
    const std::vector<DurationMs>* owner = nullptr;
    if (config_.requeue_window > 0) {
      auto it = requeue_by_user_.find(user);
      owner = it != requeue_by_user_.end() ? &it->second.ms : &kNone;
    }
    GivenDone(done_ms, owner, recent_all_.ms, config_.global_prior_jobs, &w);
    if (w.v.empty()) {
      // It outlived every job known: guessed to run as long again.
      out.at.fill(time_limit_ms > 0 ? std::min(2 * done_ms, time_limit_ms) : 2 * done_ms);
      return out;
    }
  }
  std::sort(w.v.begin(), w.v.end());
  out = QuantilesOfAscending(
      w.v.size(), w.total, [&](size_t k) { return w.v[k].first; },
      [&](size_t k) { return w.v[k].second; });
  if (time_limit_ms > 0) {
    for (DurationMs& x : out.at) x = std::min(x, time_limit_ms);
  }
  return out;
}

namespace {

DurationMs Answer(double log_ms) {
  return std::max<DurationMs>(1, static_cast<DurationMs>(std::llround(std::exp(log_ms))));
}

}  // namespace

DurationMs RuntimeEstimator::OwnEstimate(const std::string& user, const std::string& name) const {
  if (config_.by_user_name && !user.empty() && !name.empty()) {
    auto it = by_user_name_.find({user, name});
    if (it != by_user_name_.end()) return Answer(it->second.log_ms);
  }
  if (config_.by_user && !user.empty()) {
    auto it = by_user_.find(user);
    if (it != by_user_.end()) return Answer(it->second.log_ms);
  }
  return 0;
}

int64_t RuntimeEstimator::OwnerJobs(const std::string& user, const std::string& name) const {
  if (user.empty()) return 0;
  int64_t n = 0;
  if (config_.by_user_name && !name.empty()) {
    if (auto it = by_user_name_.find({user, name}); it != by_user_name_.end()) n = it->second.n;
  }
  if (config_.by_user) {
    // The distribution (Quantiles) falls back to the user's whole window when its (user,
    // name) key has few jobs.
    if (auto it = by_user_.find(user); it != by_user_.end()) n = std::max(n, it->second.n);
  }
  return n;
}

DurationMs RuntimeEstimator::Estimate(const std::string& user, const std::string& name,
                                      const std::string& queue, int64_t gpus) const {
  auto answer = [](const Mean& m) { return Answer(m.log_ms); };
  if (DurationMs own = OwnEstimate(user, name); own > 0) return own;
  if (config_.by_queue_gpus) {
    auto it = by_queue_gpus_.find({queue, gpus});
    if (it != by_queue_gpus_.end()) return answer(it->second);
  }
  if (config_.by_queue) {
    auto it = by_queue_.find(queue);
    if (it != by_queue_.end()) return answer(it->second);
  }
  return 0;
}

DurationMs RuntimeEstimator::Predict(const std::string& user, const std::string& name,
                                     const std::string& queue, int64_t gpus,
                                     DurationMs time_limit_ms) const {
  if (time_limit_ms <= 0) return Estimate(user, name, queue, gpus);
  // The limit is the job's own word; a queue's history is other people's jobs. Only the
  // owner's own history refines it (Philly at 640 GPUs with limits: 4.72 h with the limit
  // alone, 4.90 h when the queue's history could undercut it).
  DurationMs own = OwnEstimate(user, name);
  return own > 0 ? std::min(own, time_limit_ms) : time_limit_ms;
}

}  // namespace corral::sched
