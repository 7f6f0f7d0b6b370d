// Shares of a GPU through the head's core: packed onto one GPU with the share in each run's
// placement and environment, refused at submit when the queue forbids sharing or no GPU can
// hold the memory; a share's usage counts its fraction (the fixture: core_scenario.h).
#include "head/core_scenario.h"

namespace corral::head::core_test {
namespace {

JobSpec Share(int32_t milli, int64_t memory_mb = 0) {
  JobSpec s;
  s.command = {"serve"};
  s.per_replica.gpu_milli = milli;
  s.per_replica.gpu_memory_mb = memory_mb;
  return s;
}

TEST_P(Scenario, SharesPackOntoOneGpuAndTheirRunsSeeTheShare) {
  Register("n1", 2);  // GPUs of 1000 MB: 744 MB shareable after the 256 MB reserve
  Job a = Submit(Share(500));
  Job b = Submit(Share(250, 200));
  Job whole = Submit(Spec(1));
  Schedule();
  for (const Job* j : {&a, &b, &whole}) ASSERT_EQ(Get(j->id).state, JobState::kScheduled);
  const ReplicaPlacement pa = Get(a.id).CurrentRun()->placement[0];
  const ReplicaPlacement pb = Get(b.id).CurrentRun()->placement[0];
  const ReplicaPlacement pw = Get(whole.id).CurrentRun()->placement[0];
  EXPECT_EQ(pa.gpus, pb.gpus);  // packed together
  EXPECT_NE(pw.gpus, pa.gpus);  // the whole GPU is the other one
  EXPECT_EQ(pa.gpu_milli, std::vector<int32_t>{500});
  EXPECT_EQ(pa.gpu_memory_mb, 372);  // half of 744
  EXPECT_EQ(pb.gpu_memory_mb, 200);
  std::map<JobId, RunOrder> orders;
  for (RunOrder& o : Desired("n1")) orders[o.job_id] = o;
  EXPECT_EQ(orders.at(a.id).env.at("CORRAL_GPU_SHARE_MILLI"), "500");
  EXPECT_EQ(orders.at(a.id).env.at("CORRAL_GPU_MEMORY_LIMIT"), "372m");
  EXPECT_EQ(orders.at(a.id).env.at("CORRAL_GPU_ISOLATION"), "memory");
  EXPECT_EQ(orders.at(a.id).env.at("CUDA_VISIBLE_DEVICES"), std::to_string(pa.gpus[0]));
  EXPECT_EQ(orders.at(whole.id).env.count("CORRAL_GPU_SHARE_MILLI"), 0u);
  // A third share does not fit the 250 milli left with 300: it waits rather than overfill.
  Job c = Submit(Share(300));
  Schedule();
  EXPECT_EQ(Get(c.id).state, JobState::kPending);
  ASSERT_TRUE(*Report("n1", {Running(Get(a.id))}));
  now() += kMinute;
  ASSERT_TRUE(*Report("n1", {Exited(Get(a.id), 0, 0)}));
  Schedule();
  EXPECT_EQ(Get(c.id).state, JobState::kScheduled);
}

TEST_P(Scenario, AnMpsShareRecordsItsModeAndGetsTheMpsLimits) {
  Register("n1", 1);
  JobSpec s = Share(300);
  s.per_replica.gpu_isolation = GpuIsolation::kMps;
  Job j = Submit(s);
  Schedule();
  ASSERT_EQ(Get(j.id).state, JobState::kScheduled);
  EXPECT_EQ(Get(j.id).spec.per_replica.gpu_isolation, GpuIsolation::kMps);
  RunOrder o = Desired("n1").at(0);
  EXPECT_EQ(o.env.at("CORRAL_GPU_ISOLATION"), "mps");
  EXPECT_EQ(o.env.at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "30");
  EXPECT_EQ(o.env.at("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=223M");
  // A memory-isolated share never joins it on the one GPU.
  Job m = Submit(Share(100));
  Schedule();
  EXPECT_EQ(Get(m.id).state, JobState::kPending);
}

// An MPS server serves one Unix user: a GPU's MPS shares are one owner's.
TEST_P(Scenario, MpsSharesOfTwoOwnersNeverShareAGpu) {
  Register("n1", 2);
  JobSpec s = Share(250);
  s.per_replica.gpu_isolation = GpuIsolation::kMps;
  Job a1 = Submit(s, kAna);
  Job b1 = Submit(s, kBob);
  Job a2 = Submit(s, kAna);
  Schedule();
  for (const Job* j : {&a1, &b1, &a2}) ASSERT_EQ(Get(j->id).state, JobState::kScheduled);
  auto gpu = [&](const Job& j) { return Get(j.id).CurrentRun()->placement[0].gpus; };
  EXPECT_EQ(gpu(a1), gpu(a2));  // one owner's shares pack together
  EXPECT_NE(gpu(a1), gpu(b1));
  // Both GPUs hold another owner's MPS shares: a third owner's waits.
  Job c = Submit(s, Caller::User("cy"));
  Schedule();
  EXPECT_EQ(Get(c.id).state, JobState::kPending);
}

TEST_P(Scenario, SharesAreRefusedWhereTheQueueForbidsThemOrNoGpuHoldsTheMemory) {
  Register("n1", 1);
  QueueConfig q{"whole", 0, -1, 1.0};
  q.gpu_sharing = false;
  ASSERT_TRUE(core().SetQueue(kAdmin, q, now()).ok());
  JobSpec s = Share(250);
  s.queue = "whole";
  auto r = core().Submit(kAna, s, "", now());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("field 'gpus': queue 'whole' does not allow shares"),
            std::string::npos)
      << r.status().message();
  JobSpec w = Spec(1);
  w.queue = "whole";
  EXPECT_TRUE(core().Submit(kAna, w, "", now()).ok());  // whole GPUs still may
  auto big = core().Submit(kAna, Share(250, 800), "", now());
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("field 'gpu_memory': got 800 MB, more than any GPU"),
            std::string::npos)
      << big.status().message();
}

}  // namespace
}  // namespace corral::head::core_test
