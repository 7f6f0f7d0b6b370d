// Golden tests: squeue/sacct/scontrol/sinfo output for a fixed set of jobs, compared with the
// committed files in testdata/ (regenerate with CORRAL_UPDATE_GOLDEN=1 and review the diff).
// These pin the formatter; what a real Slurm prints for the same jobs is compared at run time
// by tests/slurm/slurm_diff_test.sh.
#include "slurm/format.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace corral::slurm {
namespace {

constexpr TimeMs kT0 = 1'800'000'000'000;  // 2027-01-15T08:00:00Z

Job MakeJob(JobId id, const std::string& name, JobState state) {
  Job j;
  j.id = id;
  j.owner = "alice";
  j.spec.name = name;
  j.spec.queue = "gpu";
  j.spec.batch = true;
  j.spec.workdir = "/home/alice";
  j.state = state;
  j.submitted_at = kT0;
  return j;
}

Run StartedRun(std::vector<std::string> nodes, TimeMs start, TimeMs end) {
  Run r;
  r.attempt = 1;
  for (const std::string& n : nodes) r.placement.push_back({n, {0}});
  r.state = end > 0 ? RunState::kSucceeded : RunState::kRunning;
  r.scheduled_at = start;
  r.started_at = start;
  r.ended_at = end;
  return r;
}

std::vector<Job> Jobs() {
  std::vector<Job> jobs;
  Job running = MakeJob(7, "train-ddp", JobState::kRunning);
  running.spec.replicas = 2;
  running.spec.per_replica.gpu_milli = 4 * kGpuMilli;
  running.spec.per_replica.cpu_milli = 8000;
  running.spec.time_limit_ms = 2 * 3600 * 1000;
  running.runs.push_back(StartedRun({"node01", "node02"}, kT0 + 5000, 0));
  jobs.push_back(running);

  Job pending = MakeJob(8, "eval", JobState::kPending);
  pending.pending_code = PendingCode::kDependency;
  pending.pending_reason = "waits for afterok:7";
  pending.spec.dependencies = {{DependencyType::kAfterOk, {7}}};
  jobs.push_back(pending);

  Job done = MakeJob(9, "sweep", JobState::kSucceeded);
  done.array_id = 9;
  done.array_index = 0;
  done.runs.push_back(StartedRun({"node03"}, kT0 + 1000, kT0 + 66'000));
  jobs.push_back(done);

  Job failed = MakeJob(10, "sweep", JobState::kFailed);
  failed.array_id = 9;
  failed.array_index = 1;
  failed.exit_code = 3;
  failed.runs.push_back(StartedRun({"node03"}, kT0 + 1000, kT0 + 2000));
  failed.runs.back().state = RunState::kFailed;
  jobs.push_back(failed);

  Job timeout = MakeJob(11, "long", JobState::kFailed);
  timeout.exit_code = -15;
  timeout.spec.time_limit_ms = 60'000;
  timeout.runs.push_back(StartedRun({"node04"}, kT0, kT0 + 61'000));
  timeout.runs.back().state = RunState::kFailed;
  timeout.runs.back().reason = "time limit 0:01:00 exceeded";
  timeout.runs.back().cause = corral::StopCause::kTimeLimit;
  jobs.push_back(timeout);

  Job cancelled = MakeJob(12, "oops", JobState::kCancelled);
  cancelled.spec.batch = false;
  cancelled.spec.command = {"python3", "x.py"};
  jobs.push_back(cancelled);
  return jobs;
}

void ExpectGolden(const std::string& name, const std::string& actual) {
  const std::string path = std::string(CORRAL_SLURM_TESTDATA) + "/" + name;
  if (std::getenv("CORRAL_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path) << actual;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << "missing golden file " << path;
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(actual, want.str()) << "golden file " << path;
}

class SlurmFormat : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("TZ", "UTC", 1);
    tzset();
  }
};

// squeue and sprio read their -o formats with one parser: widths, alignment and the literal
// text between and after the fields.
TEST(SlurmPercentFormat, SplitsFieldsWidthsAlignmentAndLiterals) {
  auto f = ParsePercentFormat("id=%.6i|%-4j%u;");
  ASSERT_TRUE(f.ok()) << f.status().message();
  ASSERT_EQ(f->fields.size(), 3u);
  EXPECT_EQ(f->fields[0].prefix, "id=");
  EXPECT_EQ(f->fields[0].letter, 'i');
  EXPECT_EQ(f->fields[0].width, 6);
  EXPECT_TRUE(f->fields[0].right);
  EXPECT_EQ(f->fields[1].prefix, "|");
  EXPECT_EQ(f->fields[1].width, 4);
  EXPECT_FALSE(f->fields[1].right);
  EXPECT_EQ(f->fields[2].width, 0);
  EXPECT_EQ(f->tail, ";");
  EXPECT_EQ(PercentCell("42", f->fields[0]), "id=    42");
  EXPECT_EQ(PercentCell("training", f->fields[1]), "|trai");
  EXPECT_EQ(PercentCell("alice", f->fields[2]), "alice");
}

TEST(SlurmPercentFormat, AFormatEndingInsideAFieldIsAnErrorNamingTheOption) {
  auto f = ParsePercentFormat("%.10i %.8");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("--format"), std::string::npos) << f.status().message();
}

TEST_F(SlurmFormat, SqueueDefault) {
  auto out = RenderSqueue(Jobs(), kSqueueDefaultFormat, true, kT0 + 3'725'000);
  ASSERT_TRUE(out.ok()) << out.status().message();
  ExpectGolden("squeue_default.txt", *out);
}

TEST_F(SlurmFormat, SqueueCustomFormatAndNoHeader) {
  auto out = RenderSqueue(Jobs(), "%i|%A|%a|%T|%l|%C|%b|%N|%S|%o|%Z|%%", false, kT0 + 70'000);
  ASSERT_TRUE(out.ok()) << out.status().message();
  ExpectGolden("squeue_custom.txt", *out);
  auto bad = RenderSqueue(Jobs(), "%i %w", true, kT0);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("option --format: unknown field %w; known: %i", 0), 0u);
}

TEST_F(SlurmFormat, SacctParsable2AndTable) {
  SacctOptions p;
  p.fields = {"JobID", "State", "ExitCode", "Elapsed"};
  p.parsable2 = true;
  auto out = RenderSacct(Jobs(), p, kT0 + 70'000);
  ASSERT_TRUE(out.ok()) << out.status().message();
  ExpectGolden("sacct_parsable2.txt", *out);

  SacctOptions t;  // the default fields, as a table, allocations only
  t.allocations_only = true;
  auto table = RenderSacct(Jobs(), t, kT0 + 70'000);
  ASSERT_TRUE(table.ok());
  ExpectGolden("sacct_table.txt", *table);

  SacctOptions bad;
  bad.fields = {"JobID", "MaxRSS"};
  auto err = RenderSacct(Jobs(), bad, kT0);
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(
      err.status().message().rfind("option --format: unknown field \"MaxRSS\"; known: JobID", 0),
      0u);
}

TEST_F(SlurmFormat, ScontrolShowJob) {
  std::vector<Job> jobs = Jobs();
  ExpectGolden("scontrol_show_job.txt",
               RenderScontrolJob(jobs[0], kT0 + 70'000) + RenderScontrolJob(jobs[3], kT0));
}

// A node as the CLI reads it back from GET /v1/nodes: `gpus` GPUs, `used` of them held.
NodeView SinfoNode(const std::string& name, int gpus, int used) {
  NodeView v;
  v.node.name = name;
  v.node.cpu_milli = 32000;
  v.node.memory_mb = 256000;
  v.node.gpus.resize(gpus);
  v.gpus_used = used;
  return v;
}

TEST_F(SlurmFormat, Sinfo) {
  std::vector<NodeView> nodes = {SinfoNode("node01", 4, 4), SinfoNode("node02", 4, 4),
                                 SinfoNode("node03", 4, 1), SinfoNode("node04", 4, 0),
                                 SinfoNode("node05", 4, 0)};
  nodes[4].node.drain = Drain::kDrained;
  ExpectGolden("sinfo_default.txt", RenderSinfo(nodes, {"default", "gpu"}, false, kT0));
  ExpectGolden("sinfo_long.txt", RenderSinfo(nodes, {"default"}, true, kT0));
}

// Drain and liveness are separate fields: a drained node that is also unreachable is down*
// (Slurm's "not responding"), a draining one with runs drng, a failing health check drain.
TEST(SlurmSinfo, DrainLivenessAndHealthMapToSlurmsStates) {
  std::vector<NodeView> nodes = {SinfoNode("n1", 2, 1), SinfoNode("n2", 2, 0),
                                 SinfoNode("n3", 2, 0), SinfoNode("n4", 2, 0)};
  nodes[0].node.drain = Drain::kDraining;
  nodes[1].node.drain = Drain::kDrained;
  nodes[1].node.liveness = Liveness::kUnreachable;
  nodes[2].node.unhealthy = "GPU 1: Xid 79";
  nodes[3].node.liveness = Liveness::kDown;
  std::string out = RenderSinfo(nodes, {"default"}, false, 0);
  EXPECT_NE(out.find("1   drng n1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("1  down* n2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("1  drain n3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("1   down n4\n"), std::string::npos) << out;
}

// Nodes inside a reservation that is on now (the API's node JSON says so): Slurm's MAINT and
// RESERVED states, whatever runs there.
TEST(SlurmSinfo, NodesInAReservationShowMaintOrResv) {
  auto node = [](const std::string& name, int used, const std::string& reservation, bool maint) {
    NodeView v = SinfoNode(name, 2, used);
    v.reservation = reservation;
    v.maintenance = maint;
    return v;
  };
  std::vector<NodeView> nodes = {node("gpu01", 0, "", false), node("gpu02", 2, "m1", true),
                                 node("gpu03", 0, "m1", true), node("gpu04", 0, "train", false)};
  std::string out = RenderSinfo(nodes, {"default"}, false, 0);
  EXPECT_NE(out.find("1   idle gpu01\n"), std::string::npos) << out;
  EXPECT_NE(out.find("2  maint gpu[02-03]\n"), std::string::npos) << out;
  EXPECT_NE(out.find("1   resv gpu04\n"), std::string::npos) << out;
  std::string long_out = RenderSinfo(nodes, {"default"}, true, 0);
  EXPECT_NE(long_out.find("default*       maint"), std::string::npos) << long_out;
  EXPECT_NE(long_out.find("default*    reserved"), std::string::npos) << long_out;
}

TEST(SlurmStates, EveryEndMapsToSlurmsName) {
  Job j;
  j.state = JobState::kPending;
  EXPECT_EQ(SlurmState(j), "PENDING");
  j.state = JobState::kScheduled;
  EXPECT_EQ(SlurmState(j), "RUNNING");
  j.state = JobState::kSucceeded;
  EXPECT_EQ(SlurmState(j), "COMPLETED");
  j.state = JobState::kCancelled;
  EXPECT_EQ(SlurmState(j), "CANCELLED");
  j.state = JobState::kFailed;
  EXPECT_EQ(SlurmState(j), "FAILED");
  j.runs.push_back(corral::Run{});
  j.runs.back().state = RunState::kLost;
  EXPECT_EQ(SlurmState(j), "NODE_FAIL");
  j.runs.back().state = RunState::kPreempted;
  EXPECT_EQ(SlurmState(j), "PREEMPTED");
  j.runs.back().state = RunState::kFailed;
  j.runs.back().cause = corral::StopCause::kFailed;
  EXPECT_EQ(SlurmState(j), "FAILED");
  j.runs.back().cause = corral::StopCause::kOutOfMemory;
  EXPECT_EQ(SlurmState(j), "OUT_OF_MEMORY");
  j.runs.back().cause = corral::StopCause::kTimeLimit;
  EXPECT_EQ(SlurmState(j), "TIMEOUT");
  j.runs.back().cause = corral::StopCause::kFailed;
  j.runs.back().reason = "time limit 1:00:00 exceeded";  // words alone decide nothing
  EXPECT_EQ(SlurmState(j), "FAILED");
  EXPECT_EQ(CompactState("TIMEOUT"), "TO");
  EXPECT_EQ(CompactState("PENDING"), "PD");
  EXPECT_EQ(SqueueTime(65'000), "1:05");
  EXPECT_EQ(SqueueTime(3'725'000), "1:02:05");
  EXPECT_EQ(SqueueTime(90'061'000), "1-01:01:01");
  EXPECT_EQ(SacctTime(65'000), "00:01:05");
}

}  // namespace
}  // namespace corral::slurm

namespace corral::slurm {
namespace {

// squeue --start: a pending job's estimated start and nodes; N/A and (null) without one.
TEST(SqueueStart, PendingJobsShowTheirEstimate) {
  setenv("TZ", "UTC", 1);
  tzset();
  Job est = MakeJob(21, "big", JobState::kPending);
  est.estimated_start = kT0 + 3600'000;
  est.estimated_nodes = {"node01", "node02"};
  est.estimate_confidence = EstimateConfidence::kLow;
  Job none = MakeJob(22, "huge", JobState::kPending);
  auto out = RenderSqueue({est, none}, "%i %S %Y %~", false, kT0);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(*out, "21 2027-01-15T09:00:00 node[01-02] low\n22 N/A (null) N/A\n");
  auto header = RenderSqueue({}, kSqueueStartFormat, true, kT0);
  ASSERT_TRUE(header.ok());
  EXPECT_EQ(*header,
            "             JOBID PARTITION     NAME     USER ST          START_TIME  NODES "
            "SCHEDNODES           CONFIDENCE NODELIST(REASON)\n");
}

}  // namespace
}  // namespace corral::slurm
