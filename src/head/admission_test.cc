// Admission on its own: its decisions and settling steps over a hand-made cluster state, with
// no core around it (the core's tests cover the same behaviour through commands).
#include "head/admission.h"

#include <gtest/gtest.h>

namespace corral::head {
namespace {

class AdmissionTest : public ::testing::Test {
 protected:
  Job& Add(JobId id, JobState state = JobState::kPending) {
    Job& j = s_.jobs[id];
    j.id = id;
    j.owner = "ana";
    j.state = state;
    return j;
  }
  Job& AddElement(JobId id, JobId array, int32_t max_running) {
    Job& j = Add(id);
    j.array_id = array;
    j.array_max_running = max_running;
    return j;
  }
  // Every step until none, as text: "cancel 3", "reconsider 4", "admit 5".
  std::vector<std::string> Drain() {
    std::vector<std::string> out;
    while (auto step = a_.Next(s_)) {
      if (auto* c = std::get_if<Admission::Cancel>(&*step)) {
        out.push_back("cancel " + std::to_string(c->job));
      } else if (auto* r = std::get_if<Admission::Reconsider>(&*step)) {
        out.push_back("reconsider " + std::to_string(r->job));
      } else {
        out.push_back("admit " + std::to_string(std::get<Admission::Admitted>(*step).job));
      }
    }
    return out;
  }

  ClusterState s_;
  Admission a_;
};

TEST_F(AdmissionTest, AJobWithoutHoldsIsAdmitted) {
  EXPECT_FALSE(a_.Admit(s_, Add(1)).has_value());
  EXPECT_FALSE(a_.IsHeld(1));
  EXPECT_TRUE(Drain().empty());
}

TEST_F(AdmissionTest, AUserHoldComesFirstAndItsReleaseAdmits) {
  Job& j = Add(1);
  j.held = true;
  std::optional<PendingReason> why = a_.Admit(s_, j);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->code, PendingCode::kHeld);
  EXPECT_TRUE(a_.IsHeld(1));
  j.held = false;
  EXPECT_FALSE(a_.Withdraw(j));  // it was held: not in the scheduler
  EXPECT_FALSE(a_.Admit(s_, j).has_value());
}

TEST_F(AdmissionTest, AWaitingDependentIsReconsideredWhenItsTargetEnds) {
  Job& target = Add(1, JobState::kRunning);
  Job& dependent = Add(2);
  dependent.spec.dependencies = {{DependencyType::kAfterOk, {1}}};
  std::optional<PendingReason> why = a_.Admit(s_, dependent);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->code, PendingCode::kDependency);
  EXPECT_EQ(a_.Summary()["waiting_on"]["1"], Json::array({2}));

  target.state = JobState::kSucceeded;
  a_.OnEnded(target);
  EXPECT_EQ(Drain(), std::vector<std::string>{"reconsider 2"});
  EXPECT_FALSE(a_.IsHeld(2));  // Reconsider hands it back to Admit, which now admits it
  EXPECT_FALSE(a_.Admit(s_, dependent).has_value());
  EXPECT_TRUE(a_.Summary()["waiting_on"].empty());
}

TEST_F(AdmissionTest, ADependencyThatCanNeverHoldIsACancelStep) {
  Add(1, JobState::kFailed);
  Job& dependent = Add(2);
  dependent.spec.dependencies = {{DependencyType::kAfterOk, {1}}};
  std::optional<PendingReason> why = a_.Admit(s_, dependent);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->code, PendingCode::kDependencyNever);
  EXPECT_EQ(Drain(), std::vector<std::string>{"cancel 2"});
}

TEST_F(AdmissionTest, AReconsideredJobThatEndedMeanwhileIsSkipped) {
  Job& target = Add(1, JobState::kRunning);
  Job& dependent = Add(2);
  dependent.spec.dependencies = {{DependencyType::kAfterAny, {1}}};
  ASSERT_TRUE(a_.Admit(s_, dependent).has_value());
  target.state = JobState::kFailed;
  a_.OnEnded(target);
  dependent.state = JobState::kCancelled;
  EXPECT_TRUE(Drain().empty());
}

TEST_F(AdmissionTest, AnArrayRunsAtMostItsLimitAndAnEndAdmitsTheNext) {
  std::vector<Job*> elements;
  for (JobId id = 10; id < 14; ++id) elements.push_back(&AddElement(id, 10, 2));
  std::vector<bool> admitted;
  for (Job* e : elements) admitted.push_back(!a_.Admit(s_, *e).has_value());
  EXPECT_EQ(admitted, (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(a_.Summary()["array_live"]["10"], 2);

  elements[0]->state = JobState::kSucceeded;  // it ran: its slot frees
  a_.Release(*elements[0]);
  a_.OnEnded(*elements[0]);
  EXPECT_EQ(Drain(), std::vector<std::string>{"admit 12"});
  EXPECT_EQ(a_.Summary()["array_live"]["10"], 2);

  // Cancelling a held element frees nothing; cancelling an admitted one frees its slot.
  EXPECT_FALSE(a_.Withdraw(*elements[3]));
  EXPECT_TRUE(Drain().empty());
  EXPECT_TRUE(a_.Withdraw(*elements[1]));
  EXPECT_EQ(a_.Summary()["array_live"]["10"], 1);
}

TEST_F(AdmissionTest, ASingletonWaitsForTheOlderJobOfItsName) {
  Job& first = Add(1, JobState::kRunning);
  first.spec.name = "sweep";
  Job& second = Add(2);
  second.spec.name = "sweep";
  second.spec.dependencies = {{DependencyType::kSingleton, {}}};
  ASSERT_TRUE(a_.Admit(s_, second).has_value());
  EXPECT_EQ(a_.Summary()["singletons"], Json::array({2}));
  first.state = JobState::kSucceeded;
  a_.OnEnded(first);
  EXPECT_EQ(Drain(), std::vector<std::string>{"reconsider 2"});
  EXPECT_FALSE(a_.Admit(s_, second).has_value());
}

TEST_F(AdmissionTest, ARetiredTargetStillDecides) {
  s_.retired[1] = JobState::kSucceeded;
  Job& dependent = Add(2);
  dependent.spec.dependencies = {{DependencyType::kAfterOk, {1}}};
  EXPECT_FALSE(a_.Admit(s_, dependent).has_value());
  s_.retired[3] = JobState::kFailed;
  Job& other = Add(4);
  other.spec.dependencies = {{DependencyType::kAfterOk, {3}}};
  EXPECT_EQ(a_.Admit(s_, other)->code, PendingCode::kDependencyNever);
}

}  // namespace
}  // namespace corral::head
