// Randomized property test of GPU shares: random clusters, a mix of whole-GPU jobs and shares
// of one GPU (compute, memory or both; two isolation modes), random ends and the preemptions
// the scheduler asks for. After every pass no GPU holds more than 1000 milli-GPUs or more
// memory than it can share, a whole-GPU job never sits beside a share, one GPU never holds
// two isolation modes, and a GPU's MPS shares are one owner's.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "sched/scheduler.h"
#include "sched/testing_builders.h"

namespace corral::sched {
namespace {

struct GpuUse {
  int32_t milli = 0;
  int64_t mem = 0;
  int32_t whole = 0;
  int32_t shares = 0;
  std::set<int> isolations;
  std::set<std::string> mps_owners;
};

struct ShareHarness {
  explicit ShareHarness(SchedulerConfig c) : s(c) {}
  Scheduler s;
  std::map<std::string, NodeInfo> nodes;
  std::map<JobId, PendingJob> pending;
  struct Run {
    PendingJob job;
    std::vector<ReplicaPlacement> placement;
    bool preempting = false;
  };
  std::map<JobId, Run> running;
  int64_t placed_shares = 0;

  void Submit(const PendingJob& j) {
    std::string why;
    if (s.Admit(j, &why) == Fit::kInfeasible) return;
    pending[j.id] = j;
    s.AddPending(j);
  }

  void Pass(TimeMs now) {
    Decisions d = s.Schedule(now);
    for (const PreemptDecision& p : d.preempt) {
      ASSERT_TRUE(running.count(p.job));
      running.at(p.job).preempting = true;
    }
    for (const PlaceDecision& p : d.place) {
      ASSERT_TRUE(pending.count(p.job));
      const PendingJob& j = pending.at(p.job);
      ASSERT_EQ(p.placement.size(), static_cast<size_t>(j.replicas));
      for (const ReplicaPlacement& r : p.placement) {
        if (j.per_replica.IsShare()) {
          ASSERT_EQ(r.gpus.size(), 1u) << "a share is of one GPU";
          ASSERT_EQ(r.gpu_milli, std::vector<int32_t>{j.per_replica.gpu_milli});
          ASSERT_GT(r.gpu_memory_mb, 0);
          if (j.per_replica.gpu_memory_mb > 0) {
            ASSERT_EQ(r.gpu_memory_mb, j.per_replica.gpu_memory_mb);
          }
          ++placed_shares;
        } else {
          ASSERT_TRUE(r.gpu_milli.empty());
          ASSERT_EQ(static_cast<int32_t>(r.gpus.size()), j.per_replica.gpu_milli / kGpuMilli);
        }
      }
      running[p.job] = Run{j, p.placement, false};
      pending.erase(p.job);
    }
    Check();
  }

  void Check() {
    std::map<std::pair<std::string, int32_t>, GpuUse> use;
    std::map<std::string, int64_t> cpu, mem;
    for (const auto& [id, r] : running) {
      for (const ReplicaPlacement& p : r.placement) {
        cpu[p.node] += r.job.per_replica.cpu_milli;
        mem[p.node] += r.job.per_replica.memory_mb;
        for (const GpuShare& g : Shares(p)) {
          GpuUse& u = use[{p.node, g.index}];
          if (p.gpu_milli.empty()) {
            ++u.whole;
          } else {
            ++u.shares;
            u.milli += g.milli;
            u.mem += g.memory_mb;
            u.isolations.insert(static_cast<int>(r.job.per_replica.gpu_isolation));
            if (r.job.per_replica.gpu_isolation == GpuIsolation::kMps) {
              u.mps_owners.insert(r.job.user);
            }
          }
        }
      }
    }
    for (const auto& [key, u] : use) {
      const NodeInfo& n = nodes.at(key.first);
      const Gpu& gpu = n.gpus.at(key.second);
      ASSERT_TRUE(gpu.healthy);
      ASSERT_LE(u.whole, 1) << "GPU held whole twice on " << key.first;
      ASSERT_FALSE(u.whole && u.shares) << "whole-GPU job beside shares on " << key.first;
      ASSERT_LE(u.milli, kGpuMilli) << key.first << " GPU " << key.second << " over 1000 milli";
      ASSERT_LE(u.mem, ShareableMemoryMb(gpu.memory_mb))
          << key.first << " GPU " << key.second << " over its memory";
      ASSERT_LE(u.isolations.size(), 1u) << "two isolation modes on one GPU";
      ASSERT_LE(u.mps_owners.size(), 1u) << "MPS shares of two owners on one GPU";
    }
    for (const auto& [name, n] : nodes) {
      ASSERT_LE(cpu[name], n.cpu_milli);
      ASSERT_LE(mem[name], n.memory_mb);
    }
  }
};

PendingJob RandomShareJob(std::mt19937_64& rng, JobId id, TimeMs now) {
  static const char* kQueues[] = {"a", "b", "c"};
  static const char* kUsers[] = {"ana", "bo"};
  auto b = testing::MakeJob(id)
               .User(kUsers[rng() % 2])
               .Gpus(static_cast<int>(rng() % 3))
               .Replicas(static_cast<int>(1 + rng() % 2))
               .Cpus(static_cast<int>(rng() % 4))
               .MemoryMb(static_cast<int64_t>(rng() % 4000))
               .Queue(kQueues[rng() % 3])
               .Priority(static_cast<int>(rng() % 3))
               .Submit(now)
               .Preemptible(rng() % 2 == 0);
  PendingJob j = b;
  if (rng() % 3 != 0) {  // two in three are shares
    static const int32_t kMilli[] = {0, 100, 250, 300, 460, 500, 700, 999};
    j.per_replica.gpu_milli = kMilli[rng() % 8];
    j.per_replica.gpu_memory_mb = rng() % 3 == 0 ? static_cast<int64_t>(1 + rng() % 20000) : 0;
    if (j.per_replica.gpu_milli == 0 && j.per_replica.gpu_memory_mb == 0) {
      j.per_replica.gpu_memory_mb = 4096;
    }
    j.per_replica.gpu_isolation = rng() % 4 == 0 ? GpuIsolation::kMps : GpuIsolation::kMemory;
  }
  return j;
}

TEST(SharePropertyTest, NoGpuIsEverOverItsMilliOrMemory) {
  int64_t shares = 0;
  for (uint64_t seed = 1; seed <= 500; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    SchedulerConfig c;
    c.min_runtime_before_preempt_ms = static_cast<DurationMs>(rng() % 2) * 1000;
    c.reservation_depth = static_cast<int32_t>(rng() % 3);
    ShareHarness h(c);
    int n = static_cast<int>(1 + rng() % 4);
    for (int i = 0; i < n; ++i) {
      NodeInfo node = testing::MakeNode("n" + std::to_string(i))
                          .Gpus(static_cast<int>(1 + rng() % 4))
                          .Cpus(static_cast<int>(4 + rng() % 16))
                          .MemoryMb(64'000);
      for (Gpu& g : node.gpus) g.memory_mb = rng() % 2 ? 16 * 1024 : 80 * 1024;
      if (rng() % 10 == 0) node.gpus[0].healthy = false;
      h.nodes[node.name] = node;
      h.s.UpsertNode(node);
    }
    h.s.SetQueue({"a", static_cast<int32_t>(rng() % 3), -1, 1.0});
    h.s.SetQueue({"b", static_cast<int32_t>(rng() % 3), -1, 1.0});
    JobId next = 1;
    TimeMs now = 0;
    for (int step = 0; step < 12; ++step) {
      int arrivals = static_cast<int>(rng() % 7);
      for (int k = 0; k < arrivals; ++k) h.Submit(RandomShareJob(rng, next++, now));
      h.Pass(now);
      if (HasFatalFailure()) return;
      std::vector<JobId> victims, done;
      for (const auto& [id, r] : h.running) {
        if (r.preempting) {
          victims.push_back(id);
        } else if (rng() % 4 == 0) {
          done.push_back(id);
        }
      }
      for (JobId id : victims) {  // the victim stops and waits again
        PendingJob j = h.running.at(id).job;
        h.s.RemoveRunning(id);
        h.running.erase(id);
        h.pending[id] = j;
        h.s.AddPending(j);
      }
      for (JobId id : done) {
        h.s.RemoveRunning(id);
        h.running.erase(id);
      }
      now += static_cast<TimeMs>(rng() % 2000);
    }
    shares += h.placed_shares;
  }
  EXPECT_GT(shares, 1500);  // the scenarios do pack shares
}

}  // namespace
}  // namespace corral::sched
