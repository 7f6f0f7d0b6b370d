// scontrol update in the head's core: a pending job's time limit, priority and queue, within
// the caller's rights (Slurm's: only an admin raises a limit or a priority); a refused field
// or a job that is not pending changes nothing.
#include "head/core_scenario.h"

namespace corral::head::core_test {
namespace {

TEST_P(Scenario, UpdateChangesAPendingJobWithinTheCallersRights) {
  ASSERT_TRUE(core().SetQueue(kAdmin, {"gpu", 0, -1, 1.0}, now()).ok());
  QueueConfig none{"none", 0, 0, 1.0};  // may never use a GPU
  ASSERT_TRUE(core().SetQueue(kAdmin, none, now()).ok());
  Step();
  JobSpec s = Spec(1);
  s.time_limit_ms = kHour;
  Job job = Submit(s);
  const uint64_t rev = core().revision();
  auto expect_refused = [&](const Caller& by, JobUpdate u, ErrorCode code, const char* field) {
    auto r = core().UpdateJob(by, job.id, u, now());
    ASSERT_FALSE(r.ok()) << field;
    EXPECT_EQ(r.status().code(), code) << r.status().message();
    EXPECT_NE(r.status().message().find(field), std::string::npos) << r.status().message();
  };
  expect_refused(kAna, JobUpdate{.time_limit_ms = 2 * kHour}, ErrorCode::kPermissionDenied,
                 "field 'time_limit_ms': only an admin may raise");
  expect_refused(kAna, JobUpdate{.time_limit_ms = 0}, ErrorCode::kPermissionDenied,
                 "to none");  // no limit is more than an hour
  expect_refused(kAna, JobUpdate{.priority = 1}, ErrorCode::kPermissionDenied,
                 "field 'priority': only an admin may raise job");
  expect_refused(kBob, JobUpdate{.time_limit_ms = kMinute}, ErrorCode::kPermissionDenied,
                 "may not update job");
  expect_refused(kAna, JobUpdate{.queue = "none"}, ErrorCode::kInvalidArgument,
                 "field 'queue': the job needs 1 GPUs, more than queue 'none'");
  expect_refused(kAna, JobUpdate{.time_limit_ms = -1}, ErrorCode::kInvalidArgument,
                 "field 'time_limit_ms': got -1");
  EXPECT_EQ(core().revision(), rev) << "a refused update changes nothing";

  auto lowered =
      core().UpdateJob(kAna, job.id, {.time_limit_ms = kHour / 2, .queue = "gpu"}, now());
  ASSERT_TRUE(lowered.ok()) << lowered.status().message();
  Step();
  EXPECT_EQ(Get(job.id).spec.time_limit_ms, kHour / 2);
  EXPECT_EQ(Get(job.id).spec.queue, "gpu");
  ASSERT_TRUE(core().UpdateJob(kAdmin, job.id, {.priority = 7}, now()).ok());
  Step();
  EXPECT_EQ(Get(job.id).spec.priority, 7);
  auto lower = core().UpdateJob(kAna, job.id, {.priority = 3}, now());
  ASSERT_TRUE(lower.ok()) << "a user lowers it: " << lower.status().message();
  Step();
  EXPECT_EQ(Get(job.id).spec.priority, 3);
  EXPECT_EQ(Get(job.id).events.back().what, "updated");

  // In its new queue it is scheduled; then it is no longer pending and cannot be updated.
  Register("n1", 1);
  Schedule();
  ASSERT_EQ(Get(job.id).state, JobState::kScheduled);
  const uint64_t placed = core().revision();
  expect_refused(kAna, JobUpdate{.priority = 1}, ErrorCode::kFailedPrecondition,
                 "only a pending job's time limit, priority and queue may be updated");
  EXPECT_EQ(core().revision(), placed);
  h_.ExpectReplayEqualsLive();
}

}  // namespace
}  // namespace corral::head::core_test
