// The emulated agent's bookkeeping and the load tools' percentiles.
#include <gtest/gtest.h>

#include "agents/emulated_agent.h"
#include "agents/job_records.h"
#include "agents/latency_stats.h"

namespace corral::bench {
namespace {

RunOrder Order(const std::string& run_id, bool stop = false) {
  RunOrder o;
  o.run_id = run_id;
  o.stop = stop;
  return o;
}

SyncResponse Desired(uint64_t version, std::vector<RunOrder> runs) {
  SyncResponse r;
  r.head_epoch = 1;
  r.desired_version = version;
  r.runs = std::move(runs);
  return r;
}

EmulatedAgent Registered(int64_t runtime_ms) {
  EmulatedAgent a("emu-1", 8, runtime_ms);
  a.OnRegistered(RegisterResponse{"tok", 1, 7, ""});
  return a;
}

TEST(EmulatedAgentTest, RegistersItsGpus) {
  EmulatedAgent a("emu-1", 8, 0);
  RegisterRequest req = a.MakeRegisterRequest();
  EXPECT_EQ(req.name, "emu-1");
  ASSERT_EQ(req.gpus.size(), 8u);
  EXPECT_EQ(req.gpus[7].index, 7);
  EXPECT_NE(req.gpus[0].uuid, req.gpus[1].uuid);
}

TEST(EmulatedAgentTest, FirstSyncIsNotHeld) {
  EmulatedAgent a = Registered(0);
  SyncRequest s = a.MakeSync(20000, 100);
  EXPECT_EQ(s.wait_ms, 0);
  EXPECT_EQ(s.agent_epoch, 7u);
  EXPECT_EQ(s.desired_version, 0u);
  EXPECT_EQ(a.MakeSync(20000, 100).wait_ms, 20000);
}

TEST(EmulatedAgentTest, ZeroRuntimeReportsStartAndExitInOneSync) {
  EmulatedAgent a = Registered(0);
  (void)a.MakeSync(20000, 100);
  EXPECT_EQ(a.Apply(Desired(5, {Order("3.1"), Order("4.1")}), 200), 2);
  SyncRequest s = a.MakeSync(20000, 201);
  EXPECT_EQ(s.wait_ms, 0);
  EXPECT_EQ(s.desired_version, 5u);
  ASSERT_EQ(s.runs.size(), 2u);
  EXPECT_FALSE(s.runs[0].running);
  EXPECT_EQ(s.runs[0].exit_code, 0);
  EXPECT_EQ(s.runs[0].started_at, 200);
  EXPECT_EQ(s.runs[0].ended_at, 200);
  // The head releases them: they are forgotten and counted done.
  EXPECT_EQ(a.Apply(Desired(6, {}), 210), 0);
  EXPECT_EQ(a.forgotten(), 2);
  EXPECT_EQ(a.live(), 0u);
  EXPECT_EQ(a.MakeSync(20000, 220).wait_ms, 20000);
}

TEST(EmulatedAgentTest, ARunStartsAtMostOnce) {
  EmulatedAgent a = Registered(0);
  EXPECT_EQ(a.Apply(Desired(5, {Order("3.1")}), 200), 1);
  EXPECT_EQ(a.Apply(Desired(5, {Order("3.1")}), 300), 0);
  EXPECT_EQ(a.MakeSync(0, 300).runs.at(0).started_at, 200);
}

TEST(EmulatedAgentTest, TimedRunExitsWhenDue) {
  EmulatedAgent a = Registered(1000);
  (void)a.MakeSync(20000, 0);
  a.Apply(Desired(5, {Order("3.1")}), 100);
  EXPECT_EQ(a.NextExitAt(), 1100);
  SyncRequest running = a.MakeSync(20000, 500);
  EXPECT_EQ(running.wait_ms, 20000);
  EXPECT_TRUE(running.runs.at(0).running);
  SyncRequest exited = a.MakeSync(20000, 1200);
  EXPECT_EQ(exited.wait_ms, 0);
  EXPECT_FALSE(exited.runs.at(0).running);
  EXPECT_EQ(exited.runs.at(0).ended_at, 1100);
  EXPECT_EQ(a.NextExitAt(), 0);
}

// With --usage-every-ms a running run carries its samples due since the last sync, numbered
// on, each once, the last no later than its end.
TEST(EmulatedAgentTest, UsageSamplesAreCarriedOnceEachUpToTheRunsEnd) {
  EmulatedAgent a("emu-1", 8, 1000, true, 300);
  a.OnRegistered(RegisterResponse{"tok", 1, 7, ""});
  (void)a.MakeSync(20000, 0);
  a.Apply(Desired(5, {Order("3.1")}), 100);
  SyncRequest first = a.MakeSync(20000, 750);  // samples at 400 and 700
  ASSERT_EQ(first.runs.at(0).usage.size(), 2u);
  EXPECT_EQ(first.runs.at(0).usage[0].seq, 1);
  EXPECT_EQ(first.runs.at(0).usage[1].at, 700);
  EXPECT_TRUE(a.MakeSync(20000, 790).runs.at(0).usage.empty());
  SyncRequest ended = a.MakeSync(20000, 5000);  // ended at 1100: one more, at 1000
  ASSERT_EQ(ended.runs.at(0).usage.size(), 1u);
  EXPECT_EQ(ended.runs.at(0).usage[0].seq, 3);
  EXPECT_EQ(ended.runs.at(0).usage[0].at, 1000);
  EXPECT_TRUE(Registered(1000).MakeSync(20000, 5000).runs.empty());
}

TEST(EmulatedAgentTest, StopEndsARunWithItsSignal) {
  EmulatedAgent a = Registered(60000);
  a.Apply(Desired(5, {Order("3.1")}), 100);
  (void)a.MakeSync(20000, 150);
  RunOrder stop = Order("3.1", true);
  stop.stop_signal = 10;
  a.Apply(Desired(6, {stop}), 200);
  SyncRequest s = a.MakeSync(20000, 250);
  EXPECT_EQ(s.wait_ms, 0);
  EXPECT_FALSE(s.runs.at(0).running);
  EXPECT_EQ(s.runs.at(0).exit_code, -10);
}

TEST(EmulatedAgentTest, CrossedOlderAnswerIsIgnoredAndReregisterIsObeyed) {
  EmulatedAgent a = Registered(0);
  a.Apply(Desired(6, {Order("3.1")}), 100);
  EXPECT_EQ(a.Apply(Desired(5, {}), 110), 0);
  EXPECT_EQ(a.live(), 1u);
  SyncResponse again;
  again.reregister = true;
  a.Apply(again, 120);
  EXPECT_FALSE(a.registered());
}

TEST(LatencyStatsTest, NearestRankPercentiles) {
  LatencyStats s;
  EXPECT_EQ(s.Percentile(0.5), 0);
  for (int i = 100; i >= 1; --i) s.Add(i);
  EXPECT_EQ(s.Percentile(0.5), 50);
  EXPECT_EQ(s.Percentile(0.99), 99);
  EXPECT_EQ(s.Percentile(1.0), 100);
  EXPECT_EQ(s.Percentile(0.0), 1);
  LatencyStats t;
  t.Add(1000);
  s.Merge(t);
  EXPECT_EQ(s.Percentile(1.0), 1000);
  EXPECT_EQ(s.count(), 101u);
}

TEST(JobRecordsTest, TimesFromThePage) {
  Json page = Json::parse(R"({"jobs":[
    {"id":10,"state":"succeeded","submitted_at":1000,"ended_at":1050,
     "runs":[{"scheduled_at":1002,"started_at":1010}]},
    {"id":11,"state":"pending","submitted_at":1001,"ended_at":0,"runs":[]},
    {"id":99,"state":"failed","submitted_at":1,"ended_at":2,"runs":[]}]})");
  JobTimes t;
  AddJobPage(page, 10, 11, &t);
  EXPECT_EQ(t.seen, 2u);
  EXPECT_EQ(t.terminal, 1u);
  EXPECT_EQ(t.failed, 0u);
  EXPECT_EQ(t.first_submitted, 1000);
  EXPECT_EQ(t.last_ended, 1050);
  EXPECT_EQ(t.submit_to_start.Percentile(0.5), 10);
  EXPECT_EQ(t.queued.Percentile(0.5), 2);
  EXPECT_EQ(t.dispatch.Percentile(0.5), 8);
  EXPECT_EQ(t.exit_seen.Percentile(0.5), 40);
}

}  // namespace
}  // namespace corral::bench
