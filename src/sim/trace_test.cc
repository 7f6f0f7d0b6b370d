#include "sim/trace.h"

#include <gtest/gtest.h>

#include "sim/test_traces.h"

namespace corral::sim {
namespace {

using testing::Data;

Result<Trace> Parse(const std::string& text, TraceFormat f = TraceFormat::kAuto,
                    double max_bad = 0.01) {
  TraceOptions o;
  o.format = f;
  o.max_bad_fraction = max_bad;
  return ParseTrace(text, "t.csv", o);
}

TEST(TraceTest, GenericCsvWithHeaderSortsAndRebases) {
  Result<Trace> t = Parse(
      "job_id,submit_time,duration,num_gpus,queue,user\n"
      "a,110,5.5,2,q1,alice\n"
      "b,100,60,1,q2,bob\n");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->format, TraceFormat::kCsv);
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->jobs[0].id, "b");
  EXPECT_EQ(t->jobs[0].submit_ms, 0);
  EXPECT_EQ(t->jobs[0].queue, "q2");
  EXPECT_EQ(t->jobs[0].line, 3);
  EXPECT_EQ(t->jobs[1].id, "a");
  EXPECT_EQ(t->jobs[1].submit_ms, 10000);
  EXPECT_EQ(t->jobs[1].duration_ms, 5500);
  EXPECT_EQ(t->jobs[1].num_gpus, 2);
  EXPECT_EQ(t->jobs[1].user, "alice");
}

TEST(TraceTest, PhillyUsersSubmitsAtTheRunningSumOfIntervalsWithItsUsers) {
  Result<Trace> t = Parse(
      "u_id,user,gpu_num,cpu_num,node_num,interval,run_time,wall_time,new_status\n"
      "0,7,1,0,1,0,100,0,Pass\n"
      "1,3,8,0,1,30,2000,0,Failed\n"
      "2,7,2,0,1,15.5,60,0,Killed\n"
      "3,7,2,0,1,-4,60,0,Killed\n"
      "4,,2,0,1,4,60,0,Killed\n",
      TraceFormat::kAuto, 0.5);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->format, TraceFormat::kPhillyUsers);
  ASSERT_EQ(t->jobs.size(), 3u);
  EXPECT_EQ(t->jobs[1].submit_ms, 30000);
  EXPECT_EQ(t->jobs[2].submit_ms, 45500);
  EXPECT_EQ(t->jobs[1].user, "u3");
  EXPECT_EQ(t->jobs[2].user, "u7");
  EXPECT_EQ(t->jobs[1].num_gpus, 8);
  EXPECT_EQ(t->jobs[1].duration_ms, 2000000);
  ASSERT_EQ(t->bad.size(), 2u);
  EXPECT_NE(t->bad[0].why.find("interval '-4'"), std::string::npos) << t->bad[0].why;
  EXPECT_NE(t->bad[1].why.find("user is empty"), std::string::npos) << t->bad[1].why;
}

TEST(TraceTest, GenericCsvWithoutHeaderDefaultsQueue) {
  Result<Trace> t = Parse("1,0,10,4\n2,5,10,1\n", TraceFormat::kCsv);
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->jobs[0].queue, "default");
  EXPECT_EQ(t->jobs[0].num_gpus, 4);
}

TEST(TraceTest, MalformedRowsAreCountedWithLineNumbers) {
  std::string text = "job_id,submit_time,duration,num_gpus\n";
  for (int i = 0; i < 200; ++i) text += std::to_string(i) + "," + std::to_string(i) + ",10,1\n";
  text += "x,abc,10,1\n";         // line 202: bad submit
  text += "\n";                   // blank: ignored
  text += "y,5,10,0\n";           // line 204: zero GPUs
  Result<Trace> t = Parse(text);  // 2 bad of 202 rows: just under 1%
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->rows, 202);
  EXPECT_EQ(t->jobs.size(), 200u);
  ASSERT_EQ(t->bad.size(), 2u);
  EXPECT_EQ(t->bad[0].line, 202);
  EXPECT_NE(t->bad[0].why.find("abc"), std::string::npos);
  EXPECT_EQ(t->bad[1].line, 204);
}

// A submit time past any trace's (or past int64 in ms) is a malformed row, not an overflow.
TEST(TraceTest, SubmitTimesBeyondAnyTraceAreMalformedRows) {
  std::string text = "job_id,submit_time,duration,num_gpus\n";
  for (int i = 0; i < 200; ++i) text += std::to_string(i) + "," + std::to_string(i) + ",10,1\n";
  text += "x,1488888888888888888888888888888,10,1\n";  // line 202
  text += "y,inf,10,1\n";                              // line 203
  text += "z,5,1e300,1\n";                             // line 204: a duration past any trace
  Result<Trace> t = Parse(text, TraceFormat::kAuto, 0.05);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->jobs.size(), 200u);
  ASSERT_EQ(t->bad.size(), 3u);
  EXPECT_EQ(t->bad[0].line, 202);
  EXPECT_EQ(t->bad[1].line, 203);
  EXPECT_EQ(t->bad[2].line, 204);
  EXPECT_EQ(t->jobs.back().submit_ms, 199 * kSecond);
}

TEST(TraceTest, TooManyMalformedRowsFailTheRead) {
  std::string text = "job_id,submit_time,duration,num_gpus\n";
  for (int i = 0; i < 50; ++i) text += std::to_string(i) + ",0,10,1\n";
  text += "x,0,-3,1\n";           // line 52
  Result<Trace> t = Parse(text);  // 1 of 51 rows = 2% > 1%
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("line 52"), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("1 of 51 rows"), std::string::npos);
  EXPECT_TRUE(Parse(text, TraceFormat::kAuto, 0.05).ok());  // --max-bad-rows 5%
}

TEST(TraceTest, PhillyRealSlice) {
  Result<Trace> t = ReadTraceFile(Data("philly_slice.csv"), {});
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->format, TraceFormat::kPhilly);
  EXPECT_EQ(t->rows, 400);
  EXPECT_TRUE(t->bad.empty());
  ASSERT_EQ(t->jobs.size(), 400u);
  // Line 2: 2017-10-09 07:01:55,66.0,1,66.0,11cb48
  const TraceJob* first = nullptr;
  for (const TraceJob& j : t->jobs) {
    if (j.line == 2) first = &j;
  }
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->id, "2");
  EXPECT_EQ(first->duration_ms, 66000);
  EXPECT_EQ(first->queue, "11cb48");
  EXPECT_EQ(t->jobs.front().submit_ms, 0);
}

TEST(TraceTest, PhillyBadTimestampNamesTheLine) {
  Result<Trace> t = Parse(
      "timestamp,duration,num_gpus,gpu_time,cluster\n"
      "2017-10-09 07:01:55,66.0,1,66.0,vc\n"
      "2017-13-09 07:01:55,66.0,1,66.0,vc\n",
      TraceFormat::kAuto, 0.5);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->bad.size(), 1u);
  EXPECT_EQ(t->bad[0].line, 3);
  EXPECT_NE(t->bad[0].why.find("timestamp"), std::string::npos);
}

TEST(TraceTest, ParseDateTime) {
  int64_t s = 0;
  ASSERT_TRUE(ParseDateTime("1970-01-02 00:00:01", &s));
  EXPECT_EQ(s, 86401);
  ASSERT_TRUE(ParseDateTime("2017-09-04 00:00:00", &s));
  EXPECT_EQ(s, 1504483200);
  EXPECT_FALSE(ParseDateTime("2017-09-04", &s));
  EXPECT_FALSE(ParseDateTime("2017-09-04 00:00:00x", &s));
}

TEST(TraceTest, Tiresias) {
  Result<Trace> t = ReadTraceFile(Data("tiresias_60_job.csv"), {});
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->format, TraceFormat::kTiresias);
  ASSERT_EQ(t->jobs.size(), 60u);
  EXPECT_EQ(t->jobs[0].id, "0");
  EXPECT_EQ(t->jobs[0].duration_ms, 164000);
  EXPECT_EQ(t->jobs[1].num_gpus, 8);
  EXPECT_EQ(t->jobs[1].submit_ms, 30000);
}

TEST(TraceTest, GavelBothLayouts) {
  TraceOptions o;
  o.gavel_steps_per_second = 2.0;
  Result<Trace> t = ReadTraceFile(Data("gavel_2869ce_head.trace"), o);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->format, TraceFormat::kGavel);
  EXPECT_EQ(t->jobs.size(), 40u);
  EXPECT_EQ(t->jobs[0].queue, "gavel_2869ce_head");
  Result<Trace> s = ReadTraceFile(Data("gavel_small_test.trace"), {});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->jobs.size(), 20u);
  // First row: Transformer ... total_steps 346, scale_factor 2, arrival 0.
  EXPECT_EQ(s->jobs[0].duration_ms, 346000);
  EXPECT_EQ(s->jobs[0].num_gpus, 2);
}

TEST(TraceTest, HeliosJobLogSkipsCpuJobs) {
  Result<Trace> t = Parse(
      "job_id,user,vc,jobname,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,"
      "duration,queue\n"
      "j1,u1,vcA,n,8,32,1,COMPLETED,2020-04-01 00:00:05,2020-04-01 00:00:06,x,100,1\n"
      "j2,u2,vcB,n,0,4,1,COMPLETED,2020-04-01 00:00:07,2020-04-01 00:00:07,x,3,0\n");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->format, TraceFormat::kHelios);
  ASSERT_EQ(t->jobs.size(), 1u);
  EXPECT_EQ(t->jobs[0].queue, "vcA");
  EXPECT_EQ(t->jobs[0].user, "u1");
}

TEST(TraceTest, AggregatesAreRejectedWithAnExplanation) {
  Result<Trace> h = Parse("id,gpu_num,job_num,cpu_job_num\nVenus,1022,246708,121405\n");
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("not job-level"), std::string::npos);
  Result<Trace> v = Parse("vc,node num\n6214e9,64\n", TraceFormat::kHelios);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("Helios"), std::string::npos);
  Result<Trace> a = Parse("m1,P100,64,512,2\n", TraceFormat::kAlibaba);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("machine spec"), std::string::npos);
}

TEST(TraceTest, AlibabaTaskTable) {
  Result<Trace> t = Parse(
      "job1,worker,2,Terminated,100,400,600,29.3,50,V100\n"
      "job2,ps,1,Terminated,100,400,600,29.3,,\n",
      TraceFormat::kAlibaba);
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->jobs.size(), 1u);
  EXPECT_EQ(t->jobs[0].id, "job1/worker");
  EXPECT_EQ(t->jobs[0].num_gpus, 1);
  EXPECT_EQ(t->jobs[0].duration_ms, 300000);
}

// fuzz_trace (seed 1) found inst_num x plan_gpu cast to an integer past its range (undefined).
TEST(TraceTest, AlibabaTasksAskingForMoreGpusThanAnyClusterAreMalformedRows) {
  std::string text;
  for (int i = 0; i < 40; ++i)
    text += "j" + std::to_string(i) + ",w,1,Terminated,1,2,600,1,100,V100\n";
  text += "big,w,1e300,Terminated,1,2,600,1,1e300,V100\n";  // line 41
  Result<Trace> t = Parse(text, TraceFormat::kAlibaba, 0.05);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->jobs.size(), 40u);
  ASSERT_EQ(t->bad.size(), 1u);
  EXPECT_EQ(t->bad[0].line, 41);
  EXPECT_NE(t->bad[0].why.find("million GPUs"), std::string::npos) << t->bad[0].why;
}

TEST(TraceTest, InferJobNamesGroupsSubmissionBurstsByQueueAndGpus) {
  auto job = [](const std::string& queue, int32_t gpus, TimeMs submit_s) {
    TraceJob j;
    j.queue = queue;
    j.num_gpus = gpus;
    j.submit_ms = submit_s * 1000;
    j.duration_ms = 1000 * (submit_s + 1);  // never looked at
    return j;
  };
  std::vector<TraceJob> jobs = {
      job("a", 1, 0),    // 0: burst a/1 #0
      job("a", 1, 5),    // 1: within 10 s of 0
      job("b", 1, 6),    // 2: other queue: burst b/1 #0
      job("a", 2, 7),    // 3: other GPU count: burst a/2 #0
      job("a", 1, 15),   // 4: within 10 s of 1 (15 s after 0: the window chains)
      job("a", 1, 26),   // 5: 11 s after 4: burst a/1 #1
      job("a", 2, 100),  // 6: 93 s after 3: burst a/2 #1
  };
  jobs.push_back(job("a", 1, 27));  // 7: a job that has a name keeps it and its user
  jobs.back().name = "train";
  jobs.back().user = "alice";
  jobs.push_back(job("a", 1, 36));  // 8: within 10 s of 5 (7 is in no burst)
  EXPECT_EQ(InferJobNames(&jobs, 10 * kSecond), 5);
  EXPECT_EQ(jobs[0].name, "burst-a-1-0");
  EXPECT_EQ(jobs[0].user, "a");
  EXPECT_EQ(jobs[1].name, jobs[0].name);
  EXPECT_EQ(jobs[2].name, "burst-b-1-0");
  EXPECT_EQ(jobs[2].user, "b");
  EXPECT_EQ(jobs[3].name, "burst-a-2-0");
  EXPECT_EQ(jobs[4].name, jobs[0].name);
  EXPECT_EQ(jobs[5].name, "burst-a-1-1");
  EXPECT_EQ(jobs[6].name, "burst-a-2-1");
  EXPECT_EQ(jobs[7].name, "train");
  EXPECT_EQ(jobs[7].user, "alice");
  EXPECT_EQ(jobs[8].name, jobs[5].name);

  // A window of 0 groups only simultaneous submissions.
  std::vector<TraceJob> same = {job("a", 1, 0), job("a", 1, 0), job("a", 1, 1)};
  EXPECT_EQ(InferJobNames(&same, 0), 2);
  EXPECT_EQ(same[1].name, same[0].name);
  EXPECT_NE(same[2].name, same[0].name);
}

}  // namespace
}  // namespace corral::sim
