// `corral events [-f] [--since REV]` prints the head's changes; `corral jobs --watch` redraws
// its table when they come. Both read GET /v1/events, held by the head until something
// changes, so nothing polls on a timer.
#include "cli/commands.h"
#include "cli/table.h"

namespace corral::cli {
namespace {

constexpr int64_t kHoldMs = 25000;

std::string Summary(const Json& e) {
  const std::string type = EventType(e);
  auto s = [&](const char* k) {
    return e.contains(k) && e[k].is_string() ? e[k].get<std::string>() : "";
  };
  if (type == "job_submitted" || type == "array_submitted") {
    const Json& job = e["job"];
    std::string by = "by " + job.value("owner", "") + " to " + job["spec"].value("queue", "");
    if (type == "job_submitted") return by;
    return std::to_string(e.value("indices", Json::array()).size()) + " element(s), " + by;
  }
  if (type == "run_placed") {
    std::string out;
    for (const Json& p : e.value("placement", Json::array())) {
      out += (out.empty() ? "" : " ") + p.value("node", "") + p["gpus"].dump();
    }
    return "run " + std::to_string(e.value("attempt", 0)) + " on " + out;
  }
  if (type == "run_ended") return s("run_state") + " -> " + s("job_state") + " " + s("reason");
  if (type == "replica_exited") {
    return "replica " + std::to_string(e.value("replica", 0)) + " exit " +
           std::to_string(e.value("exit_code", 0));
  }
  if (type == "node_removed") return "removed";
  if (type == "node_liveness_set") return s("liveness") + " " + s("reason");
  if (type == "node_drain_set") {
    return (s("drain") == "none" ? std::string("undrained") : s("drain")) + " " + s("reason");
  }
  if (type == "node_state_set") return s("state") + " " + s("reason");  // logged by older heads
  if (type == "node_health_set")
    return s("reason").empty() ? "healthy" : "unhealthy " + s("reason");
  if (type == "gpu_drain_set") {
    const Json d = e.value("drain", Json::object());
    const std::string gpu = "GPU " + std::to_string(e.value("gpu", 0));
    return d.value("source", "none") == "none"
               ? gpu + " returned: " + d.value("reason", "")
               : gpu + " drained (" + d.value("source", "") + "): " + d.value("reason", "");
  }
  if (type == "queue_set") return e["queue"].dump();
  if (type == "jobs_retired") {
    const Json& jobs = e.value("jobs", Json::array());
    std::string out = std::to_string(jobs.size()) + " job(s) out of memory:";
    for (size_t i = 0; i < jobs.size() && i < 10; ++i) out += " " + jobs[i].dump();
    return out + (jobs.size() > 10 ? " ..." : "");
  }
  return s("reason");
}

}  // namespace

int RunEvents(const std::vector<std::string>& argv, CliContext& ctx) {
  static const std::vector<FlagDef> kFlags = {
      {"follow", 'f', false}, {"since", 0, true}, {"output", 'o', true}, {"updates", 0, true}};
  auto parsed = ParseArgs(argv, kFlags, false);
  if (!parsed.ok()) return UsageError(ctx, "events", parsed.status().message());
  const ParsedArgs& args = *parsed;
  if (args.Has("help")) {
    *ctx.out << CommandUsage("events") << "\n";
    return kExitOk;
  }
  std::string out_format = args.Get("output", "table");
  if (out_format != "table" && out_format != "json") {
    return UsageError(ctx, "events", "flag -o: got \"" + out_format + "\", want json");
  }
  uint64_t since = 0;
  if (args.Has("since")) {
    auto n = ParseJobId(args.Get("since"));
    if (!n && args.Get("since") != "0") {
      return UsageError(ctx, "events",
                        "flag --since: got \"" + args.Get("since") + "\", want a revision");
    }
    since = n.value_or(0);
  }
  int64_t batches =
      args.Has("updates") ? static_cast<int64_t>(ParseJobId(args.Get("updates")).value_or(1)) : -1;
  bool follow = args.Has("follow");
  ApiClient api(ctx);
  for (int64_t n = 0; batches < 0 || n < batches; ++n) {
    auto page = ReadEvents(api, since, 1000, follow ? kHoldMs : 0);
    if (!page.ok()) {
      PrintError(ctx, "events", page.status().message());
      return kExitError;
    }
    if (page->reset) {
      *ctx.err << "corral events: the head no longer keeps changes after " << since
               << "; continuing from revision " << page->revision << "\n";
      since = page->revision;
      continue;
    }
    for (const Json& e : page->events) {
      since = EventRevision(e);
      if (out_format == "json") {
        *ctx.out << e.dump() << "\n";
      } else {
        *ctx.out << since << "  " << FormatTimestamp(EventTime(e), false) << "  " << EventType(e)
                 << "  " << EventKind(e) << " " << EventKey(e) << "  " << Summary(e) << "\n";
      }
    }
    ctx.out->flush();
    if (!follow && page->events.empty()) break;
  }
  return kExitOk;
}

Result<EventPage> ReadEvents(ApiClient& api, uint64_t since, int32_t max, int64_t wait_ms) {
  auto r = api.CallJson("GET", "/v1/events?since=" + std::to_string(since) + "&max=" +
                                   std::to_string(max) + "&wait=" + std::to_string(wait_ms));
  if (!r.ok()) return r.status();
  auto page = EventPageFromJson(*r);
  if (!page.ok()) return InvalidArgument("the head's events answer: " + page.status().message());
  return page;
}

int WatchTable(CliContext& ctx, const std::string& command, int64_t updates,
               const std::function<int(std::string*)>& render) {
  ApiClient api(ctx);
  auto now = ReadEvents(api, INT64_MAX, 1, 0);
  if (!now.ok()) {
    PrintError(ctx, command, now.status().message());
    return kExitError;
  }
  uint64_t since = now->revision;
  for (int64_t drawn = 0; updates < 0 || drawn < updates; ++drawn) {
    std::string table;
    if (int rc = render(&table); rc != kExitOk) return rc;
    *ctx.out << "\x1b[H\x1b[2J" << table;  // home, clear: redraw in place
    ctx.out->flush();
    if (updates >= 0 && drawn + 1 >= updates) break;
    for (;;) {  // until something changed
      auto page = ReadEvents(api, since, 10000, kHoldMs);
      if (!page.ok()) {
        PrintError(ctx, command, page.status().message());
        return kExitError;
      }
      bool changed = page->reset || !page->events.empty();
      since = std::max(since, page->revision);
      if (changed) break;
    }
  }
  return kExitOk;
}

}  // namespace corral::cli
