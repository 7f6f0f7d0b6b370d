// Randomized property tests: thousands of small random clusters and job mixes (seeded), with
// the invariants of DESIGN §6 checked after every pass.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <sstream>

#include "sched/scheduler.h"
#include "sched/testing_builders.h"

namespace corral::sched {
namespace {

struct Harness {
  explicit Harness(SchedulerConfig c) : s(c) {}

  struct Run {
    PendingJob job;
    std::vector<ReplicaPlacement> placement;
    TimeMs started = 0;
    bool preempting = false;
    TimeMs End() const {
      return job.time_limit_ms > 0 ? started + job.time_limit_ms : kUnknownTime;
    }
  };

  Scheduler s;
  std::map<std::string, NodeInfo> nodes;
  std::map<JobId, Run> running;
  std::map<JobId, PendingJob> pending;
  std::string log;  // every decision, for determinism checks
  Decisions last;

  void Node(const NodeInfo& n) {
    nodes[n.name] = n;
    s.UpsertNode(n);
  }
  void Submit(const PendingJob& j) {
    std::string why;
    if (s.Admit(j, &why) == Fit::kInfeasible) return;
    pending[j.id] = j;
    s.AddPending(j);
  }
  void End(JobId id) {
    s.RemoveRunning(id);
    running.erase(id);
  }
  // A preempted run ends at `now` and its job is pending again, with the service it attained.
  void Requeue(JobId id, TimeMs now) {
    const Run& r = running.at(id);
    PendingJob j = r.job;
    j.attained_ms += int64_t{j.replicas} * (j.per_replica.gpu_milli / kGpuMilli) *
                     std::max<TimeMs>(0, now - r.started);
    End(id);
    pending[id] = j;
    s.AddPending(j);
  }

  // Applies a pass's decisions and checks every invariant; returns false after a failure.
  void Pass(TimeMs now) {
    std::map<JobId, Run> before = running;
    Decisions d = s.Schedule(now);
    std::ostringstream out;
    for (const PreemptDecision& p : d.preempt) {
      out << "preempt " << p.job << " for " << p.for_job << "\n";
      ASSERT_TRUE(running.count(p.job)) << "preempted a job that is not running";
      Run& r = running.at(p.job);
      ASSERT_TRUE(r.job.preemptible) << "preempted a non-preemptible job " << p.job;
      ASSERT_FALSE(r.preempting) << "duplicate preemption of " << p.job;
      r.preempting = true;
    }
    for (const PlaceDecision& p : d.place) {
      out << "place " << p.job << ":";
      for (const ReplicaPlacement& r : p.placement) {
        out << " " << r.node << "[";
        for (int32_t g : r.gpus) out << g << ",";
        out << "]";
      }
      out << "\n";
      ASSERT_TRUE(pending.count(p.job)) << "placed a job that is not pending";
      const PendingJob& j = pending.at(p.job);
      ASSERT_EQ(p.placement.size(), static_cast<size_t>(j.replicas)) << "partial gang " << p.job;
      for (const ReplicaPlacement& r : p.placement) {
        ASSERT_EQ(static_cast<int32_t>(r.gpus.size()), j.per_replica.gpu_milli / kGpuMilli);
        ASSERT_TRUE(nodes.count(r.node));
        const NodeInfo& n = nodes.at(r.node);
        ASSERT_TRUE(n.schedulable);
        for (const auto& [k, v] : j.node_labels)
          ASSERT_EQ(n.labels.count(k) ? n.labels.at(k) : "", v);
        for (int32_t g : r.gpus) {
          ASSERT_TRUE(n.gpus.at(g).healthy);
          if (!j.gpu_model.empty()) {
            ASSERT_EQ(n.gpus.at(g).model, j.gpu_model);
          }
        }
      }
      running[p.job] = Run{j, p.placement, now, false};
      pending.erase(p.job);
    }
    for (const Reservation& r : d.reservations)
      out << "reserve " << r.job << " " << r.start << "\n";
    log += out.str();
    last = d;
    CheckNoOversubscription();
    for (const Reservation& r : d.reservations) {
      std::map<JobId, Run> prior = before;  // runs the reservation counted on
      for (int32_t k = 0; k < r.after_place; ++k)
        prior[d.place[k].job] = running.at(d.place[k].job);
      CheckReservation(r, prior, now);
    }
  }

  void CheckNoOversubscription() {
    std::map<std::string, std::set<int32_t>> gpus;
    std::map<std::string, int64_t> cpu, mem;
    for (const auto& [id, r] : running) {
      for (const ReplicaPlacement& p : r.placement) {
        for (int32_t g : p.gpus)
          ASSERT_TRUE(gpus[p.node].insert(g).second) << "GPU shared " << p.node;
        cpu[p.node] += r.job.per_replica.cpu_milli;
        mem[p.node] += r.job.per_replica.memory_mb;
      }
    }
    for (const auto& [name, n] : nodes) {
      ASSERT_LE(cpu[name], n.cpu_milli) << "cpu oversubscribed on " << name;
      ASSERT_LE(mem[name], n.memory_mb) << "memory oversubscribed on " << name;
    }
  }

  // The reserved job must fit on its reserved nodes at the reserved start, given every run
  // (including this pass's backfill) that may still run then.
  void CheckReservation(const Reservation& rv, const std::map<JobId, Run>& before, TimeMs /*now*/) {
    ASSERT_TRUE(pending.count(rv.job));
    const PendingJob& j = pending.at(rv.job);
    std::map<std::string, std::set<int32_t>> used;
    std::map<std::string, int64_t> cpu, mem;
    for (const auto& [id, r] : running) {
      bool prior = before.count(id) > 0;
      bool still;
      if (r.preempting) {
        still = false;
      } else if (prior) {
        still = rv.start != kUnknownTime && r.End() > rv.start;
      } else {  // placed in this pass
        still = rv.start == kUnknownTime || r.End() > rv.start;
      }
      if (!still) continue;
      for (const ReplicaPlacement& p : r.placement) {
        for (int32_t g : p.gpus) used[p.node].insert(g);
        cpu[p.node] += r.job.per_replica.cpu_milli;
        mem[p.node] += r.job.per_replica.memory_mb;
      }
    }
    int64_t fit = 0;
    int32_t g = j.per_replica.gpu_milli / kGpuMilli;
    for (const std::string& name : rv.nodes) {
      const NodeInfo& n = nodes.at(name);
      int64_t free = 0;
      for (const Gpu& gpu : n.gpus) free += gpu.healthy && !used[name].count(gpu.index);
      int64_t k = j.replicas;
      if (g > 0) k = std::min<int64_t>(k, free / g);
      if (j.per_replica.cpu_milli > 0)
        k = std::min<int64_t>(k, (n.cpu_milli - cpu[name]) / j.per_replica.cpu_milli);
      if (j.per_replica.memory_mb > 0)
        k = std::min<int64_t>(k, (n.memory_mb - mem[name]) / j.per_replica.memory_mb);
      fit += std::max<int64_t>(0, k);
    }
    ASSERT_GE(fit, j.replicas) << "backfill delayed the reservation of job " << rv.job;
  }
};

NodeInfo RandomNode(std::mt19937_64& rng, int i) {
  static const int kGpus[] = {1, 2, 4, 8, 8};
  auto b = testing::MakeNode("n" + std::to_string(i))
               .Gpus(kGpus[rng() % 5], rng() % 4 == 0 ? "V100" : "A100", rng() % 2 ? 4 : 0)
               .Rack("r" + std::to_string(rng() % 2))
               .Cpus(static_cast<int>(8 + rng() % 32))
               .MemoryMb(static_cast<int64_t>(16'000 + rng() % 64'000));
  if (rng() % 20 == 0) b.Unhealthy(0);
  if (rng() % 10 == 0) b.Unschedulable();
  if (rng() % 3 == 0) b.Label("zone", "z1");
  return b;
}

PendingJob RandomJob(std::mt19937_64& rng, JobId id, TimeMs now) {
  static const char* kQueues[] = {"a", "b", "c", "a/x"};
  static const DurationMs kLimits[] = {0, 0, 500, 1000, 3000};
  auto b = testing::MakeJob(id)
               .Gpus(static_cast<int>(rng() % 9))
               .Replicas(static_cast<int>(1 + rng() % 3))
               .Cpus(static_cast<int>(1 + rng() % 6))
               .MemoryMb(static_cast<int64_t>(1000 + rng() % 8000))
               .Queue(kQueues[rng() % 4])
               .User("u" + std::to_string(rng() % 3))
               .Priority(static_cast<int>(rng() % 3))
               .Submit(now)
               .Limit(kLimits[rng() % 5])
               .Preemptible(rng() % 2 == 0);
  if (rng() % 8 == 0) b.Model("V100");
  if (rng() % 8 == 0) b.Label("zone", "z1");
  return b;
}

// Runs one random scenario; returns the decision log.
std::string RunScenario(uint64_t seed, OrderPolicy policy) {
  std::mt19937_64 rng(seed);
  SchedulerConfig c;
  c.policy = policy;
  c.min_runtime_before_preempt_ms = static_cast<DurationMs>(rng() % 2) * 1000;
  c.reservation_depth = static_cast<int32_t>(rng() % 3);
  c.backfill = rng() % 4 != 0;
  // Half the kCorral scenarios with LAS levels small enough to be reached (steps are < 1.5 s).
  if (seed % 2 == 0) c.las_thresholds_gpu_ms = {1500, 6000};
  Harness h(c);
  int nodes = static_cast<int>(2 + rng() % 7);
  for (int i = 0; i < nodes; ++i) h.Node(RandomNode(rng, i));
  h.s.SetQueue({"a", static_cast<int32_t>(rng() % 8), -1, 1.0});
  h.s.SetQueue({"b", static_cast<int32_t>(rng() % 8), rng() % 3 ? -1 : 12, 2.0});
  JobId next = 1;
  TimeMs now = 0;
  for (int step = 0; step < 8; ++step) {
    int arrivals = static_cast<int>(rng() % 6);
    for (int k = 0; k < arrivals; ++k) h.Submit(RandomJob(rng, next++, now));
    h.Pass(now);
    if (::testing::Test::HasFatalFailure()) return h.log;
    // The driver acts: preempted runs end and requeue; some runs finish.
    std::vector<JobId> victims, done;
    for (const auto& [id, r] : h.running) {
      if (r.preempting) {
        victims.push_back(id);
      } else if (rng() % 4 == 0) {
        done.push_back(id);
      }
    }
    for (JobId id : victims) h.Requeue(id, now);
    for (JobId id : done) h.End(id);
    now += static_cast<TimeMs>(rng() % 1500);
  }
  return h.log;
}

TEST(PropertyTest, InvariantsHoldOnRandomClusters) {
  for (uint64_t seed = 1; seed <= 5000; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    OrderPolicy p = seed % 5 == 0    ? OrderPolicy::kLas
                    : seed % 7 == 0  ? OrderPolicy::kSrtf
                    : seed % 11 == 0 ? OrderPolicy::kFifo
                                     : OrderPolicy::kCorral;
    RunScenario(seed, p);
    if (HasFatalFailure()) return;
  }
}

TEST(PropertyTest, SameInputSameDecisions) {
  int nonempty = 0;
  for (uint64_t seed = 1; seed <= 1000; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::string a = RunScenario(seed, OrderPolicy::kCorral);
    std::string b = RunScenario(seed, OrderPolicy::kCorral);
    ASSERT_EQ(a, b);
    nonempty += !a.empty();
  }
  EXPECT_GT(nonempty, 900);
}

// A queue at or under its quota with pending work gets its quota back within one pass:
// placements plus the jobs that preempted for it reach min(quota, allocation + demand).
TEST(PropertyTest, QuotaComesBackWithinOnePass) {
  for (uint64_t seed = 1; seed <= 3000; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    SchedulerConfig c;
    c.min_runtime_before_preempt_ms = 0;
    Harness h(c);
    int nodes = static_cast<int>(1 + rng() % 5);
    int64_t capacity = 0;
    for (int i = 0; i < nodes; ++i) {
      int g = rng() % 2 ? 8 : 4;
      capacity += g;
      h.Node(testing::MakeNode("n" + std::to_string(i)).Gpus(g));
    }
    const char* queues[] = {"a", "b", "c"};
    std::map<std::string, int64_t> quota;
    int64_t left = capacity;
    for (const char* q : queues) {
      quota[q] = static_cast<int64_t>(rng() % (left + 1));
      left -= quota[q];
      h.s.SetQueue({q, static_cast<int32_t>(quota[q]), -1, 1.0});
    }
    JobId next = 1;
    auto submit = [&](const char* q, int n, TimeMs t) {
      for (int k = 0; k < n; ++k) {
        h.Submit(
            testing::MakeJob(next++).Gpus(1).Cpus(0).MemoryMb(0).Queue(q).Preemptible().Submit(t));
      }
    };
    // Some queues fill the cluster, borrowing.
    for (const char* q : queues) submit(q, static_cast<int>(rng() % (capacity + 1)), 0);
    h.Pass(0);
    ASSERT_FALSE(HasFatalFailure());
    // New demand arrives.
    for (const char* q : queues) submit(q, static_cast<int>(rng() % (capacity + 1)), 10);
    std::map<std::string, int64_t> alloc, demand;
    for (const auto& [id, r] : h.running) alloc[r.job.queue] += 1;
    for (const auto& [id, j] : h.pending) demand[j.queue] += 1;
    std::map<JobId, std::string> queue_of;
    for (const auto& [id, j] : h.pending) queue_of[id] = j.queue;
    h.Pass(1000);
    ASSERT_FALSE(HasFatalFailure());
    std::map<std::string, int64_t> got;
    for (const auto& [id, r] : h.running) {
      if (!r.preempting) got[r.job.queue] += 1;
    }
    std::set<JobId> preempted_for;
    for (const PreemptDecision& p : h.last.preempt) preempted_for.insert(p.for_job);
    for (JobId id : preempted_for) got[queue_of.at(id)] += 1;  // 1 GPU each, on its way
    for (const char* q : queues) {
      int64_t want = std::min(quota[q], alloc[q] + demand[q]);
      EXPECT_GE(got[q], want) << "queue " << q << " quota " << quota[q] << " alloc " << alloc[q]
                              << " demand " << demand[q] << " capacity " << capacity;
    }
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace corral::sched
