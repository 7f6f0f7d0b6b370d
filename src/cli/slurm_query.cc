// squeue, scancel, sacct, scontrol, sinfo: Slurm's views of Corral's jobs and nodes. Their
// formats live in src/slurm/format.h; this file fetches and filters.
#include <algorithm>
#include <ostream>
#include <set>
#include <sstream>

#include "cli/commands.h"
#include "cli/slurm_errors.h"
#include "core/hostlist.h"
#include "core/spec.h"
#include "slurm/format.h"
#include "slurm/options.h"
#include "slurm/sinfo.h"

namespace corral::cli {
namespace {

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

using slurm::OptionDef;

// Jobs named "ID" (an array's id: all its elements), "ARRAYID_INDEX", or "ARRAYID_[...]"
// is not supported. Errors name the id.
Result<std::vector<Job>> JobsByIds(CliContext& ctx, const std::vector<std::string>& ids) {
  ApiClient api(ctx);
  std::vector<Job> out;
  std::set<JobId> seen;
  for (const std::string& text : ids) {
    if (text.find('_') == std::string::npos && !ParseJobId(text)) {
      return InvalidArgument("Invalid job id specified: " + text);
    }
    auto ref = ResolveJobRef(api, text);
    if (!ref.ok()) return InvalidArgument("Invalid job id specified: " + text);
    auto one = api.CallJson("GET", "/v1/jobs/" + std::to_string(ref->id));
    if (!one.ok()) return InvalidArgument("Invalid job id specified: " + text);
    auto job = JobFromJson(one->value("job", Json::object()));
    if (!job.ok()) return job.status();
    std::deque<Json> raw;
    if (!ref->element && job->array_id == job->id) {
      auto elems = FetchJobs(ctx, "&array=" + std::to_string(job->id), 0);
      if (!elems.ok()) return elems.status();
      raw = std::move(*elems);
    } else {
      raw.push_back(one->value("job", Json::object()));
    }
    auto jobs = DecodeJobs(raw);
    if (!jobs.ok()) return jobs.status();
    for (Job& j : *jobs) {
      if (seen.insert(j.id).second) out.push_back(std::move(j));
    }
  }
  return out;
}

std::string UserQuery(CliContext& ctx, const slurm::ParsedOptions& o) {
  std::string user = o.Get("user");
  if (o.Has("me")) user = ctx.env("USER").value_or("");
  return user.empty() ? "" : "&user=" + user;
}

}  // namespace

Result<std::vector<Job>> DecodeJobs(const std::deque<Json>& raw) {
  std::vector<Job> jobs;
  for (const Json& j : raw) {
    auto job = JobFromJson(j);
    if (!job.ok()) return Internal("cannot read a job from the head: " + job.status().message());
    jobs.push_back(std::move(*job));
  }
  return jobs;
}

int RunSqueue(const std::vector<std::string>& argv, CliContext& ctx) {
  static const std::vector<OptionDef> kDefs = {
      {"format", 'o', OptionDef::kRequired}, {"user", 'u', OptionDef::kRequired},
      {"jobs", 'j', OptionDef::kRequired},   {"me", 0, OptionDef::kNone},
      {"noheader", 'h', OptionDef::kNone},   {"partition", 'p', OptionDef::kRequired},
      {"states", 't', OptionDef::kRequired}, {"array", 'r', OptionDef::kNone},
      {"start", 0, OptionDef::kNone},        {"help", 0, OptionDef::kNone}};
  auto o = slurm::ParseOptions(argv, kDefs, false);
  if (!o.ok()) return SlurmError(ctx, "squeue", o.status().message());
  if (!o->unknown.empty()) return SlurmError(ctx, "squeue", "unrecognized option " + o->unknown[0]);
  if (o->Has("help")) {
    *ctx.out << "Usage: squeue [-o FORMAT] [-u USER] [--me] [-j ID,...] [-p PART] [-t STATES] "
                "[-h] [--start]\n";
    return kExitOk;
  }
  std::vector<Job> jobs;
  if (o->Has("jobs")) {
    auto j = JobsByIds(ctx, SplitComma(o->Get("jobs")));
    if (!j.ok()) return SlurmError(ctx, "squeue", j.status().message());
    jobs = std::move(*j);
  } else {
    auto raw = FetchJobs(ctx, "&state=pending,scheduled,running" + UserQuery(ctx, *o), 0);
    if (!raw.ok()) return SlurmError(ctx, "squeue", raw.status().message());
    auto j = DecodeJobs(*raw);
    if (!j.ok()) return SlurmError(ctx, "squeue", j.status().message());
    jobs = std::move(*j);
  }
  std::set<std::string> states;
  for (const std::string& s : SplitComma(o->Get("states"))) {
    std::string up = s;
    for (char& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    states.insert(up);
  }
  std::set<std::string> partitions;
  for (const std::string& p : SplitComma(o->Get("partition"))) partitions.insert(p);
  std::vector<Job> shown;
  for (Job& j : jobs) {
    const std::string st = slurm::SlurmState(j);
    if (states.empty()
            ? IsTerminal(j.state)  // as Slurm: -j lists too show live jobs only, unless -t
            : !(states.count(st) || states.count(slurm::CompactState(st)) || states.count("ALL"))) {
      continue;
    }
    if (!partitions.empty() && !partitions.count(j.spec.queue)) continue;
    if (o->Has("start") && j.state != JobState::kPending) continue;  // as Slurm: pending only
    shown.push_back(std::move(j));
  }
  const char* format = o->Has("start") ? slurm::kSqueueStartFormat : slurm::kSqueueDefaultFormat;
  auto out = slurm::RenderSqueue(shown, o->Get("format", format), !o->Has("noheader"), ctx.now());
  if (!out.ok()) return SlurmError(ctx, "squeue", out.status().message());
  *ctx.out << *out;
  return kExitOk;
}

int RunScancel(const std::vector<std::string>& argv, CliContext& ctx) {
  static const std::vector<OptionDef> kDefs = {
      {"user", 'u', OptionDef::kRequired}, {"signal", 's', OptionDef::kRequired},
      {"batch", 'b', OptionDef::kNone},    {"full", 'f', OptionDef::kNone},
      {"quiet", 'Q', OptionDef::kNone},    {"help", 0, OptionDef::kNone}};
  auto o = slurm::ParseOptions(argv, kDefs, false);
  if (!o.ok()) return SlurmError(ctx, "scancel", o.status().message());
  if (!o->unknown.empty())
    return SlurmError(ctx, "scancel", "unrecognized option " + o->unknown[0]);
  if (o->Has("help")) {
    *ctx.out << "Usage: scancel [-u USER] [--signal SIG] ID[_INDEX]...\n";
    return kExitOk;
  }
  // --signal: the signal reaches every process of the running job, which keeps running.
  int32_t signal = 0;
  if (o->Has("signal")) {
    auto sig = ParseSignal("--signal", o->Get("signal"));
    if (!sig.ok()) return SlurmError(ctx, "scancel", sig.status().message());
    signal = *sig;
  }
  std::vector<std::string> ids;
  for (const std::string& p : o->positional) {
    for (const std::string& id : SplitComma(p)) ids.push_back(id);
  }
  if (o->Has("user")) {
    auto raw = FetchJobs(ctx, "&state=pending,scheduled,running&user=" + o->Get("user"), 0);
    if (!raw.ok()) return SlurmError(ctx, "scancel", raw.status().message());
    for (const Json& j : *raw) ids.push_back(j.value("id", Json(0)).dump());
  } else if (ids.empty()) {
    return SlurmError(ctx, "scancel", "No job identification provided");
  }
  ApiClient api(ctx);
  int rc = kExitOk;
  for (const std::string& text : ids) {
    if (text.find('_') == std::string::npos && !ParseJobId(text)) {
      rc = SlurmError(ctx, "scancel", "Invalid job id " + text);
      continue;
    }
    auto ref = ResolveJobRef(api, text);
    if (!ref.ok()) {
      rc = SlurmError(ctx, "scancel",
                      "Kill job error on job id " + text + ": Invalid job id specified");
      continue;
    }
    auto reply = signal > 0
                     ? api.CallJson("POST", "/v1/jobs/" + std::to_string(ref->id) +
                                                "/signal?signal=" + std::to_string(signal) +
                                                (o->Has("batch")  ? "&to=batch"
                                                 : o->Has("full") ? "&to=all"
                                                                  : ""))
                     : api.CallJson("POST", "/v1/jobs/" + std::to_string(ref->id) + "/cancel" +
                                                (ref->element ? "?element=1" : ""));
    if (!reply.ok() && (signal > 0 || reply.status().code() != ErrorCode::kFailedPrecondition)) {
      rc = SlurmError(ctx, "scancel",
                      "Kill job error on job id " + text + ": " + reply.status().message());
    }
  }
  return rc;
}

int RunSacct(const std::vector<std::string>& argv, CliContext& ctx) {
  static const std::vector<OptionDef> kDefs = {{"jobs", 'j', OptionDef::kRequired},
                                               {"format", 'o', OptionDef::kRequired},
                                               {"parsable2", 'P', OptionDef::kNone},
                                               {"parsable", 'p', OptionDef::kNone},
                                               {"allocations", 'X', OptionDef::kNone},
                                               {"noheader", 'n', OptionDef::kNone},
                                               {"user", 'u', OptionDef::kRequired},
                                               {"allusers", 'a', OptionDef::kNone},
                                               {"starttime", 'S', OptionDef::kRequired},
                                               {"endtime", 'E', OptionDef::kRequired},
                                               {"help", 0, OptionDef::kNone}};
  auto o = slurm::ParseOptions(argv, kDefs, false);
  if (!o.ok()) return SlurmError(ctx, "sacct", o.status().message());
  if (!o->unknown.empty()) return SlurmError(ctx, "sacct", "unrecognized option " + o->unknown[0]);
  if (o->Has("help")) {
    *ctx.out << "Usage: sacct [-j ID,...] [-o FIELD,...] [--parsable2] [-X] [-n] [-u USER]\n";
    return kExitOk;
  }
  slurm::SacctOptions so;
  if (o->Has("format")) so.fields = SplitComma(o->Get("format"));
  so.parsable2 = o->Has("parsable2");
  so.parsable = o->Has("parsable");
  so.header = !o->Has("noheader");
  so.allocations_only = o->Has("allocations");
  std::vector<Job> jobs;
  if (o->Has("jobs")) {
    // sacct names a job that does not exist by printing nothing for it.
    for (const std::string& id : SplitComma(o->Get("jobs"))) {
      auto j = JobsByIds(ctx, {id});
      if (!j.ok()) {
        if (j.status().code() == ErrorCode::kInvalidArgument) continue;
        return SlurmError(ctx, "sacct", j.status().message());
      }
      jobs.insert(jobs.end(), j->begin(), j->end());
    }
  } else {
    std::string user = o->Has("allusers") ? "" : o->Get("user");
    auto raw = FetchJobs(ctx, user.empty() ? "" : "&user=" + user, 0);
    if (!raw.ok()) return SlurmError(ctx, "sacct", raw.status().message());
    auto j = DecodeJobs(*raw);
    if (!j.ok()) return SlurmError(ctx, "sacct", j.status().message());
    jobs = std::move(*j);
  }
  auto out = slurm::RenderSacct(jobs, so, ctx.now());
  if (!out.ok()) return SlurmError(ctx, "sacct", out.status().message());
  *ctx.out << *out;
  return kExitOk;
}

int RunScontrol(const std::vector<std::string>& argv, CliContext& ctx) {
  std::vector<std::string> a = argv;
  if (a.empty() || a[0] == "-h" || a[0] == "--help") {
    *ctx.out << "Usage: scontrol show job ID | show hostnames [LIST] | hold|release|requeue "
                "ID[,ID...] | update JobId=ID [TimeLimit=T] [Priority=P] [Partition=Q]\n";
    return a.empty() ? kExitError : kExitOk;
  }
  if (a[0] == "show" && a.size() >= 2 && (a[1] == "hostnames" || a[1] == "hostname")) {
    std::string list = a.size() >= 3 ? a[2] : ctx.env("SLURM_JOB_NODELIST").value_or("");
    if (list.empty()) {
      return SlurmError(ctx, "scontrol",
                        "show hostnames: no list given and SLURM_JOB_NODELIST "
                        "is not set");
    }
    auto hosts = ExpandHostlist(list);
    if (!hosts.ok()) return SlurmError(ctx, "scontrol", hosts.status().message());
    for (const std::string& h : *hosts) *ctx.out << h << "\n";
    return kExitOk;
  }
  if (a[0] == "show" && a.size() >= 2 && (a[1] == "job" || a[1] == "jobs")) {
    if (a.size() < 3) return SlurmError(ctx, "scontrol", "show job: want a job ID");
    auto jobs = JobsByIds(ctx, {a[2]});
    if (!jobs.ok()) return SlurmError(ctx, "scontrol", jobs.status().message());
    bool first = true;
    for (const Job& j : *jobs) {
      *ctx.out << (first ? "" : "\n") << slurm::RenderScontrolJob(j, ctx.now());
      first = false;
    }
    return kExitOk;
  }
  if (a[0] == "hold" || a[0] == "release" || a[0] == "requeue") {
    if (a.size() < 2) return SlurmError(ctx, "scontrol", a[0] + ": want a job ID");
    std::vector<std::string> ids;
    for (size_t i = 1; i < a.size(); ++i) {
      for (const std::string& s : SplitComma(a[i])) ids.push_back(s);
    }
    // submitit requeues its own job from inside it: the batch step's credential may do that.
    auto own = ctx.env("SLURM_JOB_ID");
    auto array = ctx.env("SLURM_ARRAY_JOB_ID"), index = ctx.env("SLURM_ARRAY_TASK_ID");
    bool self = ids.size() == 1 && own &&
                (ids[0] == *own || (array && index && ids[0] == *array + "_" + *index));
    if (a[0] == "requeue" && self) UseStepCredential(ctx);
    ApiClient api(ctx);
    for (const std::string& id : ids) {
      auto ref = ResolveJobRef(api, id);
      if (!ref.ok()) return SlurmError(ctx, "scontrol", "Invalid job id specified: " + id);
      auto r = api.CallJson("POST", "/v1/jobs/" + std::to_string(ref->id) + "/" + a[0]);
      if (!r.ok())
        return SlurmError(ctx, "scontrol", a[0] + " " + id + ": " + r.status().message());
    }
    return kExitOk;
  }
  if (a[0] == "update") return RunScontrolUpdate({a.begin() + 1, a.end()}, ctx);
  if (a[0] == "requeuehold" || a[0] == "suspend" || a[0] == "resume") {
    return SlurmError(ctx, "scontrol",
                      a[0] + ": not supported by this Corral head (it has no API to " + a[0] +
                          " a job); see docs/slurm.md");
  }
  return SlurmError(
      ctx, "scontrol",
      "unsupported command \"" + a[0] +
          "\"; supported: show job ID, show hostnames [LIST], hold, release, requeue, update");
}

int RunSinfo(const std::vector<std::string>& argv, CliContext& ctx) {
  static const std::vector<OptionDef> kDefs = {
      {"Node", 'N', OptionDef::kNone},       {"long", 'l', OptionDef::kNone},
      {"noheader", 'h', OptionDef::kNone},   {"format", 'o', OptionDef::kRequired},
      {"Format", 'O', OptionDef::kRequired}, {"partition", 'p', OptionDef::kRequired},
      {"states", 't', OptionDef::kRequired}, {"summarize", 's', OptionDef::kNone},
      {"all", 'a', OptionDef::kNone},        {"help", 0, OptionDef::kNone}};
  auto o = slurm::ParseOptions(argv, kDefs, false);
  if (!o.ok()) return SlurmError(ctx, "sinfo", o.status().message());
  if (!o->unknown.empty()) return SlurmError(ctx, "sinfo", "unrecognized option " + o->unknown[0]);
  if (o->Has("help")) {
    *ctx.out << "Usage: sinfo [-N] [-l] [-s] [-h] [-o FORMAT] [-O FIELDS] [-p PARTS] "
                "[-t STATES]\n";
    return kExitOk;
  }
  if (o->Has("format") && o->Has("Format")) {
    return SlurmError(ctx, "sinfo", "options --format and --Format exclude each other");
  }
  ApiClient api(ctx);
  auto nodes = api.CallJson("GET", "/v1/nodes");
  if (!nodes.ok()) return SlurmError(ctx, "sinfo", nodes.status().message());
  auto queues = api.CallJson("GET", "/v1/queues");
  if (!queues.ok()) return SlurmError(ctx, "sinfo", queues.status().message());
  std::vector<std::string> partitions = {"default"};
  auto queue_views = QueuesFromAnswer(*queues);
  if (!queue_views.ok()) return SlurmError(ctx, "sinfo", queue_views.status().message());
  for (const QueueView& q : *queue_views) {
    if (q.config.name != "default") partitions.push_back(q.config.name);
  }
  auto node_views = NodesFromAnswer(*nodes);
  if (!node_views.ok()) return SlurmError(ctx, "sinfo", node_views.status().message());
  slurm::SinfoOptions so;
  so.format = o->Get("format");
  so.long_format = o->Get("Format");
  so.per_node = o->Has("Node");
  so.long_output = o->Has("long");
  so.summarize = o->Has("summarize");
  so.header = !o->Has("noheader");
  so.only_partitions = SplitComma(o->Get("partition"));
  so.only_states = SplitComma(o->Get("states"));
  auto out = slurm::RenderSinfo(*node_views, partitions, so, ctx.now());
  if (!out.ok()) return SlurmError(ctx, "sinfo", out.status().message());
  *ctx.out << *out;
  return kExitOk;
}

}  // namespace corral::cli
