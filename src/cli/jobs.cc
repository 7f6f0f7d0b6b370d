// corral jobs, show, wait, cancel, logs.
#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>

#include "cli/commands.h"
#include "cli/table.h"
#include "core/spec.h"

namespace corral::cli {
namespace {

std::string QueryEscape(const std::string& s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == ',') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

bool WantsJson(const ParsedArgs& args, CliContext& ctx, const std::string& command,
               int* exit_code) {
  if (!args.Has("output")) return false;
  const std::string o = args.Get("output");
  if (o == "json") return true;
  if (o == "table" || o == "wide") return false;
  *exit_code = UsageError(ctx, command, "flag -o: got \"" + o + "\", want json or table");
  return false;
}

std::string NodesOf(const Run* run) {
  if (run == nullptr || run->placement.empty()) return "-";
  std::vector<std::string> names;
  for (const ReplicaPlacement& p : run->placement) {
    if (std::find(names.begin(), names.end(), p.node) == names.end()) names.push_back(p.node);
  }
  if (names.size() > 3) {
    size_t more = names.size() - 2;
    names.resize(2);
    names.push_back("+" + std::to_string(more));
  }
  return Join(names, ",");
}

// Pending: how long it has waited; running: how long it has run; finished: how long it ran.
std::string TimeOf(const Job& j, TimeMs now) {
  const Run* run = j.CurrentRun();
  if (j.state == JobState::kPending || run == nullptr) {
    if (IsTerminal(j.state)) return "-";
    return FormatAge(now - j.submitted_at);
  }
  TimeMs start = run->started_at > 0 ? run->started_at : run->scheduled_at;
  if (start <= 0) return "-";
  TimeMs end = IsTerminal(j.state) ? (run->ended_at > 0 ? run->ended_at : j.ended_at) : now;
  if (end <= 0) return "-";
  return FormatAge(end - start);
}

std::string ReasonOf(const Job& j) {
  const Run* run = j.CurrentRun();
  switch (j.state) {
    case JobState::kPending:
      return j.pending_reason;
    case JobState::kFailed: {
      std::string r = run != nullptr ? run->reason : "";
      if (j.exit_code != 0) r = "exit " + std::to_string(j.exit_code) + (r.empty() ? "" : ": " + r);
      return r;
    }
    case JobState::kCancelled:
    case JobState::kSucceeded:
      return run != nullptr ? run->reason : "";
    case JobState::kScheduled:
      return j.pending_reason;  // how far its staging is
    case JobState::kRunning:
      if (!j.pending_reason.empty()) return j.pending_reason;  // how far its stage-out is
      return j.idle_since > 0 ? "idle" : "";  // its GPUs stayed under the head's threshold
    default:
      return "";
  }
}

std::string SignalName(int32_t sig) {
  switch (sig) {
    case 1:
      return "SIGHUP";
    case 2:
      return "SIGINT";
    case 3:
      return "SIGQUIT";
    case 9:
      return "SIGKILL";
    case 10:
      return "SIGUSR1";
    case 12:
      return "SIGUSR2";
    case 15:
      return "SIGTERM";
    default:
      return std::to_string(sig);
  }
}

std::string ExitCodeText(int32_t code) {
  if (code < 0) return "killed by " + SignalName(-code);
  return std::to_string(code);
}

Result<Job> DecodeJobReply(const Json& reply) {
  auto it = reply.find("job");
  if (it == reply.end()) return Internal("the head's answer has no 'job': " + reply.dump());
  return JobFromJson(*it);
}

}  // namespace

std::string JobRef(const Job& j) {
  return j.IsArrayElement() ? std::to_string(j.array_id) + "_" + std::to_string(j.array_index)
                            : std::to_string(j.id);
}

namespace {

// A pending job's estimated start from now ("in 5m", "now"; "N/A": none), marked where it is
// less than sure ("in 5m (medium)", "in 2h (low)"; ConfidenceText says what each means).
std::string StartOf(const Job& j, TimeMs now) {
  if (j.state != JobState::kPending) return "-";
  if (j.estimated_start <= 0) return "N/A";
  std::string when = j.estimated_start <= now ? "now" : "in " + FormatAge(j.estimated_start - now);
  if (j.estimate_confidence == EstimateConfidence::kHigh) return when;
  return when + " (" + EstimateConfidenceName(j.estimate_confidence) + ")";
}

// What an estimate's confidence means to its reader.
std::string ConfidenceText(EstimateConfidence c) {
  switch (c) {
    case EstimateConfidence::kHigh:
      return "high confidence (from time limits: by then at the latest, if nothing overtakes it)";
    case EstimateConfidence::kMedium:
      return "medium confidence (from the run times of the users' ended jobs)";
    case EstimateConfidence::kLow:
      return "low confidence (a job ahead has no time limit and little or no history: it may "
             "be much later)";
  }
  return "low confidence";
}

}  // namespace

std::string RenderJobsTable(const std::vector<Job>& jobs, TimeMs now, bool expand, bool start) {
  std::vector<std::string> header = {"ID",   "NAME",  "USER", "QUEUE", "STATE",
                                     "GPUS", "NODES", "TIME", "REASON"};
  if (start) header.insert(header.begin() + 8, "START");
  // Elastic jobs listed: a REPLICAS column with their size now and their range ("3/2:4").
  const bool elastic =
      std::any_of(jobs.begin(), jobs.end(), [](const Job& j) { return j.spec.IsElastic(); });
  if (elastic) header.insert(header.begin() + 6, "REPLICAS");
  Table t(header);
  const Job* row_job = nullptr;
  auto add = [&](std::vector<std::string> row, const std::string& start_text) {
    if (start) row.insert(row.begin() + 8, start_text);
    if (elastic) row.insert(row.begin() + 6, ReplicaSizeText(*row_job));
    t.AddRow(row);
  };
  auto gpu_text = [](const Job& j) {
    // An elastic job's GPUs are those its replicas hold now (its maximum's while it waits).
    const Run* run = j.CurrentRun();
    const int64_t replicas =
        j.spec.IsElastic() && run && !IsRunOver(run->state) ? run->LiveReplicas() : j.spec.replicas;
    int64_t gpus = replicas * j.spec.per_replica.gpu_milli;
    return gpus % kGpuMilli == 0 ? std::to_string(gpus / kGpuMilli)
                                 : FormatCpus(static_cast<int32_t>(gpus));
  };
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    row_job = &j;
    if (expand || !j.IsArrayElement()) {
      add({JobRef(j), j.spec.name.empty() ? "-" : j.spec.name, j.owner, j.spec.queue,
           JobStateName(j.state), gpu_text(j),
           NodesOf(j.state == JobState::kPending ? nullptr : j.CurrentRun()), TimeOf(j, now),
           ReasonOf(j)},
          StartOf(j, now));
      continue;
    }
    // One line per array: its index range and how many elements are in each state.
    size_t end = i;
    std::map<std::string, int> by_state;
    int32_t lo = j.array_index, hi = j.array_index;
    while (end < jobs.size() && jobs[end].array_id == j.array_id) {
      ++by_state[JobStateName(jobs[end].state)];
      lo = std::min(lo, jobs[end].array_index);
      hi = std::max(hi, jobs[end].array_index);
      ++end;
    }
    std::string states;
    for (const char* st : {"running", "scheduled", "pending", "succeeded", "failed", "cancelled"}) {
      if (by_state.count(st))
        states += (states.empty() ? "" : ",") + std::to_string(by_state[st]) + " " + st;
    }
    add({std::to_string(j.array_id) + "_[" + std::to_string(lo) + "-" + std::to_string(hi) + "]",
         j.spec.name.empty() ? "-" : j.spec.name, j.owner, j.spec.queue, states,
         gpu_text(j) + " each", "-", "-", std::to_string(end - i) + " elements"},
        "-");
    i = end - 1;
  }
  return t.Render();
}

Result<JobRefId> ResolveJobRef(ApiClient& api, const std::string& text) {
  auto us = text.find('_');
  if (us == std::string::npos) {
    auto id = ParseJobId(text);
    if (!id) return InvalidArgument("not a job ID: '" + text + "'");
    return JobRefId{*id, false};
  }
  auto array = ParseJobId(text.substr(0, us));
  auto index = ParseJobId("1" + text.substr(us + 1));  // "1" keeps index 0 parseable
  if (!array || !index || us + 1 >= text.size()) {
    return InvalidArgument("not a job ID: '" + text + "' (want ID or ARRAYID_INDEX)");
  }
  auto reply = api.CallJson("GET", "/v1/jobs?limit=100000&array=" + std::to_string(*array));
  if (!reply.ok()) return reply.status();
  std::string want = text.substr(us + 1);
  for (const Json& j : reply->value("jobs", Json::array())) {
    if (std::to_string(j.value("array_index", -1)) == want)
      return JobRefId{j.value("id", JobId{0}), true};
  }
  return NotFound("array " + std::to_string(*array) + " has no element " + want);
}

namespace {

// `corral show JOB`'s page, a section at a time.
class JobPage {
 public:
  JobPage(const Job& j, TimeMs now, bool utc) : j_(j), s_(j.spec), now_(now), utc_(utc) {}

  std::string Render() {
    o_ << "Job " << j_.id << (s_.name.empty() ? "" : " (" + s_.name + ")") << ": "
       << JobStateName(j_.state) << "\n";
    Standing();
    What();
    Holdings();
    Rules();
    if (!j_.runs.empty()) Runs();
    if (!j_.events.empty()) Events();
    return o_.str();
  }

 private:
  void Kv(const std::string& k, const std::string& v) {
    o_ << "  " << k << ":" << std::string(k.size() < 18 ? 18 - k.size() : 1, ' ') << v << "\n";
  }
  std::string When(TimeMs t) const {
    if (t <= 0) return "-";
    return FormatTimestamp(t, utc_) + " (" + FormatAge(now_ - t) + " ago)";
  }

  // Who, where, when, and how it stands.
  void Standing() {
    Kv("owner", j_.owner);
    Kv("queue", s_.queue);
    Kv("submitted", When(j_.submitted_at));
    if (j_.ended_at > 0) Kv("ended", When(j_.ended_at));
    if (IsTerminal(j_.state)) Kv("exit code", ExitCodeText(j_.exit_code));
    if (j_.state == JobState::kPending && !j_.pending_reason.empty()) {
      Kv("pending reason", j_.pending_reason);
    }
    // A placed job's staging, a running one's stage-out: how far it is.
    if ((j_.state == JobState::kScheduled || j_.state == JobState::kRunning) &&
        !j_.pending_reason.empty()) {
      Kv("staging", j_.pending_reason);
    }
    if (j_.state == JobState::kPending) {
      TimeMs t = j_.estimated_start;
      Kv("estimated start", t <= 0 ? "N/A"
                                   : FormatTimestamp(t, utc_) + " (" + StartOf(j_, now_) + ") on " +
                                         Join(j_.estimated_nodes, ",") + ", " +
                                         ConfidenceText(j_.estimate_confidence));
    }
    if (j_.idle_since > 0) {
      Kv("idle", "its GPUs have stayed under the threshold since " + When(j_.idle_since));
    }
  }

  // What it runs: its array element, dependencies, command and directory.
  void What() {
    if (j_.IsArrayElement()) {
      Kv("array", std::to_string(j_.array_id) + " index " + std::to_string(j_.array_index) +
                      (j_.array_max_running
                           ? " (at most " + std::to_string(j_.array_max_running) + " running)"
                           : ""));
    }
    if (!s_.dependencies.empty()) Kv("waits for", FormatDependencies(s_.dependencies));
    Kv("command", FormatCommand(s_.command));
    Kv("workdir", s_.workdir.empty() ? "-" : s_.workdir);
  }

  // What it holds: replicas and their size, its use, elastic size, spread and constraints.
  void Holdings() {
    const Resources& r = s_.per_replica;
    Kv("resources", std::to_string(s_.replicas) + (s_.replicas == 1 ? " replica" : " replicas") +
                        " x (" + FormatCpus(r.gpu_milli) + " GPU" +
                        (r.gpu_milli == kGpuMilli ? "" : "s") + ", " + FormatCpus(r.cpu_milli) +
                        " CPU" + (r.cpu_milli == 1000 ? "" : "s") + ", memory " +
                        (r.memory_mb > 0 ? FormatMemoryMb(r.memory_mb) : "-") + ")");
    if (std::string use = EfficiencyLine(j_, now_); !use.empty()) Kv("use (mean)", use);
    if (s_.IsElastic()) {
      const Run* run = j_.CurrentRun();
      Kv("elastic", ReplicaSizeText(j_) + " (held now / min:max)" +
                        (run && run->resizes > 0
                             ? ", resized " + std::to_string(run->resizes) + " time(s) in this run"
                             : ""));
      if (s_.hot_spares > 0) {
        std::string held;
        for (const std::string& n : j_.hot_spare_nodes) held += (held.empty() ? "" : ",") + n;
        Kv("hot spares",
           std::to_string(j_.hot_spare_nodes.size()) + "/" + std::to_string(s_.hot_spares) +
               " held" + (held.empty() ? " (none: GPUs are busy or a job waits)" : " on " + held));
      }
    }
    if (s_.max_replicas_per_node > 0) {
      Kv("per node", s_.max_replicas_per_node == 1
                         ? std::string("one replica (each on a different node)")
                         : "at most " + std::to_string(s_.max_replicas_per_node) + " replicas");
    }
    if (!s_.gpu_model.empty()) Kv("gpu model", s_.gpu_model);
    if (!s_.node_labels.empty()) Kv("node labels", FormatLabels(s_.node_labels));
  }

  // How it is treated: its limit, priority, preemption, restarts, checkpoint and environment.
  void Rules() {
    Kv("time limit", s_.time_limit_ms > 0 ? FormatDuration(s_.time_limit_ms) : "none");
    Kv("priority", std::to_string(s_.priority));
    Kv("preemptible", s_.preemptible ? "yes" : "no");
    Kv("max restarts", std::to_string(s_.max_restarts));
    Kv("checkpoint",
       SignalName(s_.checkpoint_signal) + ", then SIGKILL after " + FormatAge(s_.grace_ms));
    for (const auto& [k, v] : s_.env) Kv("env", k + "=" + v);
  }

  void Runs() {
    o_ << "Runs:\n";
    for (const Run& r : j_.runs) {
      o_ << "  " << j_.id << "." << r.attempt << "  " << RunStateName(r.state);
      if (r.started_at > 0) {
        o_ << "  started " << FormatTimestamp(r.started_at, utc_);
      } else if (r.scheduled_at > 0) {
        o_ << "  scheduled " << FormatTimestamp(r.scheduled_at, utc_);
      }
      if (r.ended_at > 0) {
        o_ << "  ended " << FormatTimestamp(r.ended_at, utc_);
        TimeMs start = r.started_at > 0 ? r.started_at : r.scheduled_at;
        if (start > 0) o_ << " (ran " << FormatAge(r.ended_at - start) << ")";
      }
      if (!r.reason.empty()) o_ << "  reason: " << r.reason;
      o_ << "\n";
      Replicas(r);
    }
  }

  void Replicas(const Run& r) {
    for (size_t i = 0; i < r.placement.size(); ++i) {
      const ReplicaPlacement& p = r.placement[i];
      std::vector<std::string> g;
      for (int32_t x : p.gpus) g.push_back(std::to_string(x));
      o_ << "    replica " << i << ": " << p.node << "  GPUs " << (g.empty() ? "-" : Join(g, ","));
      if (i < r.exit_codes.size() && r.exit_codes[i] != kNotExited) {
        o_ << "  exit " << ExitCodeText(r.exit_codes[i]);
      }
      o_ << "\n";
    }
  }

  void Events() {
    o_ << "Events:\n";
    for (const JobEvent& e : j_.events) {
      o_ << "  " << FormatTimestamp(e.at, utc_) << "  " << e.what;
      if (!e.reason.empty()) o_ << "  " << e.reason;
      o_ << "\n";
    }
  }

  const Job& j_;
  const JobSpec& s_;
  const TimeMs now_;
  const bool utc_;
  std::ostringstream o_;
};

}  // namespace

std::string RenderJob(const Job& j, TimeMs now, bool utc) { return JobPage(j, now, utc).Render(); }

int RunJobs(const std::vector<std::string>& argv, CliContext& ctx) {
  static const std::vector<FlagDef> kFlags = {
      {"state", 's', true}, {"queue", 'q', true},  {"user", 'u', true},   {"all", 'a', false},
      {"limit", 'n', true}, {"output", 'o', true}, {"watch", 'w', false}, {"updates", 0, true},
      {"since", 0, true},   {"expand", 0, false},  {"start", 0, false}};
  auto parsed = ParseArgs(argv, kFlags, false);
  if (!parsed.ok()) return UsageError(ctx, "jobs", parsed.status().message());
  const ParsedArgs& args = *parsed;
  if (args.Has("help")) {
    *ctx.out << CommandUsage("jobs") << "\n";
    return kExitOk;
  }
  if (!args.positional.empty()) {
    return UsageError(ctx, "jobs", "unexpected argument '" + args.positional[0] + "'");
  }
  int code = kExitOk;
  bool json = WantsJson(args, ctx, "jobs", &code);
  if (code != kExitOk) return code;
  std::string query;
  if (args.Has("state")) {
    std::stringstream ss(args.Get("state"));
    std::string s;
    while (std::getline(ss, s, ',')) {
      JobState st;
      if (!ParseJobState(s, &st)) {
        return UsageError(ctx, "jobs",
                          "flag --state: got \"" + s +
                              "\", want pending, scheduled, running, succeeded, "
                              "failed or cancelled (comma-separated)");
      }
    }
    query += "&state=" + QueryEscape(args.Get("state"));
  }
  // Like squeue: live jobs, and those that ended lately (an hour, or --since); --all: every
  // job the head keeps.
  if (args.Has("all") && args.Has("since")) {
    return UsageError(ctx, "jobs", "--all and --since do not go together");
  }
  if (!args.Has("all")) {
    auto since = ParseDuration("--since", args.Get("since", "1h"));
    if (!since.ok()) return UsageError(ctx, "jobs", since.status().message());
    query += "&ended_since=" + std::to_string(std::max<TimeMs>(1, ctx.now() - *since));
  }
  if (args.Has("queue")) query += "&queue=" + QueryEscape(args.Get("queue"));
  if (args.Has("user")) query += "&user=" + QueryEscape(args.Get("user"));
  size_t limit = 0;
  if (args.Has("limit")) {
    auto n = ParseJobId(args.Get("limit"));
    if (!n)
      return UsageError(ctx, "jobs",
                        "flag --limit: got \"" + args.Get("limit") + "\", want a positive integer");
    limit = static_cast<size_t>(*n);
  }
  if (args.Has("watch")) {
    if (json) return UsageError(ctx, "jobs", "--watch draws a table; it does not go with -o json");
    int64_t updates = -1;
    if (args.Has("updates")) {
      auto n = ParseJobId(args.Get("updates"));
      if (!n) return UsageError(ctx, "jobs", "flag --updates: want a positive integer");
      updates = static_cast<int64_t>(*n);
    }
    return WatchTable(ctx, "jobs", updates, [&](std::string* table) {
      return ListJobsTable(ctx, query, limit, args.Has("expand"), table, args.Has("start"));
    });
  }
  std::string table;
  if (int rc =
          json ? ListJobsJson(ctx, query, limit)
               : ListJobsTable(ctx, query, limit, args.Has("expand"), &table, args.Has("start"));
      rc != kExitOk) {
    return rc;
  }
  *ctx.out << table;
  return kExitOk;
}

// Pages through all matching jobs (ascending id) and keeps the newest `limit`.
Result<std::deque<Json>> FetchJobs(CliContext& ctx, const std::string& query, size_t limit) {
  ApiClient api(ctx);
  std::deque<Json> raw;
  std::string after;
  for (int page = 0; page < 100000; ++page) {
    std::string path = "/v1/jobs?limit=1000" + query + (after.empty() ? "" : "&after=" + after);
    auto reply = api.CallJson("GET", path);
    if (!reply.ok()) return reply.status();
    auto jobs = reply->find("jobs");
    if (jobs == reply->end() || !jobs->is_array()) {
      return Internal("the head's answer has no 'jobs' array");
    }
    for (Json& j : *jobs) {
      raw.push_back(std::move(j));
      if (limit > 0 && raw.size() > limit) raw.pop_front();
    }
    auto next = reply->find("next_after");
    if (next == reply->end() || next->is_null() || jobs->empty()) break;
    std::string n = next->is_string() ? next->get<std::string>() : next->dump();
    if (n == after) break;
    after = n;
  }
  return raw;
}

int ListJobsJson(CliContext& ctx, const std::string& query, size_t limit) {
  auto raw = FetchJobs(ctx, query, limit);
  if (!raw.ok()) {
    PrintError(ctx, "jobs", raw.status().message());
    return kExitError;
  }
  Json arr = Json::array();
  for (Json& j : *raw) arr.push_back(std::move(j));
  *ctx.out << arr.dump(2) << "\n";
  return kExitOk;
}

int ListJobsTable(CliContext& ctx, const std::string& query, size_t limit, bool expand,
                  std::string* table, bool start) {
  auto raw = FetchJobs(ctx, query, limit);
  if (!raw.ok()) {
    PrintError(ctx, "jobs", raw.status().message());
    return kExitError;
  }
  std::vector<Job> jobs;
  for (const Json& j : *raw) {
    auto job = JobFromJson(j);
    if (!job.ok()) {
      PrintError(ctx, "jobs", "cannot read a job from the head: " + job.status().message());
      return kExitError;
    }
    jobs.push_back(std::move(*job));
  }
  *table = RenderJobsTable(jobs, ctx.now(), expand, start);
  return kExitOk;
}

int RunShow(const std::vector<std::string>& argv, CliContext& ctx) {
  auto parsed = ParseArgs(argv, {{"output", 'o', true}}, false);
  if (!parsed.ok()) return UsageError(ctx, "show", parsed.status().message());
  const ParsedArgs& args = *parsed;
  if (args.Has("help")) {
    *ctx.out << CommandUsage("show") << "\n";
    return kExitOk;
  }
  if (args.positional.size() != 1) return UsageError(ctx, "show", "want exactly one job ID");
  auto id = ParseJobId(args.positional[0]);
  if (!id) return UsageError(ctx, "show", "not a job ID: '" + args.positional[0] + "'");
  int code = kExitOk;
  bool json = WantsJson(args, ctx, "show", &code);
  if (code != kExitOk) return code;
  ApiClient api(ctx);
  auto reply = api.CallJson("GET", "/v1/jobs/" + std::to_string(*id));
  if (!reply.ok()) {
    PrintError(ctx, "show", reply.status().message());
    return kExitError;
  }
  if (json) {
    auto it = reply->find("job");
    *ctx.out << (it == reply->end() ? *reply : *it).dump(2) << "\n";
    return kExitOk;
  }
  auto job = DecodeJobReply(*reply);
  if (!job.ok()) {
    PrintError(ctx, "show", "cannot read the job from the head: " + job.status().message());
    return kExitError;
  }
  *ctx.out << RenderJob(*job, ctx.now(), ctx.utc_times);
  return kExitOk;
}

namespace {

// An array's elements, by id, from one listing.
// `filter`: more of the listing's query (e.g. "&state=succeeded"), or nothing for every element.
Result<std::map<JobId, Job>> FetchArrayElements(ApiClient& api, JobId array,
                                                const std::string& filter = "") {
  auto reply = api.CallJson("GET", "/v1/jobs?limit=100000&array=" + std::to_string(array) + filter);
  if (!reply.ok()) return reply.status();
  std::map<JobId, Job> out;
  for (const Json& j : reply->value("jobs", Json::array())) {
    auto job = JobFromJson(j);
    if (!job.ok()) return job.status();
    out.emplace(job->id, std::move(*job));
  }
  return out;
}

bool HeadIsGone(const Status& st) {
  return st.code() == ErrorCode::kUnavailable && st.message().rfind("cannot reach", 0) == 0;
}

// A job waited for, with the array it was named by (0: by its own id): an array's elements
// are read with one listing a round, not one call each.
struct Waited {
  JobId id;
  JobId array;
};

// The jobs `corral wait` names: an array's id stands for each of its elements. Nullopt, with
// the exit code, after saying why where one cannot be waited for.
std::optional<std::vector<Waited>> JobsToWait(ApiClient& api, const std::vector<std::string>& refs,
                                              CliContext& ctx, int* exit_code) {
  std::vector<Waited> waiting;
  std::set<JobId> named;
  auto add = [&](JobId id, JobId array) {
    if (named.insert(id).second) waiting.push_back({id, array});
  };
  for (const std::string& a : refs) {
    if (a.find('_') == std::string::npos && !ParseJobId(a)) {
      *exit_code = UsageError(ctx, "wait", "not a job ID: '" + a + "'");
      return std::nullopt;
    }
    auto ref = ResolveJobRef(api, a);
    if (!ref.ok()) {
      PrintError(ctx, "wait", ref.status().message());
      *exit_code = kExitError;
      return std::nullopt;
    }
    bool added = false;
    if (!ref->element) {  // an array's id stands for every element
      auto one = api.CallJson("GET", "/v1/jobs/" + std::to_string(ref->id));
      bool is_array =
          one.ok() && one->value("job", Json::object()).value("array_id", JobId{0}) == ref->id;
      auto elems = is_array ? FetchArrayElements(api, ref->id)
                            : Result<std::map<JobId, Job>>(std::map<JobId, Job>{});
      if (elems.ok() && !elems->empty()) {
        for (const auto& [id, job] : *elems) add(id, ref->id);
        added = true;
      }
    }
    if (!added) add(ref->id, 0);
  }
  return waiting;
}

// Per array: its elements that ended are listed from this time of the head's on. An element
// ending after a listing ends later than any element that listing held, so each round asks
// only for those that ended since the last ones seen, less a margin for the head's clock
// stepping back (an element seen twice is reported once). O(elements ended), not O(array).
class EndedElements {
 public:
  // This round's listings, one per array waited for.
  void Refresh(ApiClient& api, const std::vector<Waited>& waiting) {
    arrays_.clear();
    for (const Waited& w : waiting) {
      if (w.array == 0 || arrays_.count(w.array)) continue;
      TimeMs since = ended_since_[w.array];
      auto listed = FetchArrayElements(
          api, w.array,
          "&state=succeeded,failed,cancelled" +
              (since > 0 ? "&ended_since=" + std::to_string(since) : std::string()));
      if (listed.ok()) {
        for (const auto& [id, job] : *listed) {
          since = std::max(since, job.ended_at - kEndedMargin);
        }
        ended_since_[w.array] = since;
      }
      arrays_.emplace(w.array, std::move(listed));
    }
  }
  // Element w as listed this round; nullopt where it has not ended.
  std::optional<Result<Job>> Of(const Waited& w) const {
    const auto& listed = arrays_.at(w.array);
    if (!listed.ok()) return Result<Job>(listed.status());
    if (auto it = listed->find(w.id); it != listed->end()) return Result<Job>(it->second);
    return std::nullopt;
  }

 private:
  static constexpr DurationMs kEndedMargin = 5 * kSecond;
  std::map<JobId, TimeMs> ended_since_;
  std::map<JobId, Result<std::map<JobId, Job>>> arrays_;
};

void PrintEnded(CliContext& ctx, const Job& job) {
  *ctx.out << "job " << JobRef(job) << " " << JobStateName(job.state);
  if (job.state == JobState::kFailed)
    *ctx.out << " (exit code " << ExitCodeText(job.exit_code) << ")";
  const Run* run = job.CurrentRun();
  if (job.state != JobState::kSucceeded && run != nullptr && !run->reason.empty()) {
    *ctx.out << ": " << run->reason;
  }
  *ctx.out << "\n";
  ctx.out->flush();
}

// One round: prints each job that ended, keeps those that have not. `all_ok` turns false on a
// job that did not succeed or could not be read; nullopt where the head is gone (waiting
// longer would not tell more).
std::optional<std::vector<Waited>> WaitRound(ApiClient& api, CliContext& ctx,
                                             const std::vector<Waited>& waiting,
                                             EndedElements& ended, bool* all_ok) {
  ended.Refresh(api, waiting);
  std::vector<Waited> still;
  for (const Waited& w : waiting) {
    Result<Job> job = Internal("not read");
    if (w.array == 0) {
      auto reply = api.CallJson("GET", "/v1/jobs/" + std::to_string(w.id));
      job = reply.ok() ? DecodeJobReply(*reply) : Result<Job>(reply.status());
    } else if (auto listed = ended.Of(w); listed) {
      job = std::move(*listed);
    } else {
      still.push_back(w);  // not ended yet
      continue;
    }
    if (!job.ok()) {
      PrintError(ctx, "wait", "job " + std::to_string(w.id) + ": " + job.status().message());
      if (HeadIsGone(job.status())) return std::nullopt;
      *all_ok = false;
      continue;
    }
    if (!IsTerminal(job->state)) {
      still.push_back(w);
      continue;
    }
    PrintEnded(ctx, *job);
    if (job->state != JobState::kSucceeded) *all_ok = false;
  }
  return still;
}

}  // namespace

int RunWait(const std::vector<std::string>& argv, CliContext& ctx) {
  auto parsed = ParseArgs(argv, {{"timeout", 't', true}}, false);
  if (!parsed.ok()) return UsageError(ctx, "wait", parsed.status().message());
  const ParsedArgs& args = *parsed;
  if (args.Has("help")) {
    *ctx.out << CommandUsage("wait") << "\n";
    return kExitOk;
  }
  if (args.positional.empty()) return UsageError(ctx, "wait", "want one or more job IDs");
  ApiClient api(ctx);
  int exit_code = kExitError;
  auto to_wait = JobsToWait(api, args.positional, ctx, &exit_code);
  if (!to_wait) return exit_code;
  std::vector<Waited> waiting = std::move(*to_wait);
  DurationMs timeout = -1;
  if (args.Has("timeout")) {
    auto d = ParseDuration("--timeout", args.Get("timeout"));
    if (!d.ok()) return UsageError(ctx, "wait", d.status().message());
    timeout = *d;
  }
  const TimeMs deadline = timeout >= 0 ? ctx.now() + timeout : 0;
  bool all_ok = true;
  EndedElements ended;
  while (true) {
    auto still = WaitRound(api, ctx, waiting, ended, &all_ok);
    if (!still) return kExitError;
    waiting = std::move(*still);
    if (waiting.empty()) break;
    if (timeout >= 0 && ctx.now() >= deadline) {
      std::vector<std::string> ids;
      for (const Waited& w : waiting) ids.push_back(std::to_string(w.id));
      PrintError(
          ctx, "wait",
          "timed out after " + FormatAge(timeout) + "; still not finished: " + Join(ids, " "));
      return kExitTimeout;
    }
    DurationMs nap = ctx.poll_interval;
    if (timeout >= 0) nap = std::max<DurationMs>(1, std::min(nap, deadline - ctx.now()));
    ctx.sleep(nap);
  }
  return all_ok ? kExitOk : kExitError;
}

namespace {

// Whether job `id` (not an array) has ended cancelled: a second cancel of it is no error.
bool AlreadyCancelled(ApiClient& api, JobId id) {
  auto reply = api.CallJson("GET", "/v1/jobs/" + std::to_string(id));
  if (!reply.ok()) return false;
  auto job = DecodeJobReply(*reply);
  return job.ok() && job->array_id != id && job->state == JobState::kCancelled;
}

}  // namespace

int RunCancel(const std::vector<std::string>& argv, CliContext& ctx) {
  auto parsed = ParseArgs(argv, {}, false);
  if (!parsed.ok()) return UsageError(ctx, "cancel", parsed.status().message());
  if (parsed->Has("help")) {
    *ctx.out << CommandUsage("cancel") << "\n";
    return kExitOk;
  }
  if (parsed->positional.empty()) return UsageError(ctx, "cancel", "want one or more job IDs");
  for (const std::string& a : parsed->positional) {
    if (a.find('_') == std::string::npos && !ParseJobId(a)) {
      return UsageError(ctx, "cancel", "not a job ID: '" + a + "'");
    }
  }
  ApiClient api(ctx);
  int code = kExitOk;
  for (const std::string& a : parsed->positional) {
    auto ref = ResolveJobRef(api, a);
    if (!ref.ok()) {
      PrintError(ctx, "cancel", "job " + a + ": " + ref.status().message());
      code = kExitError;
      continue;
    }
    // An array's id cancels the whole array (as scancel does); ID_INDEX one element.
    auto reply = api.CallJson("POST", "/v1/jobs/" + std::to_string(ref->id) + "/cancel" +
                                          (ref->element ? "?element=1" : ""));
    if (!reply.ok() && reply.status().code() == ErrorCode::kFailedPrecondition && !ref->element &&
        AlreadyCancelled(api, ref->id)) {
      *ctx.out << "Job " << a << " already cancelled\n";  // as asked: idempotent, as scancel
      continue;
    }
    if (!reply.ok()) {
      PrintError(ctx, "cancel", "job " + a + ": " + reply.status().message());
      code = kExitError;
      continue;
    }
    *ctx.out << "Cancelled job " << a << "\n";
  }
  return code;
}

int RunCheckpointDone(const std::vector<std::string>& argv, CliContext& ctx) {
  auto parsed = ParseArgs(argv, {}, false);
  if (!parsed.ok()) return UsageError(ctx, "checkpoint-done", parsed.status().message());
  if (parsed->Has("help")) {
    *ctx.out << CommandUsage("checkpoint-done") << "\n";
    return kExitOk;
  }
  std::string text;
  if (parsed->positional.size() == 1) {
    text = parsed->positional[0];
  } else if (parsed->positional.empty()) {
    text = ctx.env("CORRAL_JOB_ID").value_or("");
    if (text.empty()) {
      return UsageError(ctx, "checkpoint-done", "want a job ID (CORRAL_JOB_ID is not set)");
    }
  } else {
    return UsageError(ctx, "checkpoint-done", "want at most one job ID");
  }
  auto id = ParseJobId(text);
  if (!id) return UsageError(ctx, "checkpoint-done", "not a job ID: '" + text + "'");
  // From inside the job: its own head and credential, whatever the user's config names (which
  // may be another cluster's head, or none).
  if (ctx.env("CORRAL_JOB_ID").value_or("") == text) UseStepCredential(ctx);
  ApiClient api(ctx);
  auto reply = api.CallJson("POST", "/v1/jobs/" + std::to_string(*id) + "/checkpoint");
  if (!reply.ok()) {
    PrintError(ctx, "checkpoint-done",
               "job " + std::to_string(*id) + ": " + reply.status().message());
    return kExitError;
  }
  return kExitOk;
}

}  // namespace corral::cli
