// Where a job's output is (HeadCore::LocateLogs): the query checked against the job's latest
// placed run, each wrong field named, and the agent to ask.
#include "head/core_scenario.h"

namespace corral::head::core_test {
namespace {

class Locate : public Scenario {
 protected:
  Result<LogSource> Logs(JobId id, LogQuery q) { return core().LocateLogs(Get(id), q); }
  static std::string Message(const Result<LogSource>& r) { return r.status().message(); }
};

TEST_P(Locate, APendingJobHasNoOutputYet) {
  Register("n1", 4);
  Submit(Spec(4));
  Job waiting = Submit(Spec(4));
  Schedule();
  auto at = Logs(waiting.id, {});
  ASSERT_TRUE(at.ok()) << at.status().ToString();
  EXPECT_TRUE(at->run_id.empty());
  EXPECT_EQ(at->job_state, JobState::kPending);
}

TEST_P(Locate, EachReplicaIsReadOnItsNodesAgent) {
  Register("n1", 4);
  Register("n2", 4);
  Job gang = Submit(Spec(4, /*replicas=*/2));
  Schedule();
  auto first = Logs(gang.id, {.replica = 0});
  auto second = Logs(gang.id, {.replica = 1});
  ASSERT_TRUE(first.ok() && second.ok()) << Message(first) << Message(second);
  EXPECT_EQ(first->run_id, ToString(RunId{gang.id, 1}));
  EXPECT_NE(first->node, second->node);
  EXPECT_EQ(second->address, second->node + ".example:7071");
  EXPECT_EQ(second->job_state, JobState::kScheduled);
}

TEST_P(Locate, AWrongReplicaTaskOrStepIsNamed) {
  Register("n1", 4);
  Job job = Submit(Spec(1));
  Schedule();
  auto replica = Logs(job.id, {.replica = 1});
  EXPECT_EQ(replica.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Message(replica), "query 'replica': the job has 1 replica(s)");
  auto task = Logs(job.id, {.task = 1});
  EXPECT_EQ(Message(task), "query 'task': replica 0 has 1 task(s)");
  auto step = Logs(job.id, {.step = 0});
  EXPECT_EQ(Message(step), "query 'step': the run has 0 step(s)");
}

TEST_P(Locate, ARequeuedJobIsReadFromItsLastPlacedRun) {
  Register("n1", 4);
  Job job = Submit(Spec(1));
  Schedule();
  ASSERT_TRUE(*Report("n1", {Running(Get(job.id))}));
  ASSERT_TRUE(core().Requeue(kAna, job.id, now()).ok());
  Step();
  ASSERT_TRUE(*Report("n1", {Exited(Get(job.id), 0, 15)}));
  ASSERT_EQ(Get(job.id).state, JobState::kPending);
  auto at = Logs(job.id, {});
  ASSERT_TRUE(at.ok()) << Message(at);
  EXPECT_EQ(at->run_id, ToString(RunId{job.id, 1}));
  EXPECT_EQ(at->job_state, JobState::kPending);
}

INSTANTIATE_TEST_SUITE_P(Head, Locate, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? "Recovered" : "Live";
                         });

}  // namespace
}  // namespace corral::head::core_test
