#include "core/desired_runs.h"

#include <gtest/gtest.h>

namespace corral {
namespace {

RunOrder Order(JobId job, int32_t replica = 0) {
  RunOrder o;
  o.job_id = job;
  o.attempt = 1;
  o.run_id = std::to_string(job) + ".1";
  o.replica = replica;
  o.command = {"true"};
  return o;
}

SyncResponse Full(uint64_t epoch, uint64_t version, std::vector<RunOrder> runs) {
  SyncResponse r;
  r.head_epoch = epoch;
  r.desired_version = version;
  r.runs = std::move(runs);
  return r;
}

SyncResponse Delta(uint64_t epoch, uint64_t base, uint64_t version, std::vector<JobId> changed,
                   std::vector<RunOrder> runs) {
  SyncResponse r = Full(epoch, version, std::move(runs));
  r.delta = true;
  r.base_version = base;
  r.changed_jobs = std::move(changed);
  return r;
}

std::vector<std::pair<JobId, int32_t>> Keys(const DesiredRuns& d) {
  std::vector<std::pair<JobId, int32_t>> out;
  for (const RunOrder& o : d.Full().runs) out.emplace_back(o.job_id, o.replica);
  return out;
}

using Keyed = std::vector<std::pair<JobId, int32_t>>;

TEST(DesiredRuns, ADeltaReplacesTheOrdersOfTheJobsItNamesOnly) {
  DesiredRuns d;
  ASSERT_TRUE(d.Apply(Full(2, 10, {Order(5), Order(3, 0), Order(3, 1)})));
  EXPECT_EQ(Keys(d), (Keyed{{3, 0}, {3, 1}, {5, 0}})) << "kept in the head's order, by job";
  // Job 3 lost replica 1 (it exited), job 5 ended, job 7 is new; job 9 is named but has none.
  RunOrder stop = Order(3, 0);
  stop.stop = true;
  ASSERT_TRUE(d.Apply(Delta(2, 10, 13, {3, 5, 7, 9}, {stop, Order(7)})));
  EXPECT_EQ(d.version(), 13u);
  EXPECT_EQ(Keys(d), (Keyed{{3, 0}, {7, 0}}));
  EXPECT_TRUE(d.Full().runs[0].stop);
  EXPECT_EQ(d.Full().desired_version, 13u);
  EXPECT_EQ(d.Full().head_epoch, 2u);
}

TEST(DesiredRuns, ADeltaFromAnotherVersionOrEpochIsNotTaken) {
  DesiredRuns d;
  ASSERT_TRUE(d.Apply(Full(2, 10, {Order(5)})));
  EXPECT_FALSE(d.Apply(Delta(2, 9, 12, {5}, {})));   // two syncs crossed: not onto 10
  EXPECT_FALSE(d.Apply(Delta(3, 10, 12, {5}, {})));  // another leadership's versions
  EXPECT_EQ(d.version(), 10u);
  EXPECT_EQ(Keys(d), (Keyed{{5, 0}}));
}

TEST(DesiredRuns, AnOlderFullAnswerOfTheSameEpochIsNotTakenANewEpochsIs) {
  DesiredRuns d;
  ASSERT_TRUE(d.Apply(Full(2, 10, {Order(5)})));
  EXPECT_FALSE(d.Apply(Full(2, 9, {})));
  EXPECT_EQ(Keys(d), (Keyed{{5, 0}}));
  ASSERT_TRUE(d.Apply(Full(3, 3ull << 32, {Order(6)})));  // a new head: lower numbers are fine
  EXPECT_EQ(Keys(d), (Keyed{{6, 0}}));
  d.Reset();
  EXPECT_EQ(d.version(), 0u);
  EXPECT_TRUE(d.Full().runs.empty());
}

}  // namespace
}  // namespace corral
