#include "core/codec.h"

#include <gtest/gtest.h>

namespace corral {
namespace {

TEST(Codec, JobRoundTrips) {
  Job j;
  j.id = 42;
  j.owner = "ana";
  j.spec.command = {"sleep", "1"};
  j.spec.per_replica.gpu_milli = 2000;
  j.spec.replicas = 2;
  j.state = JobState::kRunning;
  corral::Run r;
  r.attempt = 1;
  r.placement = {{"n1", {0, 1}}, {"n2", {2, 3}}};
  r.state = RunState::kRunning;
  r.exit_codes = {0, -9};
  j.runs.push_back(r);
  j.events.push_back({5, "submitted", ""});
  auto back = JobFromJson(ToJson(j));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(ToJson(*back), ToJson(j));
  EXPECT_EQ(back->runs[0].placement[1].gpus, (std::vector<int32_t>{2, 3}));
}

TEST(Codec, JsonNestingDepthCountsStructureNotStrings) {
  EXPECT_EQ(JsonNestingDepth(""), 0);
  EXPECT_EQ(JsonNestingDepth("42"), 0);
  EXPECT_EQ(JsonNestingDepth(R"({"a": [1, {"b": []}], "c": {}})"), 4);
  EXPECT_EQ(JsonNestingDepth(R"({"cmd": "echo [[[[{{{{"})"), 1) << "brackets in a string";
  EXPECT_EQ(JsonNestingDepth(R"({"q": "a \" [[[ \\", "x": [[]]})"), 3) << "escaped quotes";
  EXPECT_EQ(JsonNestingDepth(std::string(100000, '[')), 100000) << "unclosed counts too";
}

TEST(Codec, MalformedIsAnErrorNotACrash) {
  EXPECT_FALSE(JobFromJson(Json::parse(R"({"id":"x"})")).ok());
  EXPECT_FALSE(NodeFromJson(Json::parse(R"([1,2])")).ok());
  EXPECT_FALSE(SyncRequestFromJson(Json::parse(R"({"node":"a"})")).ok());
}

// Found by fuzz_agent_protocol: a float outside an integer field's range was cast unchecked.
TEST(Codec, FloatsOutsideAnIntegerFieldAreErrorsNotUndefinedCasts) {
  auto huge = SyncRequestFromJson(Json::parse(R"({"node":"a","agent_epoch":1,"wait_ms":1e300})"));
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("wait_ms"), std::string::npos) << huge.status().message();
  EXPECT_FALSE(
      SyncRequestFromJson(Json::parse(R"({"node":"a","agent_epoch":1,"wait_ms":2.5})")).ok());
  auto whole = SyncRequestFromJson(Json::parse(R"({"node":"a","agent_epoch":1,"wait_ms":25.0})"));
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  EXPECT_EQ(whole->wait_ms, 25);
}

TEST(Codec, RequiredFieldsAndIntegerListsAreCheckedLikeOptionalOnes) {
  // fuzz_agent_protocol (seed 1) found agent_epoch: 1.3e36 cast unchecked.
  auto epoch = SyncRequestFromJson(Json::parse(R"({"node":"a","agent_epoch":1.3e36})"));
  ASSERT_FALSE(epoch.ok());
  EXPECT_NE(epoch.status().message().find("agent_epoch"), std::string::npos)
      << epoch.status().message();
  EXPECT_FALSE(SyncRequestFromJson(Json::parse(R"({"node":"a","agent_epoch":-1.0})")).ok());
  auto ports =
      SyncRequestFromJson(Json::parse(R"({"node":"a","agent_epoch":1,"busy_ports":[7,1e300]})"));
  ASSERT_FALSE(ports.ok());
  EXPECT_NE(ports.status().message().find("busy_ports"), std::string::npos)
      << ports.status().message();
  auto order = SyncResponseFromJson(Json::parse(
      R"({"head_epoch":1,"desired_version":2,"runs":[{"run_id":"1.0","job_id":1,"attempt":0,)"
      R"("command":["true"],"gpus":[0,2.5]}]})"));
  ASSERT_FALSE(order.ok());
  EXPECT_NE(order.status().message().find("gpus"), std::string::npos) << order.status().message();
  auto whole =
      SyncRequestFromJson(Json::parse(R"({"node":"a","agent_epoch":4.0,"busy_ports":[7.0,8]})"));
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  EXPECT_EQ(whole->agent_epoch, 4u);
  EXPECT_EQ(whole->busy_ports, (std::vector<int32_t>{7, 8}));
}

TEST(RunId, ParsesOnlyWellFormed) {
  RunId id;
  ASSERT_TRUE(ParseRunId("17.3", &id));
  EXPECT_EQ(id.job, 17u);
  EXPECT_EQ(id.attempt, 3);
  EXPECT_FALSE(ParseRunId("17", &id));
  EXPECT_FALSE(ParseRunId("17.x", &id));
  EXPECT_EQ(ToString(RunId{5, 2}), "5.2");
}

TEST(Codec, SyncRequestGpuSamplesRoundTripAndAreOptional) {
  SyncRequest r;
  r.node = "n1";
  r.agent_epoch = 3;
  r.gpu_samples = {{0, 97, int64_t{70} << 30}, {1, 0, 0}};
  auto back = SyncRequestFromJson(ToJson(r));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->gpu_samples, r.gpu_samples);
  // An older agent sends none; an older head never looks: both still understand each other.
  auto old = SyncRequestFromJson(Json::parse(R"({"node":"n1","agent_epoch":3})"));
  ASSERT_TRUE(old.ok());
  EXPECT_TRUE(old->gpu_samples.empty());
  r.gpu_samples.clear();
  EXPECT_FALSE(ToJson(r).contains("gpu_samples"));
}

TEST(Codec, IdleSinceIsShownOnlyWhenSet) {
  Job j;
  j.id = 1;
  EXPECT_FALSE(ToJson(j).contains("idle_since"));
  j.idle_since = 12345;
  auto back = JobFromJson(ToJson(j));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->idle_since, 12345);
}

}  // namespace
}  // namespace corral
