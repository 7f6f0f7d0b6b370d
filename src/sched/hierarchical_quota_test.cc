// Unit tests of hierarchical quotas (fair_share.h): a parent's quota is shared by its
// subtree, whose idle share goes to its children before the rest of the cluster; reclaim
// meets at the lowest common quota level and takes first from borrowers outside the parent;
// a parent's quota caps its subtree's guarantee; fair share compares siblings level by level.
// A parent without a quota changes nothing: its children behave as flat queues.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "sched/scheduler.h"
#include "sched/testing_builders.h"

namespace corral::sched {
namespace {

using testing::MakeJob;
using testing::MakeNode;
using testing::Placed;
using testing::Running;

SchedulerConfig NoPreemptDelay() {
  SchedulerConfig c;
  c.min_runtime_before_preempt_ms = 0;
  return c;
}

// The queues whose runs the pass preempted, sorted.
std::vector<std::string> VictimQueues(const Decisions& d,
                                      const std::map<JobId, std::string>& queue_of) {
  std::vector<std::string> out;
  for (const PreemptDecision& p : d.preempt) out.push_back(queue_of.at(p.job));
  std::sort(out.begin(), out.end());
  return out;
}

// One GPU free. org/a is at its own quota of 2 while its parent org (quota 6) has 4 idle; x
// is over its quota of 2 but, with a weight of 10, has the lower share.
Decisions OneFreeGpuForSiblingOrOutsider(int32_t org_quota) {
  SchedulerConfig c;
  c.preemption = false;
  Scheduler s(c);
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.SetQueue({"org", org_quota, -1, 1.0});
  s.SetQueue({"org/a", 2, -1, 1.0});
  s.SetQueue({"org/b", 4, -1, 1.0});
  s.SetQueue({"x", 2, -1, 10.0});
  s.AddRunning(Running(MakeJob(100).Gpus(2).Queue("org/a"), {{"n1", {0, 1}}}));
  s.AddRunning(Running(MakeJob(101).Gpus(5).Queue("x"), {{"n1", {2, 3, 4, 5, 6}}}));
  s.AddPending(MakeJob(1).Gpus(1).Queue("x"));
  s.AddPending(MakeJob(2).Gpus(1).Queue("org/a"));
  return s.Schedule(10);
}

TEST(HierarchicalQuota, SubtreeIdleShareGoesToASiblingBeforeTheRestOfTheCluster) {
  Decisions d = OneFreeGpuForSiblingOrOutsider(/*org_quota=*/6);
  EXPECT_TRUE(Placed(d, 2)) << "org/a borrows org/b's idle share first";
  EXPECT_FALSE(Placed(d, 1));
}

TEST(HierarchicalQuota, WithoutAParentQuotaQueuesAreFlat) {
  // org has no quota: org/a is over its own and only the shares decide, x's lower first.
  Decisions d = OneFreeGpuForSiblingOrOutsider(/*org_quota=*/0);
  EXPECT_TRUE(Placed(d, 1));
  EXPECT_FALSE(Placed(d, 2));
}

// org (quota 6) has org/a (quota 4) idle and org/b (quota 2) borrowing 1 of org/a's share;
// x (quota 2) borrows 3 of org's idle GPUs. org/b's runs started later (less lost work), so
// the victim order alone would take them first.
struct ReclaimTree {
  Scheduler s{NoPreemptDelay()};
  std::map<JobId, std::string> queue_of;
  explicit ReclaimTree(int32_t org_quota) {
    s.UpsertNode(MakeNode("n1").Gpus(8));
    s.SetQueue({"org", org_quota, -1, 1.0});
    s.SetQueue({"org/a", std::min(4, std::max(org_quota, 2)), -1, 1.0});
    s.SetQueue({"org/b", 2, -1, 1.0});
    s.SetQueue({"x", 2, -1, 1.0});
    int gpu = 0;
    for (JobId id = 100; id < 103; ++id) {
      s.AddRunning(Running(MakeJob(id).Gpus(1).Queue("org/b").Preemptible(), {{"n1", {gpu++}}},
                           /*started_at=*/500));
      queue_of[id] = "org/b";
    }
    for (JobId id = 200; id < 205; ++id) {
      s.AddRunning(Running(MakeJob(id).Gpus(1).Queue("x").Preemptible(), {{"n1", {gpu++}}}, 0));
      queue_of[id] = "x";
    }
  }
};

TEST(HierarchicalQuota, AChildReclaimsFirstFromBorrowersOutsideItsParent) {
  ReclaimTree t(/*org_quota=*/6);
  t.s.AddPending(MakeJob(1).Gpus(1).Queue("org/a"));
  Decisions d = t.s.Schedule(1000);
  ASSERT_EQ(d.preempt.size(), 1u);
  EXPECT_EQ(VictimQueues(d, t.queue_of), std::vector<std::string>{"x"});
  EXPECT_NE(d.preempt[0].reason.find("queue org reclaims its quota of 6 GPUs"), std::string::npos)
      << d.preempt[0].reason;
  EXPECT_NE(d.preempt[0].reason.find("queue x was over its quota"), std::string::npos)
      << d.preempt[0].reason;
}

TEST(HierarchicalQuota, AChildOverItsOwnQuotaReclaimsWithinItsParents) {
  // org/b is over its own quota of 2 (3 GPUs) but org (6) is not: its job reclaims from x,
  // which borrows org's idle share, and the reason names org's quota.
  ReclaimTree t(/*org_quota=*/6);
  t.s.AddPending(MakeJob(1).Gpus(2).Queue("org/b"));
  Decisions d = t.s.Schedule(1000);
  ASSERT_EQ(d.preempt.size(), 2u);
  EXPECT_EQ(VictimQueues(d, t.queue_of), (std::vector<std::string>{"x", "x"}));
  EXPECT_NE(d.preempt[0].reason.find("queue org reclaims its quota of 6 GPUs"), std::string::npos)
      << d.preempt[0].reason;
}

TEST(HierarchicalQuota, FlatQueuesReclaimByVictimOrderAlone) {
  // No parent quota: org/a and org/b are flat queues; org/b's runs lose the least work.
  ReclaimTree t(/*org_quota=*/0);
  t.s.AddPending(MakeJob(1).Gpus(1).Queue("org/a"));
  Decisions d = t.s.Schedule(1000);
  ASSERT_EQ(d.preempt.size(), 1u);
  EXPECT_EQ(VictimQueues(d, t.queue_of), std::vector<std::string>{"org/b"});
}

TEST(HierarchicalQuota, AtItsParentsQuotaAChildReclaimsOnlyFromSiblings) {
  // org's quota of 3 is all used by org/b (3 GPUs, over its own 2): x still borrows, but only
  // from the cluster, not from org; org/a takes its share back from its sibling.
  ReclaimTree t(/*org_quota=*/3);
  t.s.AddPending(MakeJob(1).Gpus(1).Queue("org/a"));
  Decisions d = t.s.Schedule(1000);
  ASSERT_EQ(d.preempt.size(), 1u);
  EXPECT_EQ(VictimQueues(d, t.queue_of), std::vector<std::string>{"org/b"});
  EXPECT_NE(d.preempt[0].reason.find("queue org/a reclaims its quota of 3 GPUs"), std::string::npos)
      << d.preempt[0].reason;
}

// org (quota 4) runs 4 GPUs in org/a (quota 4); x (quota 2) runs 4. org/b (quota 4) asks for
// 2: within its own quota, but its parent's is used up.
Decisions CappedByParent(int32_t org_quota) {
  Scheduler s(NoPreemptDelay());
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.SetQueue({"org", org_quota, -1, 1.0});
  s.SetQueue({"org/a", 4, -1, 1.0});
  s.SetQueue({"org/b", 4, -1, 1.0});
  s.SetQueue({"x", 2, -1, 1.0});
  s.AddRunning(Running(MakeJob(100).Gpus(4).Queue("org/a").Preemptible(), {{"n1", {0, 1, 2, 3}}}));
  s.AddRunning(Running(MakeJob(200).Gpus(4).Queue("x").Preemptible(), {{"n1", {4, 5, 6, 7}}}));
  s.AddPending(MakeJob(1).Gpus(2).Queue("org/b"));
  return s.Schedule(1000);
}

TEST(HierarchicalQuota, AParentsQuotaCapsItsSubtreesGuarantee) {
  Decisions d = CappedByParent(/*org_quota=*/4);
  EXPECT_TRUE(d.preempt.empty()) << "org would go over its quota of 4";
  EXPECT_FALSE(Placed(d, 1));
  // With room in org's quota, org/b reclaims from x.
  d = CappedByParent(/*org_quota=*/8);
  ASSERT_EQ(d.preempt.size(), 1u);
  EXPECT_EQ(d.preempt[0].job, 200u);
}

// Two subtrees p and r (quota 8 each) on 16 GPUs, one GPU free. p/b uses 4 (p's share 0.5),
// r/c uses 2 (r's share 0.25); p/a uses nothing. By leaf share p/a (0) comes before r/c (0.5);
// by the fair tree r (0.25) comes before p (0.5).
Decisions FairTree(int32_t parent_quota) {
  SchedulerConfig c;
  c.preemption = false;
  Scheduler s(c);
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.UpsertNode(MakeNode("n2").Gpus(8));
  s.SetQueue({"p", parent_quota, -1, 1.0});
  s.SetQueue({"p/a", 4, -1, 1.0});
  s.SetQueue({"p/b", 4, -1, 1.0});
  s.SetQueue({"r", parent_quota, -1, 1.0});
  s.SetQueue({"r/c", 4, -1, 1.0});
  s.AddRunning(Running(MakeJob(100).Gpus(4).Queue("p/b"), {{"n1", {0, 1, 2, 3}}}));
  s.AddRunning(Running(MakeJob(101).Gpus(2).Queue("r/c"), {{"n1", {4, 5}}}));
  s.AddRunning(Running(MakeJob(102).Gpus(1).Queue("z"), {{"n1", {6}}}));
  s.AddRunning(Running(MakeJob(103).Gpus(8).Queue("z"), {{"n2", {0, 1, 2, 3, 4, 5, 6, 7}}}));
  s.AddPending(MakeJob(1).Gpus(1).Queue("p/a"));
  s.AddPending(MakeJob(2).Gpus(1).Queue("r/c"));
  return s.Schedule(10);
}

TEST(HierarchicalQuota, FairShareComparesSubtreesBeforeTheirChildren) {
  Decisions d = FairTree(/*parent_quota=*/8);
  EXPECT_TRUE(Placed(d, 2)) << "subtree r has used less of its quota than p";
  EXPECT_FALSE(Placed(d, 1));
}

TEST(HierarchicalQuota, WithoutParentQuotasFairShareIsByLeaf) {
  Decisions d = FairTree(/*parent_quota=*/0);
  EXPECT_TRUE(Placed(d, 1));
  EXPECT_FALSE(Placed(d, 2));
}

TEST(HierarchicalQuota, QueueAllocationCountsTheSubtree) {
  Scheduler s;
  s.UpsertNode(MakeNode("n1").Gpus(8));
  s.SetQueue({"org", 4, -1, 1.0});
  s.AddRunning(Running(MakeJob(100).Gpus(2).Queue("org/a"), {{"n1", {0, 1}}}));
  s.AddRunning(Running(MakeJob(101).Gpus(1).Queue("org/b/c"), {{"n1", {2}}}));
  EXPECT_EQ(s.QueueAllocatedGpus("org"), 3);
  EXPECT_EQ(s.QueueAllocatedGpus("org/b"), 1);
}

}  // namespace
}  // namespace corral::sched
