// A service's recent history from the head's kept changes (service_history.h): its own changes
// and its replicas' (recognised by their submission), each as one line, the latest kept.
#include "head/service_history.h"

#include <gtest/gtest.h>

namespace corral::head {
namespace {

Change At(uint64_t rev, ChangeKind what) {
  return Change{rev, static_cast<TimeMs>(rev * 1000), {}, std::move(what)};
}

Job Replica(JobId id, const std::string& service) {
  Job j;
  j.id = id;
  j.spec.service = service;
  return j;
}

std::deque<Change> TwoServices() {
  Service chat;
  chat.spec.name = "chat";
  chat.desired = 1;
  std::deque<Change> log;
  log.push_back(At(1, ServiceCreated{chat}));
  log.push_back(At(2, JobSubmitted{Replica(10, "chat")}));
  log.push_back(At(3, JobSubmitted{Replica(11, "echo")}));
  log.push_back(At(4, JobSubmitted{Replica(12, "")}));  // a training job
  log.push_back(At(5, ServiceReplicaMarked{"chat", 10, ReplicaMark::kReady, 0}));
  log.push_back(At(6, ServiceScaled{"chat", 1, 2, ScaleCause::kAutoscaler,
                                    "scaled 1 → 2: 4 requests in flight per replica over 30s"}));
  log.push_back(At(7, JobSubmitted{Replica(13, "chat")}));
  log.push_back(At(8, StopRequested{12, 1, "cancelled by ana", StopCause::kCancelled}));
  log.push_back(At(
      9, RunEnded{10, 1, RunState::kFailed, "exit 1", JobState::kFailed, 1, StopCause::kFailed}));
  log.push_back(At(10, ServiceScaled{"chat", 2, 3, ScaleCause::kHand, "scaled 2 → 3 by ana"}));
  log.push_back(At(11, ServiceRolloutEnded{"chat", true, "version 2 rolled back to version 1"}));
  return log;
}

TEST(ServiceHistory, AServicesOwnChangesAndItsReplicasReadAsLinesOldestFirst) {
  auto all = ServiceHistories(TwoServices(), {"chat"}, 20);
  ASSERT_EQ(all.size(), 1u) << "only the names asked";
  const ServiceHistory& h = all.at("chat");
  std::vector<std::string> lines;
  for (const ServiceEvent& e : h.events) lines.push_back(std::to_string(e.rev) + " " + e.text);
  EXPECT_EQ(lines, (std::vector<std::string>{
                       "1 created with 1 replica(s)",
                       "2 replica 10 submitted",
                       "5 replica 10 ready",
                       "6 scaled 1 → 2: 4 requests in flight per replica over 30s",
                       "7 replica 13 submitted",
                       "9 replica 10 run ended failed (exit 1): exit 1",
                       "10 scaled 2 → 3 by ana",
                       "11 update rolled back: version 2 rolled back to version 1",
                   }))
      << "not echo's replica, nor the training job's stop";
  EXPECT_EQ(h.events[1].job, 10);
  EXPECT_EQ(h.events[1].type, "job_submitted");
  ASSERT_TRUE(h.last_scale.has_value());
  EXPECT_EQ(h.last_scale->rev, 10u);
  EXPECT_EQ(h.last_scale->cause, "hand");
  EXPECT_EQ(h.events[3].cause, "autoscaler");
}

TEST(ServiceHistory, KeepsTheLatestEventsAndTheLastScaleHoweverOld) {
  auto all = ServiceHistories(TwoServices(), {"chat", "echo", "none"}, 2);
  const ServiceHistory& chat = all.at("chat");
  ASSERT_EQ(chat.events.size(), 2u);
  EXPECT_EQ(chat.events[0].rev, 10u);
  EXPECT_EQ(chat.events[1].rev, 11u);
  EXPECT_EQ(all.at("echo").events.size(), 1u);
  EXPECT_FALSE(all.at("echo").last_scale.has_value());
  EXPECT_TRUE(all.at("none").events.empty());
  auto only_scale = ServiceHistories(TwoServices(), {"chat"}, 0);
  EXPECT_TRUE(only_scale.at("chat").events.empty());
  ASSERT_TRUE(only_scale.at("chat").last_scale.has_value());
  EXPECT_EQ(only_scale.at("chat").last_scale->text, "scaled 2 → 3 by ana");
}

}  // namespace
}  // namespace corral::head
