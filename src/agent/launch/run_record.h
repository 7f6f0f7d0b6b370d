// A replica's record: STATE/runs/<run_id>.<replica>/record, one file that the agent and the
// replica's monitor append lines to, so that what the agent remembers of a run costs one inode
// (on an ext4 without a journal, each inode a run made cost more than its fork; launcher.h):
//
//   start <json>                           the order and start time: the agent, fsynced before
//                                          the fork ("started once": never started again)
//   pids <monitor_pid> <pgid>...           the monitor, once its tasks are forked
//   exit <code> <ended_at_ms> <failed_task>  the monitor, fsynced (or the agent, for a run that
//                                          vanished); failed_task -1: none failed
//   vanished                               the agent: the run ended with no recorded status
//   usage <peak_bytes> <cpu_ns> <oom 0|1>  the agent, from the run's cgroup, when it ended
//   released                               the agent: the head acknowledged the end
//   sample <seq> <at_ms> <gpu_util> <gpu_mem> <cpu_milli> <mem> <cpu_ns>
//                                          the agent, once an interval while it runs: a sample
//                                          of its use (usage_recorder.h; cpu_ns: the cgroup's
//                                          total, what the next sample's CPU is counted from)
//   samples-sent <seq>                     the agent: a sync carrying the samples up to seq
//                                          reached the head
//
// Each line is one write(2) to a descriptor opened with O_APPEND, so two writers' lines never
// interleave; a last line without its newline (a write a crash cut short) is ignored. Runs
// started by older agents kept these facts in files of their own (run.json, pids, exit, usage,
// vanished, released): ReadRunRecord reads those too.
#pragma once

#include <string>
#include <vector>

#include "agent/launch/launcher.h"
#include "core/usage_series.h"

namespace corral::agent {

constexpr const char* kRunRecordName = "record";

struct RecordedSample {
  UsagePoint point;
  int64_t cpu_ns = 0;
};

struct RunRecord {
  bool started = false;  // a start line (or run.json) that decodes: `run` holds its order
  LaunchedRun run;
  bool has_pids = false;  // the monitor's report: its pid and its tasks' process groups
  int32_t monitor_pid = 0;
  std::vector<int32_t> pgids;
  bool exited = false;
  RunStatus status;  // where exited: exit code, end, failed task, vanished, usage
  bool has_usage = false;
  bool released = false;
  std::vector<RecordedSample> samples;  // in the order written
  int64_t samples_sent = 0;             // the largest samples-sent
};

// What a reader needs of the record: kStatus leaves the order undecoded (`started` then only
// says that a whole start line is there): the agent's checks of live runs read the record at
// every exit notification, and the order, with the job's environment, is most of its bytes.
enum class RecordPart { kAll, kStatus };

// Reads `dir`'s record, and the older per-fact files where the record lacks a fact.
RunRecord ReadRunRecord(const std::string& dir, RecordPart part = RecordPart::kAll);

// Appends `line` (which must end in '\n') to `dir`'s record, creating it (0600: the order holds
// the job's environment, which may carry secrets). `durable`: fsync before returning.
Status AppendRunRecord(const std::string& dir, const std::string& line, bool durable);

// "<monitor_pid> <pgid>...": the monitor's report, on its pipe to the agent and in a pids line.
bool ParsePidReport(const std::string& text, int32_t* monitor_pid, std::vector<int32_t>* pgids);

std::string StartLine(const LaunchedRun& run);
std::string ExitLine(int32_t code, TimeMs ended_at, int32_t failed_task);
std::string UsageLine(const CgroupUsage& usage);
std::string SampleLine(const RecordedSample& sample);
std::string SamplesSentLine(int64_t seq);

}  // namespace corral::agent
