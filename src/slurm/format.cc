#include "slurm/format.h"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <functional>
#include <map>

#include "core/hostlist.h"
#include "slurm/sinfo.h"

namespace corral::slurm {
namespace {

std::string Timestamp(TimeMs t) {
  if (t <= 0) return "Unknown";
  time_t secs = static_cast<time_t>(t / 1000);
  struct tm tm {};
  localtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return buf;
}

std::string Partition(const Job& j) { return j.spec.queue; }

int64_t Cpus(const Job& j) {
  return static_cast<int64_t>(j.spec.replicas) * std::max(1, j.spec.per_replica.cpu_milli / 1000);
}

int64_t GpusPerNode(const Job& j) { return j.spec.per_replica.gpu_milli / kGpuMilli; }

std::string TimeLimit(const Job& j, bool sacct) {
  if (j.spec.time_limit_ms <= 0) return "UNLIMITED";
  // A --signal lead time was taken off the limit at submit; Slurm shows the whole limit.
  DurationMs limit = j.spec.time_limit_ms;
  if (j.spec.batch && j.spec.checkpoint_signal != 15) limit += j.spec.grace_ms;
  return sacct ? SacctTime(limit) : SqueueTime(limit);
}

// Pending reasons in Slurm's words.
std::string PendingReason(const Job& j) {
  if (j.held) return "JobHeldUser";
  switch (j.pending_code) {
    case PendingCode::kNone:
      return "None";
    case PendingCode::kHeld:
      return "JobHeldUser";
    case PendingCode::kDependency:
      return "Dependency";
    case PendingCode::kDependencyNever:
      return "DependencyNeverSatisfied";
    case PendingCode::kArrayLimit:
      return "JobArrayTaskLimit";
    case PendingCode::kQueueLimit:
      return "QOSMaxGRESPerUser";
    case PendingCode::kReservationWait:
      return "ReservationWait";
    case PendingCode::kReserved:
    case PendingCode::kPreempting:
    case PendingCode::kResources:
    case PendingCode::kNoFit:
      break;
  }
  return "Resources";
}

std::string Pad(const std::string& v, int width, bool right, bool truncate) {
  std::string s = v;
  if (width <= 0) return s;
  if (truncate && static_cast<int>(s.size()) > width) s.resize(width);
  if (static_cast<int>(s.size()) >= width) return s;
  std::string fill(width - s.size(), ' ');
  return right ? fill + s : s + fill;
}

std::string CommandText(const Job& j) {
  if (j.spec.batch) return j.spec.name;
  std::string out;
  for (const std::string& a : j.spec.command) out += (out.empty() ? "" : " ") + a;
  return out;
}

}  // namespace

std::string AsciiLower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

Result<PercentFormat> ParsePercentFormat(const std::string& format) {
  PercentFormat out;
  std::string literal;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      literal += format[i];
      continue;
    }
    PercentField f;
    size_t k = i + 1;
    if (k < format.size() && format[k] == '.') {
      f.right = true;
      ++k;
    }
    if (k < format.size() && format[k] == '-') ++k;  // left is the default
    while (k < format.size() && std::isdigit(static_cast<unsigned char>(format[k]))) {
      f.width = f.width * 10 + (format[k++] - '0');
    }
    if (k >= format.size()) {
      return InvalidArgument("option --format: \"" + format + "\" ends inside a % field");
    }
    f.letter = format[k];
    f.prefix = std::move(literal);
    literal.clear();
    out.fields.push_back(std::move(f));
    i = k;
  }
  out.tail = std::move(literal);
  return out;
}

std::string PercentCell(std::string value, const PercentField& f) {
  return f.prefix + Pad(value, f.width, f.right, true);
}

std::vector<std::string> SplitCommaList(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    std::string item = s.substr(start, comma == std::string::npos ? comma : comma - start);
    if (!item.empty()) out.push_back(item);
    start = comma == std::string::npos ? s.size() + 1 : comma + 1;
  }
  return out;
}

const char kSqueueDefaultFormat[] = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R";
// Slurm's, with the estimate's confidence (Corral's %~) before the last column.
const char kSqueueStartFormat[] = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %.10~ %R";

std::string SlurmState(const Job& j) {
  const Run* run = j.CurrentRun();
  switch (j.state) {
    case JobState::kPending:
      return "PENDING";
    case JobState::kScheduled:
    case JobState::kRunning:
      return "RUNNING";
    case JobState::kSucceeded:
      return "COMPLETED";
    case JobState::kCancelled:
      return "CANCELLED";
    case JobState::kFailed:
      break;
  }
  if (run != nullptr) {
    if (run->cause == StopCause::kTimeLimit) return "TIMEOUT";
    if (run->cause == StopCause::kOutOfMemory) return "OUT_OF_MEMORY";
    if (run->state == RunState::kLost) return "NODE_FAIL";
    if (run->state == RunState::kPreempted) return "PREEMPTED";
  }
  return "FAILED";
}

std::string CompactState(const std::string& s) {
  static const std::map<std::string, std::string> kCompact = {
      {"PENDING", "PD"},   {"RUNNING", "R"},    {"COMPLETED", "CD"},
      {"FAILED", "F"},     {"CANCELLED", "CA"}, {"TIMEOUT", "TO"},
      {"PREEMPTED", "PR"}, {"NODE_FAIL", "NF"}, {"OUT_OF_MEMORY", "OOM"}};
  auto it = kCompact.find(s);
  return it == kCompact.end() ? s : it->second;
}

std::string SlurmJobId(const Job& j) {
  return j.IsArrayElement() ? std::to_string(j.array_id) + "_" + std::to_string(j.array_index)
                            : std::to_string(j.id);
}

std::string SqueueTime(DurationMs ms) {
  int64_t s = std::max<int64_t>(0, ms / 1000);
  char buf[48];
  if (s >= 86400) {
    std::snprintf(buf, sizeof buf, "%lld-%02lld:%02lld:%02lld", static_cast<long long>(s / 86400),
                  static_cast<long long>(s % 86400 / 3600), static_cast<long long>(s % 3600 / 60),
                  static_cast<long long>(s % 60));
  } else if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s % 3600 / 60), static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%lld:%02lld", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  }
  return buf;
}

std::string SacctTime(DurationMs ms) {
  int64_t s = std::max<int64_t>(0, ms / 1000);
  char buf[48];
  if (s >= 86400) {
    std::snprintf(buf, sizeof buf, "%lld-%02lld:%02lld:%02lld", static_cast<long long>(s / 86400),
                  static_cast<long long>(s % 86400 / 3600), static_cast<long long>(s % 3600 / 60),
                  static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s % 3600 / 60), static_cast<long long>(s % 60));
  }
  return buf;
}

std::string ExitCodeField(const Job& j) {
  if (!IsTerminal(j.state) || j.state == JobState::kCancelled) {
    return j.exit_code < 0 ? "0:" + std::to_string(-j.exit_code) : "0:0";
  }
  if (j.exit_code < 0) return "0:" + std::to_string(-j.exit_code);
  // A shell reports "killed by signal N" as 128+N; Slurm shows what the batch shell returned.
  return std::to_string(j.exit_code) + ":0";
}

DurationMs Elapsed(const Job& j, TimeMs now) {
  const Run* run = j.CurrentRun();
  if (run == nullptr || run->started_at <= 0) return 0;
  TimeMs end = run->ended_at > 0 ? run->ended_at : (IsTerminal(j.state) ? j.ended_at : now);
  return end > run->started_at ? end - run->started_at : 0;
}

std::string NodeList(const Job& j) {
  const Run* run = j.CurrentRun();
  if (run == nullptr || run->placement.empty()) return "";
  std::vector<std::string> names;
  for (const ReplicaPlacement& p : run->placement) names.push_back(p.node);
  return CompressHostlist(names);
}

namespace {

// squeue's column headers, by --format letter.
const std::map<char, std::string>& SqueueHeaders() {
  static const std::map<char, std::string> kHeaders = {{'i', "JOBID"},
                                                       {'A', "JOBID"},
                                                       {'a', "ARRAY_TASK_ID"},
                                                       {'F', "ARRAY_JOB_ID"},
                                                       {'j', "NAME"},
                                                       {'u', "USER"},
                                                       {'P', "PARTITION"},
                                                       {'t', "ST"},
                                                       {'T', "STATE"},
                                                       {'M', "TIME"},
                                                       {'l', "TIME_LIMIT"},
                                                       {'D', "NODES"},
                                                       {'R', "NODELIST(REASON)"},
                                                       {'r', "REASON"},
                                                       {'N', "NODELIST"},
                                                       {'C', "CPUS"},
                                                       {'b', "TRES_PER_NODE"},
                                                       {'V', "SUBMIT_TIME"},
                                                       {'S', "START_TIME"},
                                                       {'Y', "SCHEDNODES"},
                                                       {'~', "CONFIDENCE"},
                                                       {'Q', "PRIORITY"},
                                                       {'o', "COMMAND"},
                                                       {'Z', "WORK_DIR"},
                                                       {'%', "%"}};
  return kHeaders;
}

// Job j's cell for squeue's --format letter c.
std::string SqueueField(const Job& j, char c, TimeMs now) {
  const Run* run = j.CurrentRun();
  const bool pending = j.state == JobState::kPending;
  switch (c) {
    case 'i':
      return SlurmJobId(j);
    case 'A':
      return std::to_string(j.id);
    case 'a':
      return j.IsArrayElement() ? std::to_string(j.array_index) : "N/A";
    case 'F':
      return std::to_string(j.IsArrayElement() ? j.array_id : j.id);
    case 'j':
      return j.spec.name;
    case 'u':
      return j.owner;
    case 'P':
      return Partition(j);
    case 't':
      return CompactState(SlurmState(j));
    case 'T':
      return SlurmState(j);
    case 'M':
      return SqueueTime(Elapsed(j, now));
    case 'l':
      return TimeLimit(j, false);
    case 'D':
      return std::to_string(j.spec.replicas);
    case 'R':
      return pending ? "(" + PendingReason(j) + ")" : NodeList(j);
    case 'r':
      return pending ? PendingReason(j) : "None";
    case 'N':
      return NodeList(j);
    case 'C':
      return std::to_string(Cpus(j));
    case 'b':
      return GpusPerNode(j) > 0 ? "gres/gpu:" + std::to_string(GpusPerNode(j)) : "N/A";
    case 'V':
      return Timestamp(j.submitted_at);
    case 'S':  // a pending job: its estimated start
      if (run != nullptr && run->started_at > 0) return Timestamp(run->started_at);
      return j.state == JobState::kPending && j.estimated_start > 0 ? Timestamp(j.estimated_start)
                                                                    : "N/A";
    case '~':  // Corral's: how far a pending job's estimated start may be trusted
      return j.state == JobState::kPending && j.estimated_start > 0
                 ? EstimateConfidenceName(j.estimate_confidence)
                 : "N/A";
    case 'Y':  // the nodes a pending job is expected to start on
      return j.state == JobState::kPending && !j.estimated_nodes.empty()
                 ? CompressHostlist(j.estimated_nodes)
                 : "(null)";
    case 'Q':
      return std::to_string(j.spec.priority);
    case 'o':
      return CommandText(j);
    case 'Z':
      return j.spec.workdir;
    case '%':
      return "%";
  }
  return "";
}

}  // namespace

Result<std::string> RenderSqueue(const std::vector<Job>& jobs, const std::string& format,
                                 bool header, TimeMs now) {
  auto parsed = ParsePercentFormat(format);
  if (!parsed.ok()) return parsed.status();
  const PercentFormat& pf = *parsed;
  const std::map<char, std::string>& headers = SqueueHeaders();
  for (const PercentField& f : pf.fields) {
    if (!headers.count(f.letter)) {
      return InvalidArgument(std::string("option --format: unknown field %") + f.letter +
                             "; known: %i %A %a %F %j %u %P %t %T %M %l %D %R %r %N %C %b %V %S %Y "
                             "%~ %Q %o %Z");
    }
  }
  std::string out;
  auto row = [&](const std::function<std::string(const PercentField&)>& text) {
    std::string line;
    for (const PercentField& f : pf.fields) line += PercentCell(text(f), f);
    out += line + pf.tail + "\n";
  };
  if (header) row([&](const PercentField& f) { return headers.at(f.letter); });
  for (const Job& j : jobs)
    row([&](const PercentField& f) { return SqueueField(j, f.letter, now); });
  return out;
}

namespace {

// A column of sacct's: its name, width and alignment.
struct SacctField {
  const char* name;
  int width;
  bool right;
};

constexpr SacctField kSacctFields[] = {
    {"JobID", 12, false},     {"JobIDRaw", 12, false}, {"JobName", 10, true},
    {"Partition", 10, true},  {"Account", 10, true},   {"AllocCPUS", 10, true},
    {"State", 10, true},      {"ExitCode", 8, true},   {"Elapsed", 10, true},
    {"ElapsedRaw", 10, true}, {"Start", 19, true},     {"End", 19, true},
    {"Submit", 19, true},     {"NNodes", 8, true},     {"NodeList", 15, true},
    {"User", 9, true},        {"Timelimit", 10, true}, {"AllocTRES", 20, true},
    {"WorkDir", 20, true}};

// The columns --format names, in its order; an unknown one is an error naming it.
Result<std::vector<const SacctField*>> SacctColumns(const std::vector<std::string>& names) {
  std::vector<const SacctField*> fields;
  for (const std::string& name : names) {
    const SacctField* found = nullptr;
    for (const SacctField& f : kSacctFields) {
      if (AsciiLower(name) == AsciiLower(f.name)) found = &f;
    }
    if (found == nullptr) {
      std::string known;
      for (const SacctField& f : kSacctFields) {
        known += (known.empty() ? "" : ",") + std::string(f.name);
      }
      return InvalidArgument("option --format: unknown field \"" + name + "\"; known: " + known);
    }
    fields.push_back(found);
  }
  return fields;
}

// Job j's cell in column `name`: the job's line, or its batch step's (`step`).
std::string SacctCell(const Job& j, const std::string& name, bool step, TimeMs now) {
  const Run* run = j.CurrentRun();
  if (name == "JobID") return SlurmJobId(j) + (step ? ".batch" : "");
  if (name == "JobIDRaw") return std::to_string(j.id) + (step ? ".batch" : "");
  if (name == "JobName") return step ? "batch" : j.spec.name;
  if (name == "Partition") return step ? "" : Partition(j);
  if (name == "Account") return j.spec.queue;  // an account is a queue (sacctmgr)
  if (name == "AllocCPUS") return std::to_string(step ? Cpus(j) / j.spec.replicas : Cpus(j));
  if (name == "State") {
    std::string s = SlurmState(j);
    // The batch step of a timed-out or cancelled job was killed by a signal.
    if (step && (s == "TIMEOUT" || s == "PREEMPTED" || s == "NODE_FAIL")) return "CANCELLED";
    return s;
  }
  if (name == "ExitCode") return ExitCodeField(j);
  if (name == "Elapsed") return SacctTime(Elapsed(j, now));
  if (name == "ElapsedRaw") return std::to_string(Elapsed(j, now) / 1000);
  if (name == "Start") {
    return run != nullptr && run->started_at > 0 ? Timestamp(run->started_at) : "Unknown";
  }
  if (name == "End") {
    return run != nullptr && run->ended_at > 0 ? Timestamp(run->ended_at) : "Unknown";
  }
  if (name == "Submit") return Timestamp(j.submitted_at);
  if (name == "NNodes") return std::to_string(step ? 1 : j.spec.replicas);
  if (name == "NodeList") {
    std::string n = NodeList(j);
    if (step && run != nullptr && !run->placement.empty()) n = run->placement[0].node;
    return n.empty() ? "None assigned" : n;
  }
  if (name == "User") return step ? "" : j.owner;
  if (name == "Timelimit") {
    // A pending job without a limit of its own gets its partition's when it starts.
    if (step) return "";
    return j.state == JobState::kPending && j.spec.time_limit_ms <= 0 ? "Partition_Limit"
                                                                      : TimeLimit(j, true);
  }
  if (name == "AllocTRES") {
    std::string t = "cpu=" + std::to_string(Cpus(j)) + ",node=" + std::to_string(j.spec.replicas);
    if (GpusPerNode(j) > 0) t += ",gres/gpu=" + std::to_string(GpusPerNode(j) * j.spec.replicas);
    return t;
  }
  if (name == "WorkDir") return j.spec.workdir;
  return "";
}

}  // namespace

Result<std::string> RenderSacct(const std::vector<Job>& jobs, const SacctOptions& o, TimeMs now) {
  auto columns = SacctColumns(o.fields);
  if (!columns.ok()) return columns.status();
  const std::vector<const SacctField*>& fields = *columns;
  std::string out;
  auto row = [&](const std::function<std::string(const SacctField&)>& text) {
    std::string line;
    for (size_t i = 0; i < fields.size(); ++i) {
      const SacctField& f = *fields[i];
      if (o.parsable2 || o.parsable) {
        line += text(f);
        if (o.parsable || i + 1 < fields.size()) line += "|";
      } else {
        line += Pad(text(f), f.width, f.right, true) + " ";
      }
    }
    out += line + "\n";
  };
  if (o.header) {
    row([](const SacctField& f) { return std::string(f.name); });
    if (!o.parsable2 && !o.parsable)
      row([](const SacctField& f) { return std::string(f.width, '-'); });
  }
  for (const Job& j : jobs) {
    row([&](const SacctField& f) { return SacctCell(j, f.name, false, now); });
    const Run* run = j.CurrentRun();
    if (!o.allocations_only && j.spec.batch && run != nullptr && run->started_at > 0) {
      row([&](const SacctField& f) { return SacctCell(j, f.name, true, now); });
    }
  }
  return out;
}

std::string RenderScontrolJob(const Job& j, TimeMs now) {
  const Run* run = j.CurrentRun();
  const bool pending = j.state == JobState::kPending;
  std::string o;
  o += "JobId=" + std::to_string(j.id) + " JobName=" + j.spec.name + "\n";
  if (j.IsArrayElement()) {
    o += "   ArrayJobId=" + std::to_string(j.array_id) +
         " ArrayTaskId=" + std::to_string(j.array_index) + "\n";
  }
  o += "   UserId=" + j.owner + " Priority=" + std::to_string(j.spec.priority) + "\n";
  // An ended job's reason, as Slurm words the common ones.
  const std::string state = SlurmState(j);
  const std::string reason = pending                ? PendingReason(j)
                             : state == "FAILED"    ? "NonZeroExitCode"
                             : state == "TIMEOUT"   ? "TimeLimit"
                             : state == "NODE_FAIL" ? "NodeDown"
                                                    : "None";
  o += "   JobState=" + state + " Reason=" + reason + " Dependency=" +
       (j.spec.dependencies.empty() ? "(null)" : FormatDependencies(j.spec.dependencies)) + "\n";
  o += "   Requeue=1 Restarts=" + std::to_string(j.runs.empty() ? 0 : j.runs.size() - 1) +
       " BatchFlag=" + (j.spec.batch ? "1" : "0") + " ExitCode=" + ExitCodeField(j) + "\n";
  o += "   RunTime=" + SacctTime(Elapsed(j, now)) + " TimeLimit=" + TimeLimit(j, true) + "\n";
  o += "   SubmitTime=" + Timestamp(j.submitted_at) + " StartTime=" +
       (run != nullptr && run->started_at > 0 ? Timestamp(run->started_at) : "Unknown") +
       " EndTime=" + (run != nullptr && run->ended_at > 0 ? Timestamp(run->ended_at) : "Unknown") +
       "\n";
  o += "   Partition=" + Partition(j) + "\n";
  std::string nodes = NodeList(j);
  o += "   NodeList=" + (nodes.empty() ? std::string("(null)") : nodes) + "\n";
  o += "   NumNodes=" + std::to_string(j.spec.replicas) + " NumCPUs=" + std::to_string(Cpus(j)) +
       " CPUs/Task=" + std::to_string(std::max(1, j.spec.per_replica.cpu_milli / 1000)) + "\n";
  std::string tres = "cpu=" + std::to_string(Cpus(j)) + ",node=" + std::to_string(j.spec.replicas);
  if (j.spec.per_replica.memory_mb > 0) {
    tres += ",mem=" + std::to_string(j.spec.per_replica.memory_mb * j.spec.replicas) + "M";
  }
  if (GpusPerNode(j) > 0) tres += ",gres/gpu=" + std::to_string(GpusPerNode(j) * j.spec.replicas);
  o += "   TRES=" + tres + "\n";
  o += "   Command=" + CommandText(j) + "\n";
  o += "   WorkDir=" + j.spec.workdir + "\n";
  return o;
}

std::string RenderSinfo(const std::vector<NodeView>& nodes,
                        const std::vector<std::string>& partitions, bool per_node_long,
                        TimeMs now) {
  SinfoOptions o;
  o.per_node = o.long_output = per_node_long;
  return *RenderSinfo(nodes, partitions, o, now);  // the default layouts have no bad field
}

}  // namespace corral::slurm
