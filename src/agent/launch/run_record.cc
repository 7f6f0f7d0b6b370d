#include "agent/launch/run_record.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "agent/node/dirs.h"
#include "agent/node/file_util.h"
#include "core/codec.h"

namespace corral::agent {
namespace {

Json EncodeRun(const LaunchedRun& r) {
  return Json{{"order", ToJson(r.order)},
              {"started_at", r.started_at},
              {"monitor_pid", r.monitor_pid},
              {"monitor_start", r.monitor_start},
              {"pgid", r.pgid},
              {"pgids", r.pgids}};
}

bool DecodeRun(const std::string& text, LaunchedRun* out) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("order")) return false;
  // Reuse the protocol decoder for the order rather than duplicating it.
  auto resp = SyncResponseFromJson(
      Json{{"head_epoch", 0}, {"desired_version", 0}, {"runs", Json::array({j["order"]})}});
  if (!resp.ok() || resp->runs.size() != 1) return false;
  out->order = resp->runs[0];
  out->started_at = j.value("started_at", int64_t{0});
  out->monitor_pid = j.value("monitor_pid", int32_t{0});
  out->monitor_start = j.value("monitor_start", uint64_t{0});
  out->pgid = j.value("pgid", int32_t{0});
  out->pgids = j.value("pgids", std::vector<int32_t>{});
  if (out->pgids.empty() && out->pgid > 0) out->pgids = {out->pgid};
  return true;
}

// "<code> <ended_at_ms> [<failed_task>]" (one-task monitors of old wrote no failed task)
bool ParseExitFields(std::istringstream& in, RunStatus* out) {
  int32_t code = 0, failed_task = -1;
  TimeMs ended = 0;
  if (!(in >> code >> ended)) return false;
  if (!(in >> failed_task)) failed_task = code == 0 ? -1 : 0;
  out->running = false;
  out->exit_code = code;
  out->ended_at = ended;
  out->failed_task = failed_task;
  return true;
}

bool ParseUsageFields(std::istringstream& in, CgroupUsage* out) {
  int oom = 0;
  if (!(in >> out->peak_memory_bytes >> out->cpu_ns >> oom)) return false;
  out->oom_killed = oom != 0;
  return true;
}

// "<seq> <at_ms> <gpu_util> <gpu_mem> <cpu_milli> <mem> <cpu_ns>"
bool ParseSampleFields(std::istringstream& in, RecordedSample* out) {
  int64_t seq = 0, gpu_mem = 0, mem = 0, cpu_ns = 0;
  TimeMs at = 0;
  int32_t gpu_util = 0, cpu_milli = 0;
  if (!(in >> seq >> at >> gpu_util >> gpu_mem >> cpu_milli >> mem >> cpu_ns) || seq < 1) {
    return false;
  }
  out->point = RawUsagePoint(seq, at, gpu_util, gpu_mem, cpu_milli, mem);
  out->cpu_ns = cpu_ns;
  return true;
}

// The facts an older agent kept in files of their own, where the record lacks them.
void ReadLegacyFiles(const std::string& dir, RecordPart part, RunRecord* r) {
  std::string text;
  if (part == RecordPart::kAll && !r->started && ReadFile(dir + "/run.json", &text) &&
      DecodeRun(text, &r->run)) {
    r->started = true;
  }
  if (!r->has_pids && ReadFile(dir + "/pids", &text)) {
    r->has_pids = ParsePidReport(text, &r->monitor_pid, &r->pgids);
  }
  if (!r->exited && ReadFile(dir + "/exit", &text)) {
    std::istringstream in(text);
    r->exited = ParseExitFields(in, &r->status);
    r->status.vanished = r->exited && PathExists(dir + "/vanished");
  }
  if (!r->has_usage && ReadFile(dir + "/usage", &text)) {
    std::istringstream in(text);
    r->has_usage = ParseUsageFields(in, &r->status.usage);
  }
  if (!r->released) r->released = PathExists(dir + "/released");
}

}  // namespace

bool ParsePidReport(const std::string& text, int32_t* monitor_pid, std::vector<int32_t>* pgids) {
  std::istringstream in(text);
  int32_t monitor = 0;
  std::vector<int32_t> groups;
  if (!(in >> monitor)) return false;
  for (int32_t pid; in >> pid;) groups.push_back(pid);
  if (groups.empty()) return false;
  *monitor_pid = monitor;
  *pgids = std::move(groups);
  return true;
}

RunRecord ReadRunRecord(const std::string& dir, RecordPart part) {
  RunRecord r;
  std::string text;
  if (ReadFile(dir + "/" + kRunRecordName, &text)) {
    size_t pos = 0;
    for (size_t nl; (nl = text.find('\n', pos)) != std::string::npos; pos = nl + 1) {
      const std::string_view line(text.data() + pos, nl - pos);
      const size_t sp = line.find(' ');
      const std::string_view kind = line.substr(0, sp);
      std::istringstream rest(sp == std::string_view::npos ? std::string()
                                                           : std::string(line.substr(sp + 1)));
      if (kind == "start") {
        r.started = r.started || part == RecordPart::kStatus || DecodeRun(rest.str(), &r.run);
      } else if (kind == "pids") {
        r.has_pids = ParsePidReport(rest.str(), &r.monitor_pid, &r.pgids) || r.has_pids;
      } else if (kind == "exit" && !r.exited) {  // the first one wins
        r.exited = ParseExitFields(rest, &r.status);
      } else if (kind == "vanished") {
        r.status.vanished = true;
      } else if (kind == "usage") {
        r.has_usage = ParseUsageFields(rest, &r.status.usage) || r.has_usage;
      } else if (kind == "released") {
        r.released = true;
      } else if (kind == "sample") {
        if (RecordedSample sample; ParseSampleFields(rest, &sample)) r.samples.push_back(sample);
      } else if (kind == "samples-sent") {
        int64_t seq = 0;
        if (rest >> seq) r.samples_sent = std::max(r.samples_sent, seq);
      }
    }
  }
  // A run this agent started has its start line first; one without is older, or never began.
  if (!r.started) ReadLegacyFiles(dir, part, &r);
  if (!r.exited) r.status = RunStatus{};  // a "vanished" without its exit line: still running
  return r;
}

Status AppendRunRecord(const std::string& dir, const std::string& line, bool durable) {
  const std::string path = dir + "/" + kRunRecordName;
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Internal("open " + path + ": " + std::strerror(errno));
  ssize_t n;
  do {
    n = write(fd, line.data(), line.size());
  } while (n < 0 && errno == EINTR);
  int err = n == static_cast<ssize_t>(line.size()) ? 0 : (n < 0 ? errno : EIO);
  if (err == 0 && durable && fsync(fd) != 0) err = errno;
  close(fd);
  if (err != 0) return Internal("append to " + path + ": " + std::strerror(err));
  return Status::Ok();
}

std::string StartLine(const LaunchedRun& run) { return "start " + EncodeRun(run).dump() + "\n"; }

std::string ExitLine(int32_t code, TimeMs ended_at, int32_t failed_task) {
  return "exit " + std::to_string(code) + " " + std::to_string(ended_at) + " " +
         std::to_string(failed_task) + "\n";
}

std::string UsageLine(const CgroupUsage& usage) {
  return "usage " + std::to_string(usage.peak_memory_bytes) + " " + std::to_string(usage.cpu_ns) +
         " " + (usage.oom_killed ? "1" : "0") + "\n";
}

std::string SampleLine(const RecordedSample& s) {
  const UsagePoint& p = s.point;
  return "sample " + std::to_string(p.seq) + " " + std::to_string(p.at) + " " +
         std::to_string(p.gpu_util) + " " + std::to_string(p.gpu_mem) + " " +
         std::to_string(p.cpu_milli) + " " + std::to_string(p.mem) + " " +
         std::to_string(s.cpu_ns) + "\n";
}

std::string SamplesSentLine(int64_t seq) { return "samples-sent " + std::to_string(seq) + "\n"; }

}  // namespace corral::agent
