// Queues and fair share (DESIGN §6.2, §6.3): quota, limit and weight per hierarchical queue
// ("org/team"), current allocation per queue and per user, and usage decayed with a
// half-life. Pure data; owned by the Scheduler.
//
// A queue's share is dominant-resource: for GPUs, cpus and memory, (allocation + decayed
// usage / tau) divided by its entitlement (its quota in GPUs, at least 1, and the cluster's
// cpus and memory per GPU times that), the largest of the three, divided by its weight; tau
// is half_life / ln 2, so a constant allocation a converges to a share of 2a / entitlement.
// Usage integrates the allocation over time with the trapezoid rule between passes (the
// driver reports run ends without a time).
//
// Limits and allocations are hierarchical: a run counts against its queue and every
// ancestor ("a/b" counts in "a"); a configured limit on any of them caps the run. Unknown
// queues behave like default-configured ones (quota 0, no limit, weight 1).
//
// Quotas are hierarchical too. A queue's quota levels are the queue itself and each ancestor
// with a quota (> 0): a parent's quota is shared by its subtree, which a child may use beyond
// its own quota (borrowing its siblings' idle share) while the parent stays within its own.
// A parent without a quota is only a name (and a limit): its children are compared as if
// they were its parent's. Between a job of queue L and a run of queue M the levels that count
// are the two just below their lowest common quota level (QuotaMeet): the run is borrowed if
// its level is over its quota, and the job may reclaim it if its level stays within its own.
// Flat queues meet at the root: L against M, each against its own quota. Fair share compares
// siblings at each quota level from the top (FairPath), as Slurm's fair tree does.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/node.h"
#include "core/resources.h"
#include "core/time.h"

namespace corral::sched {

class QueueBook {
 public:
  explicit QueueBook(DurationMs half_life_ms) : half_life_ms_(half_life_ms) {}

  void Set(const QueueConfig& config);
  int32_t Id(const std::string& name);  // creates the queue (and its ancestors) if unknown
  int32_t FindId(const std::string& name) const;  // -1: unknown
  const std::string& Name(int32_t q) const { return queues_[q].config.name; }
  int32_t UserId(int32_t q, const std::string& user);
  int32_t size() const { return static_cast<int32_t>(queues_.size()); }

  // Adds (sign +1) or removes a run's total resources: queue, ancestors, user.
  // GPUs in milli-GPUs: a share of a GPU counts its fraction. An interactive session's GPUs
  // also count in its user's interactive GPUs in the queue.
  void Charge(int32_t q, int32_t user, int64_t gpu_milli, int64_t cpu, int64_t mem, int sign,
              bool interactive = false);

  // Integrates usage up to `now` and decays it.
  void Advance(TimeMs now, int64_t cluster_gpus, int64_t cluster_cpu, int64_t cluster_mem);
  // Adds usage the book did not integrate: `gpus`, `cpu` and `mem` held over [from, to],
  // decayed to `now`, into the queue, its ancestors and the user. Returns false (and adds
  // nothing) without a half-life or for an empty period. After the last one, AnchorAt(now).
  // REQUIRES: from <= to <= now, and no Advance after `now` yet.
  bool AddPast(int32_t q, int32_t user, int64_t gpu_milli, int64_t cpu, int64_t mem, TimeMs from,
               TimeMs to, TimeMs now);
  // Usage is from now on taken as integrated up to `now`, the current allocation included,
  // so the next Advance decays from there.
  void AnchorAt(TimeMs now);

  // GPUs allocated, shares rounded up to a whole GPU; AllocMilli: exact.
  int64_t AllocGpus(int32_t q) const { return (queues_[q].gpus + kGpuMilli - 1) / kGpuMilli; }
  int64_t AllocMilli(int32_t q) const { return queues_[q].gpus; }
  int32_t Quota(int32_t q) const { return queues_[q].config.quota_gpus; }
  // The age bound of the queue: its own max_wait_ms, else its nearest ancestor's; 0: none set.
  DurationMs MaxWait(int32_t q) const;
  bool BelowQuota(int32_t q) const {
    return queues_[q].gpus < int64_t{queues_[q].config.quota_gpus} * kGpuMilli;
  }
  // Would `gpus` more stay within the limits of the queue and its ancestors?
  bool WithinLimit(int32_t q, int64_t gpus) const;
  // The smallest limit over the queue and its ancestors; -1: none.
  int64_t EffectiveLimit(int32_t q) const;
  int32_t LimitingQueue(int32_t q, int64_t gpus) const;  // the one that says no; -1: none
  // Would `gpu_milli` more of `user`'s interactive sessions stay within the queue's
  // max_interactive_gpus_per_user (its own, not its ancestors')?
  bool WithinInteractiveCap(int32_t q, int32_t user, int64_t gpu_milli) const;
  int64_t InteractiveMilli(int32_t q, int32_t user) const;
  int32_t InteractiveCap(int32_t q) const {
    return queues_[q].config.max_interactive_gpus_per_user;
  }

  double Share(int32_t q) const;
  double UserShare(int32_t q, int32_t user) const;

  int32_t Parent(int32_t q) const { return queues_[q].parent; }
  // Is `q` the queue `a` or one of its descendants?
  bool Within(int32_t q, int32_t a) const;
  // The nearest ancestor with a quota; -1: none.
  int32_t NearestQuotaAncestor(int32_t q) const;
  // The queue's quota levels, itself first, then each ancestor with a quota.
  void QuotaLevels(int32_t q, std::vector<int32_t>* out) const;
  // Where a job of queue `taker` and a run of queue `holder` meet (see above): the level on
  // each side just below their lowest common quota level, and how far up the taker's level is
  // (its index in QuotaLevels(taker): 0 for the taker itself, more for a reclaim from farther
  // away).
  struct Meet {
    int32_t taker = -1;
    int32_t holder = -1;
    int32_t taker_depth = 0;
  };
  Meet QuotaMeet(int32_t taker, int32_t holder) const;
  // How far up the queue's own guarantee reaches: 0 below its own quota, 1 over it but with
  // an ancestor's quota not used up (it borrows its subtree's idle share), 2 over every level.
  int QuotaTier(int32_t q) const;
  // The fair-share order of a queue among all (Slurm's fair tree): the shares of its quota
  // levels from the top, compared lexicographically. The top level's share is returned; the
  // deeper ones go to `deeper`, each level's id before its share so that subtrees do not
  // interleave (empty for a queue without a parent with a quota: flat queues compare by their
  // own share alone).
  double FairPath(int32_t q, std::vector<double>* deeper) const;

 private:
  struct Usage {
    int64_t gpus = 0, cpu = 0, mem = 0;  // current allocation (milli-GPUs, cpu milli, MB)
    int64_t last_gpus = 0, last_cpu = 0, last_mem = 0;  // at the previous Advance
    double u_gpus = 0, u_cpu = 0, u_mem = 0;  // decayed integrals, in resource * tau units
    int64_t interactive = 0;  // a user's: milli-GPUs of its interactive sessions, in `gpus` too
  };
  struct Queue : Usage {
    QueueConfig config;
    int32_t parent = -1;
    std::map<std::string, int32_t> user_ids;
    std::vector<Usage> users;
  };
  static void Integrate(Usage& u, double decay, double frac_new);
  double Dominant(const Usage& u, double entitlement) const;

  DurationMs half_life_ms_;
  std::vector<Queue> queues_;
  std::map<std::string, int32_t> ids_;
  TimeMs last_advance_ = 0;
  bool advanced_ = false;
  double cpu_per_gpu_ = 0, mem_per_gpu_ = 0;
};

}  // namespace corral::sched
