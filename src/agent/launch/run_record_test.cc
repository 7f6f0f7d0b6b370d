#include "agent/launch/run_record.h"

#include <gtest/gtest.h>

#include <fstream>

#include "agent/test_util.h"

namespace corral::agent {
namespace {

using testing::TempDir;
using testing::Touch;

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

LaunchedRun SomeRun() {
  LaunchedRun run;
  run.order = testing::ShellOrder("12.3", "echo hi", /*replica=*/1);
  run.order.env = {{"SECRET", "line one\nline two"}};  // a newline must not split the record
  run.started_at = 1700000000123;
  return run;
}

TEST(RunRecord, EveryFactIsReadBackFromItsLine) {
  TempDir dir;
  const LaunchedRun run = SomeRun();
  ASSERT_TRUE(AppendRunRecord(dir.path(), StartLine(run), /*durable=*/true).ok());
  RunRecord r = ReadRunRecord(dir.path());
  ASSERT_TRUE(r.started);
  EXPECT_EQ(r.run.order.run_id, "12.3");
  EXPECT_EQ(r.run.order.replica, 1);
  EXPECT_EQ(r.run.order.env.at("SECRET"), "line one\nline two");
  EXPECT_EQ(r.run.started_at, 1700000000123);
  EXPECT_FALSE(r.has_pids);
  EXPECT_FALSE(r.exited);
  EXPECT_TRUE(r.status.running);

  ASSERT_TRUE(AppendRunRecord(dir.path(), "pids 100 101 102\n", false).ok());
  ASSERT_TRUE(AppendRunRecord(dir.path(), ExitLine(3, 1700000000999, 1), true).ok());
  ASSERT_TRUE(AppendRunRecord(dir.path(), UsageLine({4096, 77, true}), false).ok());
  r = ReadRunRecord(dir.path());
  ASSERT_TRUE(r.has_pids);
  EXPECT_EQ(r.monitor_pid, 100);
  EXPECT_EQ(r.pgids, (std::vector<int32_t>{101, 102}));
  ASSERT_TRUE(r.exited);
  EXPECT_FALSE(r.status.running);
  EXPECT_EQ(r.status.exit_code, 3);
  EXPECT_EQ(r.status.ended_at, 1700000000999);
  EXPECT_EQ(r.status.failed_task, 1);
  EXPECT_FALSE(r.status.vanished);
  ASSERT_TRUE(r.has_usage);
  EXPECT_EQ(r.status.usage.peak_memory_bytes, 4096);
  EXPECT_EQ(r.status.usage.cpu_ns, 77);
  EXPECT_TRUE(r.status.usage.oom_killed);
  EXPECT_FALSE(r.released);

  // The status alone, as the checks of live runs read it: the same facts, the order undecoded.
  RunRecord status = ReadRunRecord(dir.path(), RecordPart::kStatus);
  EXPECT_TRUE(status.started);
  EXPECT_EQ(status.run.order.run_id, "");
  EXPECT_EQ(status.monitor_pid, 100);
  ASSERT_TRUE(status.exited);
  EXPECT_EQ(status.status.exit_code, 3);
  EXPECT_EQ(status.status.failed_task, 1);
  EXPECT_EQ(status.status.usage.peak_memory_bytes, 4096);

  // A second exit (the agent declaring it lost after the monitor wrote one) does not win.
  ASSERT_TRUE(AppendRunRecord(dir.path(), "vanished\n" + ExitLine(-9, 5, -1), true).ok());
  ASSERT_TRUE(AppendRunRecord(dir.path(), "released\n", false).ok());
  r = ReadRunRecord(dir.path());
  EXPECT_EQ(r.status.exit_code, 3);
  EXPECT_TRUE(r.released);
}

TEST(RunRecord, ALineCutShortByACrashIsIgnored) {
  TempDir dir;
  ASSERT_TRUE(AppendRunRecord(dir.path(), StartLine(SomeRun()), true).ok());
  std::ofstream(dir.path() + "/" + kRunRecordName, std::ios::app) << "exit 0 17";  // no newline
  RunRecord r = ReadRunRecord(dir.path());
  EXPECT_TRUE(r.started);
  EXPECT_FALSE(r.exited) << "an exit line without its newline was only partly written";

  TempDir torn;
  WriteText(torn.path() + "/" + kRunRecordName, StartLine(SomeRun()).substr(0, 40));
  EXPECT_FALSE(ReadRunRecord(torn.path()).started) << "a torn start line: never forked";
  EXPECT_FALSE(ReadRunRecord(torn.path(), RecordPart::kStatus).started);
}

TEST(RunRecord, ARunOfAnOlderAgentIsReadFromItsFiles) {
  TempDir dir;
  const LaunchedRun run = SomeRun();
  // What an older agent and its monitor wrote: a file per fact.
  std::string start = StartLine(run);
  WriteText(dir.path() + "/run.json", start.substr(6, start.size() - 7));
  WriteText(dir.path() + "/pids", "200 201\n");
  RunRecord r = ReadRunRecord(dir.path());
  ASSERT_TRUE(r.started);
  EXPECT_EQ(r.run.order.run_id, "12.3");
  EXPECT_EQ(r.monitor_pid, 200);
  EXPECT_EQ(ReadRunRecord(dir.path(), RecordPart::kStatus).monitor_pid, 200);
  EXPECT_FALSE(r.exited);

  WriteText(dir.path() + "/exit", "-9 1700000000500\n");  // one-task monitors wrote no task
  WriteText(dir.path() + "/usage", "10 20 0\n");
  Touch(dir.path() + "/vanished");
  // This agent appends to a record even for such a run.
  ASSERT_TRUE(AppendRunRecord(dir.path(), "released\n", false).ok());
  r = ReadRunRecord(dir.path());
  ASSERT_TRUE(r.exited);
  EXPECT_EQ(r.status.exit_code, -9);
  EXPECT_EQ(r.status.failed_task, 0);
  EXPECT_TRUE(r.status.vanished);
  EXPECT_EQ(r.status.usage.cpu_ns, 20);
  EXPECT_TRUE(r.released);
}

TEST(RunRecord, NothingThereIsARunThatNeverBegan) {
  TempDir dir;
  RunRecord r = ReadRunRecord(dir.path());
  EXPECT_FALSE(r.started);
  EXPECT_FALSE(r.exited);
  EXPECT_FALSE(r.released);
  EXPECT_FALSE(AppendRunRecord(dir.path() + "/missing", "released\n", false).ok());
}

}  // namespace
}  // namespace corral::agent
