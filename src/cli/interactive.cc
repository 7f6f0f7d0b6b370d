// corral exec and corral run: commands inside a job's allocation (docs/interactive.md).
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <ostream>

#include "cli/commands.h"
#include "cli/exec_client.h"
#include "core/spec.h"

namespace corral::cli {
namespace {

// How often a waiting session asks after its allocation, at most: it asks at once, then again
// as soon as the event stream reports a change (the head holds that call until one comes, so
// an idle cluster's start is seen within its commit), and at least this often to keep the
// session alive. Without the stream (an error), at doubling intervals from the first.
constexpr DurationMs kFirstPendingPollMs = 10;
constexpr DurationMs kPendingPollMs = 500;

// Set by SIGINT, SIGTERM and SIGHUP while `corral run` waits for its allocation: the session is
// then cancelled rather than left to the inactive limit.
std::atomic<int> g_interrupted{0};
extern "C" void OnInterrupt(int sig) { g_interrupted = sig; }

class InterruptWatch {
 public:
  InterruptWatch() {
    g_interrupted = 0;
    for (int s : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction sa {};
      sa.sa_handler = OnInterrupt;
      sigemptyset(&sa.sa_mask);
      struct sigaction old {};
      if (sigaction(s, &sa, &old) == 0) saved_.emplace_back(s, old);
    }
  }
  ~InterruptWatch() {
    for (auto& [s, old] : saved_) (void)sigaction(s, &old, nullptr);
  }
  InterruptWatch(const InterruptWatch&) = delete;
  InterruptWatch& operator=(const InterruptWatch&) = delete;

 private:
  std::vector<std::pair<int, struct sigaction>> saved_;
};

Result<std::map<std::string, std::string>> EnvFlags(const ParsedArgs& args) {
  std::map<std::string, std::string> env;
  for (const std::string& kv : args.All("env")) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgument("flag --env: got \"" + kv + "\", want KEY=VALUE");
    }
    env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

}  // namespace

int RunExec(const std::vector<std::string>& argv, CliContext& ctx) {
  static const std::vector<FlagDef> kFlags = {
      {"replica", 'r', true}, {"pty", 't', false}, {"env", 'e', true}};
  auto parsed = ParseArgs(argv, kFlags, /*stop_at_positional=*/false);
  if (!parsed.ok()) return UsageError(ctx, "exec", parsed.status().message());
  const ParsedArgs& args = *parsed;
  if (args.Has("help")) {
    *ctx.out << CommandUsage("exec") << "\n";
    return kExitOk;
  }
  std::vector<std::string> positional = args.positional;
  if (positional.empty()) return UsageError(ctx, "exec", "no job given");
  auto id = ParseJobId(positional[0]);
  if (!id) return UsageError(ctx, "exec", "job: got \"" + positional[0] + "\", want a job id");
  ExecOptions opts;
  opts.command.assign(positional.begin() + 1, positional.end());
  opts.command.insert(opts.command.end(), args.rest.begin(), args.rest.end());
  if (opts.command.empty()) {
    return UsageError(ctx, "exec", "no command given: `corral exec ID -- CMD [ARGS...]`");
  }
  if (args.Has("replica")) {
    auto r = ParseJobId(args.Get("replica"));
    if (args.Get("replica") == "0") {
      opts.replica = 0;
    } else if (!r || *r > 4095) {
      return UsageError(ctx, "exec",
                        "flag --replica: got \"" + args.Get("replica") + "\", want 0..4095");
    } else {
      opts.replica = static_cast<int32_t>(*r);
    }
  }
  opts.pty = args.Has("pty");
  auto env = EnvFlags(args);
  if (!env.ok()) return UsageError(ctx, "exec", env.status().message());
  opts.env = *env;
  return RunInJob(ctx, *id, opts);
}

namespace {

// The spec of an interactive session from submit's flags: the allocation's own process only
// holds it (the command runs beside it, through exec).
Result<Json> SessionSpec(const ParsedArgs& given, const std::string& name, CliContext& ctx) {
  if (given.Has("array")) return InvalidArgument("flag --array: an interactive session is one job");
  ParsedArgs args = given;
  args.rest = {"sleep", "infinity"};
  auto spec = BuildSubmitSpec(args, ctx.cwd, ctx.env);
  if (!spec.ok()) return spec.status();
  (*spec)["name"] = spec->value("name", given.rest.empty() ? name : given.rest[0]);
  return MakeSessionSpec(*spec);
}

}  // namespace

Json MakeSessionSpec(Json spec) {
  spec["command"] = {"sleep", "infinity"};
  spec["kind"] = "interactive";
  spec.erase("batch");
  spec.erase("array");
  return spec;
}

int RunInteractiveSession(const Json& spec, const std::vector<std::string>& command, bool pty,
                          CliContext& ctx, const std::string& name, const std::string& user) {
  auto valid = ParseJobSpec(spec);
  if (!valid.ok()) {
    PrintError(ctx, name, valid.status().message());
    return kExitUsage;
  }
  auto id = StartSession(spec, ctx, name, user);
  if (!id.ok()) return g_interrupted != 0 ? 128 + g_interrupted.load() : kExitError;
  ApiClient api(ctx);
  ExecOptions opts;
  opts.command = command;
  opts.pty = pty;
  opts.touch_job = true;
  opts.command_name = name;
  int rc = RunInJob(ctx, *id, opts);
  (void)api.Call("POST", "/v1/jobs/" + std::to_string(*id) + "/cancel", "");  // its allocation goes
  return rc;
}

std::string EndReason(const Job& job) {
  if (!job.runs.empty() && !job.runs.back().reason.empty()) return job.runs.back().reason;
  return job.events.empty() ? "" : job.events.back().reason;
}

namespace {

// Submits a session's job: its id, or the error, said.
Result<JobId> SubmitSessionJob(const Json& spec, CliContext& ctx, ApiClient& api,
                               const std::string& name, const std::string& user) {
  Json body = {{"spec", spec}, {"request_id", NewRequestId()}};
  if (!user.empty()) body["user"] = user;
  auto reply = api.CallJson("POST", "/v1/jobs", body.dump());
  if (!reply.ok()) {
    // Resources that can never fit, a queue the user may not use: said at once.
    PrintError(ctx, name, reply.status().message());
    return reply.status();
  }
  const JobId id = reply->contains("job") ? (*reply)["job"].value("id", JobId{0}) : 0;
  if (id == 0) {
    PrintError(ctx, name, "the head's answer names no job: " + reply->dump());
    return Internal("no job id");
  }
  return id;
}

// Waits until a submitted session job runs, touching it (which keeps a waiting session alive
// and says how it stands) and saying each new pending reason; cancels it when interrupted or
// when it can never start.
class SessionStartWait {
 public:
  SessionStartWait(CliContext& ctx, ApiClient& api, const std::string& name, JobId id)
      : watch_(),
        ctx_(ctx),
        api_(api),
        name_(name),
        id_(id),
        path_("/v1/jobs/" + std::to_string(id)) {
    // The revision before the first touch: a change after it wakes the first wait at once.
    auto now_page = ReadEvents(api_, INT64_MAX, 1, 0);
    streaming_ = now_page.ok();  // false: poll instead
    since_ = streaming_ ? now_page->revision : 0;
  }

  Status Wait() {
    for (;;) {
      if (g_interrupted != 0) {
        Cancel();
        *ctx_.err << "corral " << name_ << ": interrupted; session job " << id_ << " cancelled\n";
        return FailedPrecondition("interrupted");
      }
      auto t = api_.CallJson("POST", path_ + "/touch", "");
      if (!t.ok() && t.status().code() == ErrorCode::kUnavailable) {
        ctx_.sleep(kPendingPollMs);
        continue;
      }
      if (!t.ok()) {
        PrintError(ctx_, name_, "job " + std::to_string(id_) + ": " + t.status().message());
        Cancel();
        return t.status();
      }
      auto job = JobFromJson(t->value("job", Json::object()));
      if (!job.ok()) {
        PrintError(ctx_, name_, "the head's answer: " + job.status().message());
        Cancel();
        return job.status();
      }
      if (job->state == JobState::kRunning) return Status::Ok();
      CORRAL_RETURN_IF_ERROR(Judge(*job));
      WaitForChange();
    }
  }

 private:
  void Cancel() { (void)api_.Call("POST", path_ + "/cancel", ""); }

  // A job not running yet: an error if it ended or can never start, else how it stands, said
  // when that changed.
  Status Judge(const Job& job) {
    const std::string state = JobStateName(job.state);
    if (IsTerminal(job.state)) {
      PrintError(ctx_, name_,
                 "session job " + std::to_string(id_) + " " + state + ": " + EndReason(job));
      return FailedPrecondition("ended");
    }
    const std::string& reason = job.pending_reason;
    if (job.pending_code == PendingCode::kNoFit ||
        job.pending_code == PendingCode::kDependencyNever) {
      Cancel();
      PrintError(ctx_, name_, "session job " + std::to_string(id_) + " can never start: " + reason);
      return FailedPrecondition("never");
    }
    std::string now = state == "pending" ? reason : state;
    if (!now.empty() && now != said_) {
      *ctx_.err << "corral " << name_ << ": job " << id_ << " "
                << (state == "pending" ? "pending: " : "") << now << "\n";
      ctx_.err->flush();
      said_ = now;
    }
    return Status::Ok();
  }

  // Until a change to this job (or the keep-alive interval): other jobs' changes do not make
  // it ask again, however busy the cluster. Without the event stream: a poll, backing off.
  void WaitForChange() {
    const TimeMs touched = ctx_.now();
    const std::string key = std::to_string(id_);
    bool ours = false;
    while (streaming_ && !ours && g_interrupted == 0) {
      const DurationMs left = kPendingPollMs - (ctx_.now() - touched);
      if (left <= 0) break;
      auto page = ReadEvents(api_, since_, 100, left);
      if (!page.ok()) {
        streaming_ = false;  // the stream failed: poll from here on
        break;
      }
      // A page of the first 100 changes ends before the head's revision: the rest is next.
      since_ = page->events.empty() ? page->revision : EventRevision(page->events.back());
      ours = page->reset;
      for (const Json& e : page->events) {
        ours = ours || (EventKind(e) == "job" && EventKey(e) == key);
      }
    }
    if (streaming_) return;
    ctx_.sleep(nap_);
    nap_ = std::min(nap_ * 2, kPendingPollMs);
  }

  InterruptWatch watch_;  // first: from before the first read of the event stream
  CliContext& ctx_;
  ApiClient& api_;
  const std::string& name_;
  const JobId id_;
  const std::string path_;
  bool streaming_ = false;
  uint64_t since_ = 0;
  std::string said_;
  DurationMs nap_ = kFirstPendingPollMs;
};

}  // namespace

Result<JobId> StartSession(const Json& spec, CliContext& ctx, const std::string& name,
                           const std::string& user) {
  ApiClient api(ctx);
  auto id = SubmitSessionJob(spec, ctx, api, name, user);
  if (!id.ok()) return id.status();
  SessionStartWait wait(ctx, api, name, *id);
  CORRAL_RETURN_IF_ERROR(wait.Wait());
  return *id;
}

int RunRun(const std::vector<std::string>& argv, CliContext& ctx) {
  std::vector<FlagDef> flags = SubmitFlags();
  flags.push_back({"pty", 't', false});
  auto parsed = ParseArgs(argv, flags, /*stop_at_positional=*/true);
  if (!parsed.ok()) return UsageError(ctx, "run", parsed.status().message());
  const ParsedArgs& args = *parsed;
  if (args.Has("help")) {
    *ctx.out << CommandUsage("run") << "\n";
    return kExitOk;
  }
  if (args.rest.empty()) {
    return UsageError(ctx, "run", "no command given: `corral run [--gpus N] [--pty] -- CMD`");
  }
  for (const char* f : {"file", "dry-run", "parsable", "dependency"}) {
    if (args.Has(f)) return UsageError(ctx, "run", std::string("flag --") + f + ": not for run");
  }
  auto spec = SessionSpec(args, "run", ctx);
  if (!spec.ok()) return UsageError(ctx, "run", spec.status().message());
  return RunInteractiveSession(*spec, args.rest, args.Has("pty"), ctx, "run", args.Get("user"));
}

}  // namespace corral::cli
