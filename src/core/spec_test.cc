#include "core/spec.h"

#include <gtest/gtest.h>

#include "core/codec.h"

namespace corral {
namespace {

// Found by fuzz/job_spec_yaml_fuzz.cc: a YAML spec file's bytes need not be UTF-8, and the
// error naming the field quoted them with a throwing dump().
TEST(ParseJobSpec, InvalidUtf8IsAnErrorNotAnException) {
  Json spec = {{"command", {"true"}}, {"gpus", "1\xff\xff"}};
  auto r = ParseJobSpec(spec);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("field 'gpus'"), std::string::npos) << r.status().message();
  auto not_object = ParseJobSpec(Json("\xfe"));
  ASSERT_FALSE(not_object.ok());
}

// Found by fuzz_job_spec_json: a float outside int64 was cast unchecked.
TEST(ParseJobSpec, HugeFloatsAreOutOfRangeNotUndefinedCasts) {
  for (const char* field : {"gpus", "replicas", "priority", "max_restarts"}) {
    Json spec = {{"command", {"true"}}, {field, 1e300}};
    auto r = ParseJobSpec(spec);
    ASSERT_FALSE(r.ok()) << field;
    EXPECT_NE(r.status().message().find(std::string("field '") + field + "'"), std::string::npos)
        << r.status().message();
  }
}

TEST(ParseJobSpec, SpreadIsOneReplicaPerNodeAndSurvivesTheCodec) {
  auto plain = ParseJobSpec(Json::parse(R"({"command":["x"],"replicas":2})"));
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->max_replicas_per_node, 0);
  EXPECT_FALSE(ToJson(*plain).contains("max_replicas_per_node"));  // older documents unchanged
  auto spread = ParseJobSpec(Json::parse(R"({"command":["x"],"replicas":2,"spread":true})"));
  ASSERT_TRUE(spread.ok()) << spread.status().ToString();
  EXPECT_EQ(spread->max_replicas_per_node, 1);
  auto two =
      ParseJobSpec(Json::parse(R"({"command":["x"],"replicas":4,"max_replicas_per_node":2})"));
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  EXPECT_EQ(two->max_replicas_per_node, 2);
  Job job;
  job.id = 1;
  job.spec = *two;
  auto back = JobFromJson(ToJson(job));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->spec.max_replicas_per_node, 2);
}

TEST(ParseJobSpec, StageOutIsTwoAbsolutePathsAndSurvivesTheCodec) {
  auto text = ParseJobSpec(Json::parse(R"({"command":["x"],"stage_out":"/scratch/o:/shared/r"})"));
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(text->stage_out, (StageOut{"/scratch/o", "/shared/r"}));
  auto object = ParseJobSpec(
      Json::parse(R"({"command":["x"],"stage_out":{"dir":"/scratch/o","dest":"/shared/r"}})"));
  ASSERT_TRUE(object.ok()) << object.status().ToString();
  EXPECT_EQ(object->stage_out, text->stage_out);
  Job job;
  job.id = 1;
  job.spec = *object;
  auto back = JobFromJson(ToJson(job));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->spec.stage_out, text->stage_out);
  for (const char* bad : {R"("out:/shared/r")", R"("/scratch/o:shared")", R"("/scratch/o")",
                          R"("/scratch/o:/scratch/o/r")", R"("/shared:/shared/../x")",
                          R"("/a/b:/a")", R"({"dir":"/a"})", "3"}) {
    auto r = ParseJobSpec(Json::parse(std::string(R"({"command":["x"],"stage_out":)") + bad + "}"));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("field 'stage_out'"), std::string::npos)
        << r.status().message();
  }
}

TEST(ParseJobSpec, AcceptsFullSpec) {
  auto s = ParseJobSpec(Json::parse(R"({"name":"train","command":["python","t.py"],
    "gpus":4,"cpus":2.5,"memory":"16G","replicas":2,"time_limit":"1:30:00","queue":"org/team",
    "preemptible":true,"checkpoint_signal":"SIGUSR1","grace_period":"30s","priority":5,
    "env":{"A":"1"},"node_labels":{"rack":"r1"},"tasks_per_replica":4})"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->per_replica.gpu_milli, 4000);
  EXPECT_EQ(s->per_replica.cpu_milli, 2500);
  EXPECT_EQ(s->per_replica.memory_mb, 16 * 1024);
  EXPECT_EQ(s->replicas, 2);
  EXPECT_EQ(s->time_limit_ms, 90 * kMinute);
  EXPECT_EQ(s->queue, "org/team");
  EXPECT_TRUE(s->preemptible);
  EXPECT_EQ(s->checkpoint_signal, 10);
  EXPECT_EQ(s->grace_ms, 30 * kSecond);
  EXPECT_EQ(s->env.at("A"), "1");
  EXPECT_EQ(s->tasks_per_replica, 4);
  auto per_gpu = ParseJobSpec(Json::parse(R"({"command":["x"],"tasks_per_replica":"gpu"})"));
  ASSERT_TRUE(per_gpu.ok()) << per_gpu.status().ToString();
  EXPECT_EQ(per_gpu->tasks_per_replica, -1);
}

struct BadCase {
  const char* json;
  const char* must_mention;
};

class ParseJobSpecRejects : public ::testing::TestWithParam<BadCase> {};

TEST_P(ParseJobSpecRejects, NamesTheField) {
  auto s = ParseJobSpec(Json::parse(GetParam().json));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find(GetParam().must_mention), std::string::npos)
      << s.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ParseJobSpecRejects,
    ::testing::Values(
        BadCase{R"({"gpus":1})", "command"}, BadCase{R"({"command":["x"],"gpus":-1})", "gpus"},
        BadCase{R"({"command":["x"],"gpus":"two"})", "\"two\""},
        BadCase{R"({"command":["x"],"gpus":1.5})", "a whole number of GPUs when more than one"},
        BadCase{R"({"command":["x"],"gpus":-0.5})", "field 'gpus'"},
        BadCase{R"({"command":["x"],"gpus":0.0001})", "at most 3 decimals"},
        BadCase{R"({"command":["x"],"gpus":"0.2x"})", "field 'gpus'"},
        BadCase{R"({"command":["x"],"gpus":2,"gpu_memory":"4G"})", "field 'gpu_memory'"},
        BadCase{R"({"command":["x"],"gpus":0.5,"gpu_memory":"0"})", "field 'gpu_memory'"},
        BadCase{R"({"command":["x"],"gpus":0.5,"gpu_memory":"lots"})", "gpu_memory"},
        BadCase{R"({"command":["x"],"gpus":0.5,"gpu_isolation":"mig"})", "gpu_isolation"},
        BadCase{R"({"command":["x"],"gpus":1,"gpu_isolation":"mps"})", "gpu_isolation"},
        BadCase{R"({"command":["x"],"replicas":0})", "replicas"},
        BadCase{R"({"command":["x"],"max_replicas_per_node":0})", "field 'max_replicas_per_node'"},
        BadCase{R"({"command":["x"],"spread":"yes"})", "field 'spread'"},
        BadCase{R"({"command":["x"],"spread":true,"max_replicas_per_node":2})", "field 'spread'"},
        BadCase{R"({"command":["x"],"memory":"12Q"})", "memory"},
        BadCase{R"({"command":["x"],"cpus":-2})", "cpus"},
        BadCase{R"({"command":["x"],"time_limit":"soon"})", "time_limit"},
        BadCase{R"({"command":["x"],"colour":"red"})", "colour"},
        BadCase{R"({"command":["x"],"queue":"/bad"})", "queue"},
        BadCase{R"({"command":["x"],"preemptible":"yes"})", "preemptible"},
        BadCase{R"({"command":["x"],"checkpoint_signal":"SIGFOO"})", "checkpoint_signal"},
        BadCase{R"({"command":["x"],"tasks_per_replica":0})", "tasks_per_replica"},
        BadCase{R"({"command":["x"],"tasks_per_replica":"cpu"})", "tasks_per_replica"},
        BadCase{R"({"command":["x"],"notebook":"yes"})", "field 'notebook'"},
        BadCase{R"({"command":["x"],"notebook":true})", "kind \"interactive\""},
        BadCase{R"({"command":[]})", "command"}));

TEST(ParseJobSpec, ANotebookIsASessionAndSurvivesTheCodec) {
  auto s = ParseJobSpec(
      Json::parse(R"({"command":["jupyter-notebook"],"kind":"interactive","notebook":true})"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(s->interactive);
  EXPECT_TRUE(s->notebook);
  Json j = ToJson(*s);
  EXPECT_EQ(j["notebook"], true);
  auto back = JobSpecFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->notebook);
  EXPECT_FALSE(ToJson(JobSpec{}).contains("notebook")) << "absent unless set";
}

TEST(ParseDuration, Forms) {
  EXPECT_EQ(*ParseDuration("t", "90"), 90 * kSecond);
  EXPECT_EQ(*ParseDuration("t", "15m"), 15 * kMinute);
  EXPECT_EQ(*ParseDuration("t", "2h"), 2 * kHour);
  EXPECT_EQ(*ParseDuration("t", "1:30:00"), 90 * kMinute);
  EXPECT_EQ(*ParseDuration("t", "5:00"), 5 * kMinute);
  EXPECT_EQ(*ParseDuration("t", "1-02:00:00"), 26 * kHour);
  EXPECT_FALSE(ParseDuration("t", "-5").ok());
  EXPECT_FALSE(ParseDuration("t", "1:2:3:4").ok());
}

// fuzz_job_spec_json: numbers that overflowed int64 when scaled (undefined behaviour) are
// refused like any bad duration.
TEST(ParseDuration, NumbersPastAYearOfSecondsAreRefusedNotOverflowed) {
  for (const char* text : {"2777777777777777:7777777777777777775", "9999999999999999-00:00:00",
                           "00:00:9223372036854775807", "31622401"}) {
    auto d = ParseDuration("time_limit", text);
    ASSERT_FALSE(d.ok()) << text;
    EXPECT_NE(d.status().message().find("field 'time_limit'"), std::string::npos);
  }
  EXPECT_EQ(*ParseDuration("t", "366-00:00:00"), 366 * 24 * kHour);
  EXPECT_EQ(*ParseDuration("t", "31622400"), 31622400 * kSecond);
}

TEST(ParseJobSpec, ContainerFields) {
  auto s = ParseJobSpec(
      Json{{"command", {"true"}},
           {"image", "registry.local:5000/team/train:v1"},
           {"mounts", {"/data:/data:ro", {{"source", "/scratch"}, {"destination", "/s"}}}},
           {"container_workdir", "/work"},
           {"container_writable", true},
           {"container_mount_home", false}});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->container.image, "registry.local:5000/team/train:v1");
  ASSERT_EQ(s->container.mounts.size(), 2u);
  EXPECT_TRUE(s->container.mounts[0].read_only);
  EXPECT_EQ(s->container.mounts[1].destination, "/s");
  EXPECT_EQ(s->container.workdir, "/work");
  EXPECT_TRUE(s->container.writable);
  EXPECT_FALSE(s->container.mount_home);
  // Canonical forms.
  EXPECT_EQ(ParseJobSpec(Json{{"command", {"true"}}, {"image", "ubuntu"}})->container.image,
            "docker.io/library/ubuntu:latest");
  EXPECT_EQ(ParseJobSpec(Json{{"command", {"true"}}, {"image", "/srv/img.tar"}})->container.image,
            "/srv/img.tar");
  // The stored form round-trips.
  auto back = JobSpecFromJson(ToJson(*s));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->container, s->container);
}

TEST(ParseJobSpec, BadContainerFieldsNameTheField) {
  const std::vector<std::pair<Json, std::string>> cases = {
      {{{"image", "Bad Name"}}, "field 'image'"},
      {{{"image", "reg:5000/x@sha256:abc"}}, "bad digest"},
      {{{"image", "oci:relative"}}, "field 'image'"},
      {{{"image", "/a/../b.tar"}}, "field 'image'"},
      {{{"image", "x"}, {"mounts", {"data:/data"}}}, "field 'mounts[0]'"},
      {{{"image", "x"}, {"mounts", {"/data:/proc/x"}}}, "field 'mounts[0]'"},
      {{{"image", "x"}, {"mounts", {"/data:/d:rx"}}}, "unknown option 'rx'"},
      {{{"image", "x"}, {"mounts", {{{"source", "/a"}, {"dest", "/b"}}}}}, "mounts[0].dest"},
      {{{"image", "x"}, {"container_workdir", "work"}}, "field 'container_workdir'"},
      {{{"mounts", {"/a:/b"}}}, "field 'image': required"},
  };
  for (const auto& [fields, want] : cases) {
    Json j = fields;
    j["command"] = {"true"};
    auto s = ParseJobSpec(j);
    ASSERT_FALSE(s.ok()) << j.dump();
    EXPECT_NE(s.status().message().find(want), std::string::npos) << s.status().message();
  }
}

}  // namespace
}  // namespace corral

namespace corral {
namespace {

TEST(ParseJobSpec, SharesOfOneGpuInMilliGpus) {
  auto a = ParseJobSpec(Json::parse(R"({"command":["x"],"gpus":0.25})"));
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->per_replica.gpu_milli, 250);
  EXPECT_TRUE(a->per_replica.IsShare());
  EXPECT_EQ(a->per_replica.gpu_isolation, GpuIsolation::kMemory);
  auto b = ParseJobSpec(
      Json::parse(R"({"command":["x"],"gpus":"0.5","gpu_memory":"10G","gpu_isolation":"mps"})"));
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->per_replica.gpu_milli, 500);
  EXPECT_EQ(b->per_replica.gpu_memory_mb, 10240);
  EXPECT_EQ(b->per_replica.gpu_isolation, GpuIsolation::kMps);
  // Memory alone is a share too (no compute reserved beyond time-slicing).
  auto c = ParseJobSpec(Json::parse(R"({"command":["x"],"gpu_memory":"4G"})"));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->per_replica.IsShare());
  EXPECT_EQ(c->per_replica.gpu_milli, 0);
  // Whole GPUs stay exclusive.
  auto d = ParseJobSpec(Json::parse(R"({"command":["x"],"gpus":2.0})"));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->per_replica.gpu_milli, 2000);
  EXPECT_FALSE(d->per_replica.IsShare());
  // The record keeps the share through the codec.
  JobSpec back = JobSpecFromJson(ToJson(*b)).value();
  EXPECT_EQ(back.per_replica, b->per_replica);
}

TEST(GpuReserve, ThreePercentOrQuarterGiB) {
  EXPECT_EQ(GpuReserveMb(81920), 2458);  // 3% of 80 GiB, rounded up
  EXPECT_EQ(GpuReserveMb(4096), 256);
  EXPECT_EQ(ShareMemoryMb(250, 0, 16384), (16384 - 492) / 4);
  EXPECT_EQ(ShareMemoryMb(250, 4096, 16384), 4096);
}

}  // namespace
}  // namespace corral
