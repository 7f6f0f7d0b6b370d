// Golden decision logs: small hand-checked scenarios whose whole decision sequence (place,
// preempt, reserve, wait, with reasons) is compared byte for byte with a committed file under
// src/sched/testdata, so any change of behaviour shows up in review as a diff of that file.
// After an intended change: CORRAL_UPDATE_GOLDEN=1 ./sched_test --gtest_filter='Golden*',
// then read the diff and check it by hand before committing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "sched/scheduler.h"
#include "sched/testing_builders.h"

namespace corral::sched {
namespace {

using testing::MakeJob;
using testing::MakeNode;
using testing::Running;

std::string Minutes(TimeMs t) {
  std::ostringstream o;
  o << "t=" << t / kMinute << "m";
  if (t % kMinute) o << (t % kMinute) / kSecond << "s";
  return o.str();
}

// Plays the driver (as the head does): binds placements, stops victims at once and requeues
// them with the GPU-time they attained; logs every decision.
class Driver {
 public:
  explicit Driver(SchedulerConfig c = {}) : s_(c) {}
  Scheduler& s() { return s_; }

  void Submit(const PendingJob& j, TimeMs now) {
    jobs_[j.id] = j;
    s_.AddPending(j);
    log_ << Minutes(now) << " submit " << j.id << "\n";
  }
  void Run(const PendingJob& j, std::vector<ReplicaPlacement> p, TimeMs started) {
    jobs_[j.id] = j;
    started_[j.id] = started;
    s_.AddRunning(Running(j, std::move(p), started));
  }
  void End(JobId id, TimeMs now) {
    s_.RemoveRunning(id);
    log_ << Minutes(now) << " end " << id << "\n";
  }
  void Pass(TimeMs now) {
    Decisions d = s_.Schedule(now);
    log_ << Minutes(now) << " pass\n";
    for (const PlaceDecision& p : d.place) {
      log_ << "  place " << p.job << " on";
      for (const ReplicaPlacement& r : p.placement) {
        log_ << " " << r.node << "[";
        for (size_t i = 0; i < r.gpus.size(); ++i) log_ << (i ? "," : "") << r.gpus[i];
        // A share: its milli-GPUs and memory on that GPU.
        if (!r.gpu_milli.empty()) log_ << "@" << r.gpu_milli[0] << "m/" << r.gpu_memory_mb << "MB";
        log_ << "]";
      }
      log_ << "\n";
      started_[p.job] = now;
    }
    for (const PreemptDecision& p : d.preempt) {
      log_ << "  preempt " << p.job << " for " << p.for_job << ": " << p.reason << "\n";
    }
    for (const Reservation& r : d.reservations) {
      log_ << "  reserve " << r.job << " at "
           << (r.start == kUnknownTime ? std::string("unknown") : Minutes(r.start)) << " on";
      for (const std::string& n : r.nodes) log_ << " " << n;
      log_ << "\n";
    }
    for (const WaitReason& w : d.waiting) log_ << "  wait " << w.job << ": " << w.reason << "\n";
    // The victims stop at once and come back with their attained service.
    for (const PreemptDecision& p : d.preempt) {
      PendingJob& j = jobs_.at(p.job);
      int64_t gpus = int64_t{j.replicas} * (j.per_replica.gpu_milli / kGpuMilli);
      j.attained_ms += gpus * (now - started_.at(p.job));
      s_.RemoveRunning(p.job);
      s_.AddPending(j);
      log_ << "  requeue " << p.job << " with " << j.attained_ms / kMinute << " GPU-minutes\n";
    }
  }
  std::string log() const { return log_.str(); }

 private:
  Scheduler s_;
  std::map<JobId, PendingJob> jobs_;
  std::map<JobId, TimeMs> started_;
  std::ostringstream log_;
};

void ExpectGolden(const std::string& name, const std::string& got) {
  std::string path = std::string(CORRAL_SCHED_TESTDATA) + "/" + name;
  if (std::getenv("CORRAL_UPDATE_GOLDEN")) {
    std::ofstream(path, std::ios::binary) << got;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in.good()) << path << " is missing; run with CORRAL_UPDATE_GOLDEN=1";
  std::ostringstream want;
  want << in.rdbuf();
  EXPECT_EQ(got, want.str()) << "decisions differ from " << path;
}

// One GPU, one queue. A long run reaches level 1 at 60 GPU-minutes but is preempted for the
// new job only at 120 (hysteresis 2); it is requeued at level 1 and the new job runs; the
// old one never preempts it back; it resumes when the new job ends.
TEST(GoldenTest, LasHysteresis) {
  Driver d;
  d.s().UpsertNode(MakeNode("n1").Gpus(1));
  d.s().SetQueue({"q", 1, -1, 1.0});
  d.Run(MakeJob(100).Gpus(1).Queue("q").Preemptible(), {{"n1", {0}}}, 0);
  d.Submit(MakeJob(1).Gpus(1).Queue("q").Preemptible().Submit(30 * kMinute), 30 * kMinute);
  for (TimeMs t :
       {30 * kMinute, 61 * kMinute, 119 * kMinute, 120 * kMinute, 121 * kMinute, 5 * kHour}) {
    d.Pass(t);
  }
  d.End(1, 6 * kHour);
  d.Pass(6 * kHour);
  ExpectGolden("las_hysteresis.log", d.log());
}

// Budgets: two runs a minute cluster-wide. A priority job takes one victim; a two-victim job
// must wait for the window (1 + 2 > 2), then takes both; a gang of two full nodes finds no
// victims (the runs left on two nodes are not preemptible) and holds a reservation; quota
// reclaim is not limited, and the jobs it made room for start first in the next pass, so
// neither takes the other's room and preempts again.
TEST(GoldenTest, PreemptionBudgets) {
  SchedulerConfig c;
  c.corral.cluster_budget = {2, -1};
  c.corral.queue_budget = {-1, -1};
  Driver d(c);
  for (const char* n : {"n1", "n2", "n3"}) d.s().UpsertNode(MakeNode(n).Gpus(2));
  d.s().SetQueue({"lender", 0, -1, 1.0});
  d.s().SetQueue({"owner", 2, -1, 1.0});
  for (int k = 0; k < 6; ++k) {
    d.Run(MakeJob(100 + k).Gpus(1).Queue("lender").Preemptible(),
          {{"n" + std::to_string(1 + k / 2), {k % 2}}}, k * kMinute);
  }
  d.Submit(MakeJob(1).Gpus(1).Queue("lender").Priority(2), kHour);
  d.Submit(MakeJob(2).Gpus(2).Queue("lender").Priority(1), kHour);
  d.Pass(kHour);
  d.Pass(kHour + 30 * kSecond);
  d.Pass(kHour + kMinute);
  d.Submit(MakeJob(3).Replicas(2).Gpus(2).Queue("lender").Priority(1), kHour + 2 * kMinute);
  d.Pass(kHour + 2 * kMinute);
  d.Pass(kHour + 3 * kMinute);
  d.Pass(kHour + 4 * kMinute);
  d.Submit(MakeJob(4).Gpus(1).Queue("owner"), kHour + 4 * kMinute);
  d.Submit(MakeJob(5).Gpus(1).Queue("owner"), kHour + 4 * kMinute);
  d.Pass(kHour + 4 * kMinute + kSecond);
  d.Pass(kHour + 4 * kMinute + 2 * kSecond);
  ExpectGolden("preemption_budgets.log", d.log());
}

// Reservation and backfill: two nodes of 4 GPUs; runs end by their time limits at 60 and 90
// minutes. A whole-cluster gang is reserved for 90 minutes; a 30-minute job backfills, a job
// without a time limit may not, and the gang starts when the second run ends.
TEST(GoldenTest, ReservationAndBackfill) {
  Driver d;
  d.s().UpsertNode(MakeNode("n1").Gpus(4));
  d.s().UpsertNode(MakeNode("n2").Gpus(4));
  d.Run(MakeJob(100).Gpus(2).Limit(60 * kMinute), {{"n1", {0, 1}}}, 0);
  d.Run(MakeJob(101).Gpus(4).Limit(90 * kMinute), {{"n2", {0, 1, 2, 3}}}, 0);
  d.Submit(MakeJob(1).Replicas(2).Gpus(4).Limit(kHour), 10 * kMinute);
  d.Submit(MakeJob(2).Gpus(2).Limit(30 * kMinute), 11 * kMinute);
  d.Submit(MakeJob(3).Gpus(2), 12 * kMinute);
  d.Pass(12 * kMinute);
  d.End(2, 42 * kMinute);
  d.Pass(42 * kMinute);
  d.End(100, 60 * kMinute);
  d.Pass(60 * kMinute);
  d.End(101, 90 * kMinute);
  d.Pass(90 * kMinute);
  ExpectGolden("reservation_backfill.log", d.log());
}

// Shares of one GPU. n1 has 2 GPUs and n2 4 (16 GiB each, 15,892 MB shareable after the
// driver's reserve). Shares fill the GPU they fill the most, opening an empty GPU only when
// none has room, and on the node with the fewest free GPUs; whole-GPU jobs take the GPUs left
// whole; an MPS share never joins memory-isolated ones; a memory share that no shared GPU can
// hold opens a new GPU; when the shares of a GPU end, it is whole again.
TEST(GoldenTest, SharePacking) {
  Driver d;
  auto node = [](const char* name, int gpus) {
    NodeInfo n = MakeNode(name).Gpus(gpus);
    for (Gpu& g : n.gpus) g.memory_mb = 16 * 1024;
    return n;
  };
  d.s().UpsertNode(node("n1", 2));
  d.s().UpsertNode(node("n2", 4));
  auto share = [](JobId id, int32_t milli, int64_t mem = 0) {
    PendingJob j = MakeJob(id).Gpus(0).Cpus(1);
    j.per_replica.gpu_milli = milli;
    j.per_replica.gpu_memory_mb = mem;
    return j;
  };
  d.Submit(share(1, 500), 0);
  d.Submit(share(2, 250), 0);
  d.Submit(share(3, 250), 0);
  d.Submit(share(4, 400), 0);
  d.Pass(0);
  d.Submit(MakeJob(5).Gpus(1), kMinute);
  d.Submit(MakeJob(6).Gpus(2), kMinute);
  PendingJob mps = share(7, 300);
  mps.per_replica.gpu_isolation = GpuIsolation::kMps;
  d.Submit(mps, kMinute);
  d.Submit(share(8, 600), kMinute);         // fits beside job 4 (400 + 600)
  d.Submit(share(9, 100, 12000), kMinute);  // its memory fits no shared GPU
  d.Pass(kMinute);
  d.End(1, 2 * kMinute);
  d.End(2, 2 * kMinute);
  d.End(3, 2 * kMinute);
  d.Submit(MakeJob(10).Gpus(1), 2 * kMinute);
  d.Pass(2 * kMinute);
  ExpectGolden("share_packing.log", d.log());
}

}  // namespace
}  // namespace corral::sched
