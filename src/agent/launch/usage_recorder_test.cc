// The usage recorder: samples on their interval, with the replica's GPUs and cgroup; reports
// carry what no sync delivered; a restarted recorder (a new agent on the same state directory)
// loses no sample, numbers on from the last and sends again only what it cannot know arrived.
#include "agent/launch/usage_recorder.h"

#include <gtest/gtest.h>

#include "agent/launch/run_record.h"
#include "agent/test_util.h"
#include "testing/fakes.h"

namespace corral::agent {
namespace {

using corral::testing::FakeClock;
using testing::TempDir;

constexpr int64_t kMiB = 1024 * 1024;

struct Node {
  TempDir dir;
  FakeClock clock{1'000'000};
  RunKey key{"7.1", 0};
  std::string run_dir() const { return dir.path(); }

  LiveReplica Live(int64_t cpu_ns, int64_t mem) const {
    CgroupUsage u;
    u.cpu_ns = cpu_ns;
    u.memory_bytes = mem;
    return LiveReplica{key, run_dir(), {1, 2}, 1'000'000, u};
  }
  std::vector<GpuSample> Gpus(int32_t util1, int32_t util2) const {
    return {{0, 99, 1}, {1, util1, 100 * kMiB}, {2, util2, 300 * kMiB}};
  }
  std::vector<RunReport> Reports() const { return {RunReport{key.run_id, key.replica, true}}; }
  std::map<RunKey, std::string> Dirs() const { return {{key, run_dir()}}; }
};

TEST(UsageRecorder, SamplesOnItsIntervalFromTheReplicasGpusAndCgroup) {
  Node n;
  UsageRecorder rec(1000, &n.clock);
  rec.Sample({n.Live(0, 0)}, n.Gpus(10, 30));  // not a second into the run: nothing
  n.clock.Advance(1000);
  rec.Sample({n.Live(2'000'000'000, 64 * kMiB)}, n.Gpus(10, 30));  // 2 s of CPU in 1 s
  n.clock.Advance(400);
  rec.Sample({n.Live(2'100'000'000, 64 * kMiB)}, n.Gpus(10, 30));  // too soon
  n.clock.Advance(600);
  rec.Sample({n.Live(2'500'000'000, 32 * kMiB)}, n.Gpus(50, 50));
  auto reports = n.Reports();
  rec.Attach(&reports, n.Dirs());
  ASSERT_EQ(reports[0].usage.size(), 2u);
  const UsagePoint& a = reports[0].usage[0];
  EXPECT_EQ(a.seq, 1);
  EXPECT_EQ(a.at, 1'001'000);
  EXPECT_EQ(a.gpu_util, 20);  // the mean of GPUs 1 and 2; GPU 0 is another run's
  EXPECT_EQ(a.gpu_mem, 400 * kMiB);
  EXPECT_EQ(a.cpu_milli, 2000);
  EXPECT_EQ(a.mem, 64 * kMiB);
  const UsagePoint& b = reports[0].usage[1];
  EXPECT_EQ(b.seq, 2);
  EXPECT_EQ(b.gpu_util, 50);
  EXPECT_EQ(b.cpu_milli, 500);
}

TEST(UsageRecorder, DeliveredSamplesAreNotSentAgain) {
  Node n;
  UsageRecorder rec(1000, &n.clock);
  n.clock.Advance(1000);
  rec.Sample({n.Live(0, 0)}, n.Gpus(10, 10));
  auto first = n.Reports();
  rec.Attach(&first, n.Dirs());
  ASSERT_EQ(first[0].usage.size(), 1u);
  n.clock.Advance(1000);
  rec.Sample({n.Live(0, 0)}, n.Gpus(10, 10));  // taken while the sync was in flight
  rec.Delivered(first);
  auto second = n.Reports();
  rec.Attach(&second, n.Dirs());
  ASSERT_EQ(second[0].usage.size(), 1u);
  EXPECT_EQ(second[0].usage[0].seq, 2);
}

TEST(UsageRecorder, ARestartedAgentLosesNothingAndNumbersOn) {
  Node n;
  {
    UsageRecorder rec(1000, &n.clock);
    for (int i = 0; i < 3; ++i) {
      n.clock.Advance(1000);
      rec.Sample({n.Live(1'000'000'000LL * (i + 1), kMiB)}, n.Gpus(40, 40));
    }
    auto reports = n.Reports();
    rec.Attach(&reports, n.Dirs());
    rec.Delivered(reports);  // 1..3 arrived
    n.clock.Advance(1000);
    rec.Sample({n.Live(4'000'000'000LL, kMiB)}, n.Gpus(40, 40));
    auto again = n.Reports();
    rec.Attach(&again, n.Dirs());  // 4 sent, but the agent dies before the answer
    ASSERT_EQ(again[0].usage.size(), 1u);
  }
  UsageRecorder restarted(1000, &n.clock);
  auto reports = n.Reports();
  restarted.Attach(&reports, n.Dirs());
  ASSERT_EQ(reports[0].usage.size(), 1u);  // 4 again: the head takes it once
  EXPECT_EQ(reports[0].usage[0].seq, 4);
  n.clock.Advance(1000);
  restarted.Sample({n.Live(4'500'000'000LL, kMiB)}, n.Gpus(40, 40));
  reports = n.Reports();
  restarted.Attach(&reports, n.Dirs());
  ASSERT_EQ(reports[0].usage.size(), 2u);
  EXPECT_EQ(reports[0].usage[1].seq, 5);
  EXPECT_EQ(reports[0].usage[1].cpu_milli, 500);  // counted from the record's last total

  RunRecord record = ReadRunRecord(n.run_dir(), RecordPart::kStatus);
  ASSERT_EQ(record.samples.size(), 5u);
  EXPECT_EQ(record.samples_sent, 3);
}

TEST(UsageRecorder, ReleasedReplicasAreForgotten) {
  Node n;
  UsageRecorder rec(1000, &n.clock);
  n.clock.Advance(1000);
  rec.Sample({n.Live(0, 0)}, n.Gpus(1, 1));
  std::vector<RunReport> none;
  rec.Attach(&none, {});
  // Seen again (an exited run still reported): read back from its record.
  auto reports = n.Reports();
  rec.Attach(&reports, n.Dirs());
  ASSERT_EQ(reports[0].usage.size(), 1u);
}

// A run shorter than an interval has one sample, from the last look before it ended; one that
// ends between samples gets the end of its last interval; each only once, and a replica still
// running or not looked at since its last sample gets none.
TEST(UsageRecorder, AReplicaThatEndsGetsItsLastSampleFromTheLastLook) {
  Node n;
  UsageRecorder rec(60'000, &n.clock);
  n.clock.Advance(4000);
  rec.Sample({n.Live(2'000'000'000, 8 * kMiB)}, n.Gpus(40, 60));  // a look: 4 s in
  rec.CloseEnded({n.Live(2'000'000'000, 8 * kMiB)});              // still running: nothing
  n.clock.Advance(500);
  rec.CloseEnded({});  // it ended
  rec.CloseEnded({});  // told again: nothing more
  auto reports = n.Reports();
  rec.Attach(&reports, n.Dirs());
  ASSERT_EQ(reports[0].usage.size(), 1u);
  const UsagePoint& p = reports[0].usage[0];
  EXPECT_EQ(p.seq, 1);
  EXPECT_EQ(p.at, 1'004'000);  // the look's time, not the end's
  EXPECT_EQ(p.gpu_util, 50);
  EXPECT_EQ(p.cpu_milli, 500);  // 2 s of CPU over its 4 s
  EXPECT_EQ(p.mem, 8 * kMiB);
  // Kept in the record like the others: a restarted agent sends it and numbers on from it.
  UsageRecorder after(60'000, &n.clock);
  auto again = n.Reports();
  after.Attach(&again, n.Dirs());
  ASSERT_EQ(again[0].usage.size(), 1u);
  EXPECT_EQ(again[0].usage[0].seq, 1);

  Node m;
  UsageRecorder on_time(1000, &m.clock);
  m.clock.Advance(1000);
  on_time.Sample({m.Live(1'000'000'000, 0)}, m.Gpus(10, 10));  // sample 1
  on_time.CloseEnded({});  // nothing looked at since: no second sample
  Node k;
  UsageRecorder ends_later(1000, &k.clock);
  k.clock.Advance(1000);
  ends_later.Sample({k.Live(1'000'000'000, 0)}, k.Gpus(10, 10));  // sample 1
  k.clock.Advance(300);
  ends_later.Sample({k.Live(1'300'000'000, 0)}, k.Gpus(90, 90));  // a look, not a sample
  ends_later.CloseEnded({});
  auto one = m.Reports();
  on_time.Attach(&one, m.Dirs());
  EXPECT_EQ(one[0].usage.size(), 1u);
  auto two = k.Reports();
  ends_later.Attach(&two, k.Dirs());
  ASSERT_EQ(two[0].usage.size(), 2u);
  EXPECT_EQ(two[0].usage[1].seq, 2);
  EXPECT_EQ(two[0].usage[1].at, 1'001'300);
  EXPECT_EQ(two[0].usage[1].gpu_util, 90);
  EXPECT_EQ(two[0].usage[1].cpu_milli, 1000);  // 0.3 s of CPU in 0.3 s
}

}  // namespace
}  // namespace corral::agent
