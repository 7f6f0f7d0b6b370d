// The core's explanations on their own (explanations.h): what a view of a job shows of why it
// waits, and when each explanation stops being shown. The core's tests cover the same through
// commands and passes.
#include "head/explanations.h"

#include <gtest/gtest.h>

namespace corral::head {
namespace {

Job JobIn(JobId id, JobState state, bool held = false) {
  Job j;
  j.id = id;
  j.state = state;
  j.held = held;
  return j;
}

sched::StartEstimate EstimateFor(JobId id, TimeMs start, EstimateConfidence c) {
  sched::StartEstimate e;
  e.job = id;
  e.start = start;
  e.nodes = {"n1"};
  e.confidence = c;
  return e;
}

TEST(Explanations, PendingJobShowsItsReasonAndEstimate) {
  Explanations x;
  x.Waiting(7, {PendingCode::kResources, "no free room"});
  x.Estimated({EstimateFor(7, 5000, EstimateConfidence::kLow)});
  Job view = JobIn(7, JobState::kPending);
  x.Explain(&view);
  EXPECT_EQ(view.pending_code, PendingCode::kResources);
  EXPECT_EQ(view.pending_reason, "no free room");
  EXPECT_EQ(view.estimated_start, 5000);
  EXPECT_EQ(view.estimated_nodes, std::vector<std::string>{"n1"});
  EXPECT_EQ(view.estimate_confidence, EstimateConfidence::kLow);
}

TEST(Explanations, HeldJobHasNoEstimateAndUnknownStartShowsNone) {
  Explanations x;
  x.Estimated({EstimateFor(1, 5000, EstimateConfidence::kHigh),
               EstimateFor(2, sched::kUnknownTime, EstimateConfidence::kHigh)});
  Job held = JobIn(1, JobState::kPending, /*held=*/true);
  x.Explain(&held);
  EXPECT_EQ(held.estimated_start, 0);
  EXPECT_TRUE(held.estimated_nodes.empty());
  Job unknown = JobIn(2, JobState::kPending);
  x.Explain(&unknown);
  EXPECT_EQ(unknown.estimated_start, 0);
}

TEST(Explanations, AnEstimateReplacesAllEarlierOnes) {
  Explanations x;
  x.Estimated({EstimateFor(1, 5000, EstimateConfidence::kHigh)});
  x.Estimated({EstimateFor(2, 6000, EstimateConfidence::kHigh)});
  EXPECT_EQ(x.estimates().count(1), 0u);
  ASSERT_EQ(x.estimates().count(2), 1u);
  EXPECT_EQ(x.estimates().at(2).start, 6000);
}

TEST(Explanations, StagingNoteShowsOnlyWhilePlacedAndEndsWithTheJob) {
  Explanations x;
  x.Waiting(3, {PendingCode::kResources, "no free room"});
  x.Staging(3, "staging imagenet on n1: 41%");
  Job placed = JobIn(3, JobState::kScheduled);
  x.Explain(&placed);
  EXPECT_EQ(placed.pending_reason, "staging imagenet on n1: 41%");
  Job running = JobIn(3, JobState::kRunning);
  x.StagingDone(3);
  x.Explain(&running);
  EXPECT_EQ(running.pending_reason, "no free room");  // until placed, Admitted drops it
  x.Ended(3);
  Job ended = JobIn(3, JobState::kSucceeded);
  x.Explain(&ended);
  EXPECT_TRUE(ended.pending_reason.empty());
  EXPECT_TRUE(x.waiting().empty());
}

TEST(Explanations, AdmittedDropsTheReasonClearDropsEverything) {
  Explanations x;
  x.Waiting(4, {PendingCode::kQueueLimit, "queue at its limit"});
  x.Admitted(4);
  EXPECT_TRUE(x.waiting().empty());
  x.Waiting(5, {PendingCode::kResources, "no free room"});
  x.Estimated({EstimateFor(5, 1, EstimateConfidence::kHigh)});
  x.ServiceShort("web", "crash loop");
  EXPECT_EQ(x.ServiceNote("web"), "crash loop");
  x.Clear();
  EXPECT_TRUE(x.waiting().empty());
  EXPECT_TRUE(x.estimates().empty());
  EXPECT_EQ(x.ServiceNote("web"), "");
  x.ServiceShort("web", "cannot start a replica");
  x.ServiceFine("web");
  EXPECT_EQ(x.ServiceNote("web"), "");
}

}  // namespace
}  // namespace corral::head
