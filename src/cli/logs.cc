// corral logs ID [-f] [--stderr] [--replica R] [--task T]: one task's output, or every task's
// interleaved line by line with a "[rR.tT] " prefix when the run has more than one.
#include <algorithm>

#include "cli/commands.h"
#include "core/codec.h"

namespace corral::cli {
namespace {

// How many consecutive "unavailable" answers `logs -f` rides out (about that many seconds).
constexpr int kFollowRetries = 30;

struct LogStream {
  int64_t replica = 0;
  int64_t task = 0;
  int64_t offset = 0;
  std::string prefix;   // "" when the run has one task in all
  std::string partial;  // an unfinished last line, held back until its end arrives
};

// The streams of the job's latest run that has a placement; none while it has none.
Result<std::vector<LogStream>> AllStreams(ApiClient& api, JobId id) {
  auto reply = api.CallJson("GET", "/v1/jobs/" + std::to_string(id));
  if (!reply.ok()) return reply.status();
  auto it = reply->find("job");
  if (it == reply->end()) return Internal("the head's answer has no 'job'");
  auto job = JobFromJson(*it);
  if (!job.ok()) return job.status();
  std::vector<LogStream> out;
  for (auto run = job->runs.rbegin(); run != job->runs.rend() && out.empty(); ++run) {
    for (size_t r = 0; r < run->placement.size(); ++r) {
      for (int32_t t = 0; t < std::max<int32_t>(1, run->placement[r].tasks); ++t) {
        out.push_back({static_cast<int64_t>(r), t, 0,
                       "[r" + std::to_string(r) + ".t" + std::to_string(t) + "] ", ""});
      }
    }
  }
  if (out.size() == 1) out[0].prefix.clear();
  return out;
}

// Appends what arrived to the stream's output, prefixing whole lines.
void Emit(CliContext& ctx, LogStream& s, const std::string& data, bool flush_partial) {
  if (s.prefix.empty()) {
    *ctx.out << data;
    return;
  }
  s.partial += data;
  size_t start = 0;
  for (size_t nl; (nl = s.partial.find('\n', start)) != std::string::npos; start = nl + 1) {
    *ctx.out << s.prefix << std::string_view(s.partial).substr(start, nl + 1 - start);
  }
  s.partial.erase(0, start);
  if (flush_partial && !s.partial.empty()) {
    *ctx.out << s.prefix << s.partial << "\n";
    s.partial.clear();
  }
}

std::optional<int64_t> SmallInt(const std::string& text, int64_t max) {
  if (text.empty() || text.size() > 6 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  int64_t v = std::stoll(text);
  return v <= max ? std::optional<int64_t>(v) : std::nullopt;
}

}  // namespace

namespace {

// Reads (and with --follow, follows) a job's logs: each stream from its offset, retrying
// transient errors (a node or the head restarting) a few times in a row.
class LogReader {
 public:
  LogReader(CliContext& ctx, JobId id, std::string stream, bool follow)
      : ctx_(ctx), api_(ctx), id_(id), stream_(std::move(stream)), follow_(follow) {}

  int Run(const LogStream& one, bool picked) {
    Status st = ChooseStreams(one, picked);
    if (!st.ok()) return Fail(st);
    while (true) {
      bool over = false;
      for (LogStream& s : streams_) {
        if (Status read = ReadStream(s, &over); !read.ok()) return Fail(read);
      }
      ctx_.out->flush();
      if (!follow_ || over) break;
      if (!picked && streams_.size() == 1 && streams_[0].prefix.empty()) {
        // The job may have been pending: once it runs, it may have several tasks.
        auto all = AllStreams(api_, id_);
        if (all.ok() && all->size() > 1) streams_ = std::move(*all);
      }
      ctx_.sleep(ctx_.poll_interval);
    }
    for (LogStream& s : streams_) Emit(ctx_, s, "", true);
    ctx_.out->flush();
    return kExitOk;
  }

 private:
  // Whether `st` may pass: following, and the head or a node is restarting.
  bool Transient(const Status& st) {
    if (follow_ && st.code() == ErrorCode::kUnavailable && ++failures_ <= kFollowRetries) {
      ctx_.sleep(ctx_.poll_interval);
      return true;
    }
    return false;
  }

  int Fail(const Status& st) {
    ctx_.out->flush();
    PrintError(ctx_, "logs", "job " + std::to_string(id_) + ": " + st.message());
    return kExitError;
  }

  // The stream picked (--replica, --task), else every stream of the job's run; a job with no
  // run yet has one, whose answer says its state and no output.
  Status ChooseStreams(const LogStream& one, bool picked) {
    if (picked) {
      streams_ = {one};
      return Status::Ok();
    }
    for (;;) {
      auto all = AllStreams(api_, id_);
      if (all.ok()) {
        streams_ = all->empty() ? std::vector<LogStream>{one} : std::move(*all);
        return Status::Ok();
      }
      if (!Transient(all.status())) return all.status();
    }
  }

  // Prints what stream s has past its offset, up to its end now; `over` once the job's state,
  // as the answer says it, is terminal.
  Status ReadStream(LogStream& s, bool* over) {
    for (;;) {
      auto reply = api_.Call("GET", "/v1/jobs/" + std::to_string(id_) + "/logs?stream=" + stream_ +
                                        "&replica=" + std::to_string(s.replica) +
                                        "&task=" + std::to_string(s.task) +
                                        "&max=65536&offset=" + std::to_string(s.offset));
      if (!reply.ok()) {
        if (Transient(reply.status())) continue;
        return reply.status();
      }
      failures_ = 0;
      int64_t next = s.offset + static_cast<int64_t>(reply->body.size());
      if (std::string h = reply->Header("x-corral-next-offset"); !h.empty()) {
        try {
          next = std::stoll(h);
        } catch (...) {
        }
      }
      if (!reply->body.empty()) Emit(ctx_, s, reply->body, false);
      JobState st;
      *over = ParseJobState(reply->Header("x-corral-job-state"), &st) && IsTerminal(st);
      if (next <= s.offset) return Status::Ok();
      s.offset = next;  // there may be more right away
    }
  }

  CliContext& ctx_;
  ApiClient api_;
  const JobId id_;
  const std::string stream_;
  const bool follow_;
  std::vector<LogStream> streams_;
  int failures_ = 0;  // consecutive transient errors while following
};

}  // namespace

int RunLogs(const std::vector<std::string>& argv, CliContext& ctx) {
  static const std::vector<FlagDef> kFlags = {
      {"follow", 'f', false}, {"stderr", 0, false}, {"replica", 'r', true}, {"task", 't', true}};
  auto parsed = ParseArgs(argv, kFlags, false);
  if (!parsed.ok()) return UsageError(ctx, "logs", parsed.status().message());
  const ParsedArgs& args = *parsed;
  if (args.Has("help")) {
    *ctx.out << CommandUsage("logs") << "\n";
    return kExitOk;
  }
  if (args.positional.size() != 1) return UsageError(ctx, "logs", "want exactly one job ID");
  auto id = ParseJobId(args.positional[0]);
  if (!id) return UsageError(ctx, "logs", "not a job ID: '" + args.positional[0] + "'");
  LogStream one;
  for (const auto& [flag, max, field] :
       {std::tuple{"replica", 4095, &one.replica}, std::tuple{"task", 1023, &one.task}}) {
    if (!args.Has(flag)) continue;
    auto n = SmallInt(args.Get(flag), max);
    if (!n) {
      return UsageError(ctx, "logs",
                        std::string("flag --") + flag + ": got \"" + args.Get(flag) +
                            "\", want 0 to " + std::to_string(max));
    }
    *field = *n;
  }
  LogReader reader(ctx, *id, args.Has("stderr") ? "stderr" : "stdout", args.Has("follow"));
  return reader.Run(one, args.Has("replica") || args.Has("task"));
}

}  // namespace corral::cli
