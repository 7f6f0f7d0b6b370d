// Run-time predictions from what a scheduler knows at submit time: the history of jobs that
// ended in the cluster, per (user, job name), per user and per queue (or (queue, GPU count)),
// as Helios' QSSF and Lucid learn them, and the job's own time limit. Never a job's true
// duration: the estimator sees a job only once it has ended, so a prediction uses nothing a
// real head would not have.
//
// Pure data, fed by its driver: the head calls Observe(EndedJobOf(job)) when a job ends and
// passes the estimator to ToPendingJob (job_input.h) when it (re)queues a job; the simulator
// does the same. No clock, no I/O; the same sequence of calls gives the same estimates.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/job.h"
#include "core/time.h"
#include "sched/run_time_quantiles.h"

namespace corral::sched {

// What the estimator learns from: one ended job.
struct EndedJob {
  std::string user;
  std::string name;
  std::string queue;
  int64_t gpus = 0;
  DurationMs run_ms = 0;  // wall time its runs held their GPUs, summed over runs
};

// The history entry of a job that is over (any terminal state): its runs' summed wall time
// (ended_at - started_at of every run that started and ended). A job that never ran has 0.
EndedJob EndedJobOf(const Job& job);

// Which histories to consult, most specific first; the first with any history answers.
// Defaults from the whole Philly trace at 640 GPUs (docs/simulation.md, "Why the
// defaults"; Philly has only queues): the queue's history beat (queue, GPU count)'s, whose
// keys see fewer jobs, and a weight of 0.5 beat 0.05, 0.25, 0.75 and 1.
struct EstimatorConfig {
  bool by_user_name = true;    // (user, job name); jobs without a name skip it
  bool by_user = true;         // user; jobs without a user skip it
  bool by_queue_gpus = false;  // (queue, GPU count): a team's jobs of one size
  bool by_queue = true;        // queue: a team's jobs
  // Weight of the newest job in the running (exponentially weighted) mean of log run times;
  // the first 1/weight jobs of a key are averaged equally. The log makes the estimate a
  // geometric mean: run times span seconds to months, and one long outlier must not make a
  // user's next hundred short jobs look long.
  double weight = 0.5;
  // Run-time distributions (Quantiles): the last `window` run times of each (user, name),
  // (user, GPU count) and user; the most specific key that has seen at least `min_jobs`
  // answers (else the most specific with any). The window is the recency: a user's habits
  // change over weeks. Defaults tuned on the first half of philly-users (docs/simulation.md).
  bool dist_by_user_name = true;
  bool dist_by_user_gpus = true;
  bool dist_by_user = true;
  int window = 16;
  int min_jobs = 4;
  // Weight of each run time against the next newer one is 1 - recency (0: all alike).
  double recency = 0;
  // A job that has already run (requeued after a preemption) gets its distribution
  // conditioned on the run time it has had when it is (re)queued: the owner's run times
  // longer than that, and the cluster's (the last `global_window` ended jobs of every user)
  // longer than that counted as `global_prior_jobs` jobs in all. A user's window seldom holds
  // many jobs as long as a long requeued one; the cluster's long jobs tell what is left of it.
  // 0: the owner's points alone, conditioned by the scheduler as it orders. Off by default:
  // on the first half of philly-users every weight tried lengthened the average JCT (the
  // cluster's long jobs rank a user's long job worse than the user's own; docs/simulation.md).
  double global_prior_jobs = 0;
  int global_window = 4096;
  // > 0: a requeued job's distribution is conditioned (as above) on the owner's last
  // `requeue_window` run times of any size and name instead of its usual key's window. Off by
  // default, for the same reason.
  int requeue_window = 0;
};

class RuntimeEstimator {
 public:
  explicit RuntimeEstimator(EstimatorConfig config = {}) : config_(config) {}

  // Learns from an ended job. Jobs that held no GPU time (run_ms <= 0) teach nothing.
  void Observe(const EndedJob& ended);

  // The predicted run time (wall ms) of a job of this user, name, queue and size; 0: no
  // history applies.
  DurationMs Estimate(const std::string& user, const std::string& name, const std::string& queue,
                      int64_t gpus) const;

  // With a time limit: the owner's own history ((user, name), else user) bounded by the limit
  // (a run is killed there), else the limit alone: a queue's history (other people's jobs)
  // never undercuts the job's own limit. Without a limit: Estimate(...).
  DurationMs Predict(const std::string& user, const std::string& name, const std::string& queue,
                     int64_t gpus, DurationMs time_limit_ms) const;

  // The distribution of the run time of a job of this user, name and size: quantile points
  // of its owner's recent ended jobs' run times (see EstimatorConfig::window), each bounded by
  // the time limit (> 0). Empty: no user, or no history of that user.
  // With done_ms > 0 and global_prior_jobs or requeue_window > 0: the distribution given that
  // the run time exceeds done_ms (see EstimatorConfig::global_prior_jobs).
  RunTimeQuantiles Quantiles(const std::string& user, const std::string& name, int64_t gpus,
                             DurationMs time_limit_ms, DurationMs done_ms = 0) const;

  // Whether a job of this user and name would be predicted from its (user, name) history.
  bool HasNameHistory(const std::string& user, const std::string& name) const {
    return config_.by_user_name && !user.empty() && !name.empty() &&
           by_user_name_.count({user, name}) > 0;
  }

  // Ended jobs of `user` its predictions of a job of this name rest on: its (user, name)
  // history's, else its user history's (0: none; a prediction then comes from the queue).
  int64_t OwnerJobs(const std::string& user, const std::string& name) const;

  int64_t observed() const { return observed_; }

 private:
  struct Mean {
    double log_ms = 0;
    int64_t n = 0;
  };
  // The last `window` run times of a key (a ring) and how many it has seen.
  struct Recent {
    std::vector<DurationMs> ms;
    size_t next = 0;
    int64_t n = 0;
  };
  void Update(Mean& m, double log_ms) const;
  void Remember(Recent& r, DurationMs run_ms, int window) const;
  DurationMs OwnEstimate(const std::string& user, const std::string& name) const;

  EstimatorConfig config_;
  std::map<std::pair<std::string, std::string>, Mean> by_user_name_;
  std::map<std::string, Mean> by_user_;
  std::map<std::pair<std::string, int64_t>, Mean> by_queue_gpus_;
  std::map<std::string, Mean> by_queue_;
  std::map<std::pair<std::string, std::string>, Recent> recent_by_user_name_;
  std::map<std::pair<std::string, int64_t>, Recent> recent_by_user_gpus_;
  std::map<std::string, Recent> recent_by_user_;
  Recent recent_all_;                              // every user's, global_window of them
  std::map<std::string, Recent> requeue_by_user_;  // requeue_window of them
  int64_t observed_ = 0;
};

}  // namespace corral::sched
