// corral notebook: a Jupyter server on an allocation, reached through the head
// (docs/interactive.md).
#include <algorithm>
#include <ostream>

#include "cli/commands.h"
#include "cli/config.h"
#include "core/spec.h"

namespace corral::cli {
namespace {

constexpr DurationMs kReadyPollMs = 300;

bool HasEvent(const Job& job, const std::string& what) {
  return std::any_of(job.events.begin(), job.events.end(),
                     [&](const JobEvent& e) { return e.what == what; });
}

// Prints the URL that opens job `id`'s notebook: on the head, with a ticket good for one use
// (POST /v1/jobs/ID/notebook-ticket), never the user's token, which a URL would leak to shell
// and browser histories.
int PrintNotebookUrl(CliContext& ctx, ApiClient& api, const std::string& addr, JobId id) {
  auto ticket = api.CallJson("POST", "/v1/jobs/" + std::to_string(id) + "/notebook-ticket");
  if (!ticket.ok()) {
    PrintError(ctx, "notebook", "job " + std::to_string(id) + ": " + ticket.status().message());
    return kExitError;
  }
  if (!ticket->contains("ticket") || !(*ticket)["ticket"].is_string()) {
    PrintError(ctx, "notebook", "the head's answer has no ticket: " + ticket->dump());
    return kExitError;
  }
  std::string base = addr;
  while (!base.empty() && base.back() == '/') base.pop_back();
  *ctx.out << base << "/s/" << id << "/tree?ticket=" << (*ticket)["ticket"].get<std::string>()
           << "\n";
  return kExitOk;
}

const std::vector<FlagDef>& NotebookFlags() {
  static const std::vector<FlagDef> flags = [] {
    std::vector<FlagDef> f = SubmitFlags();
    f.push_back({"url", 0, true});  // a new URL for a running notebook
    return f;
  }();
  return flags;
}

}  // namespace

int RunNotebook(const std::vector<std::string>& argv, CliContext& ctx) {
  auto parsed = ParseArgs(argv, NotebookFlags(), /*stop_at_positional=*/true);
  if (!parsed.ok()) return UsageError(ctx, "notebook", parsed.status().message());
  ParsedArgs args = *parsed;
  if (args.Has("help")) {
    *ctx.out << CommandUsage("notebook") << "\n";
    return kExitOk;
  }
  for (const char* f : {"file", "dry-run", "parsable", "dependency", "array"}) {
    if (args.Has(f)) {
      return UsageError(ctx, "notebook", std::string("flag --") + f + ": not for notebook");
    }
  }
  if (args.Has("url")) {  // a URL (a new ticket) for a notebook already running
    auto url_id = ParseJobId(args.Get("url"));
    if (!url_id)
      return UsageError(ctx, "notebook", "--url: not a job ID: '" + args.Get("url") + "'");
    auto config = LoadClientConfig(ctx.env);
    if (!config.ok()) {
      PrintError(ctx, "notebook", config.status().message());
      return kExitError;
    }
    ApiClient api(ctx);
    return PrintNotebookUrl(ctx, api, config->addr, *url_id);
  }
  // The server's own command; the agent adds where it listens and its token.
  if (args.rest.empty()) args.rest = {"jupyter-notebook"};
  auto spec = BuildSubmitSpec(args, ctx.cwd, ctx.env);
  if (!spec.ok()) return UsageError(ctx, "notebook", spec.status().message());
  if (!spec->contains("name")) (*spec)["name"] = "notebook";
  (*spec)["kind"] = "interactive";
  (*spec)["notebook"] = true;
  spec->erase("batch");
  if (auto valid = ParseJobSpec(*spec); !valid.ok()) {
    PrintError(ctx, "notebook", valid.status().message());
    return kExitUsage;
  }
  auto config = LoadClientConfig(ctx.env);
  if (!config.ok()) {
    PrintError(ctx, "notebook", config.status().message());
    return kExitError;
  }
  auto id = StartSession(*spec, ctx, "notebook", args.Get("user"));
  if (!id.ok()) return kExitError;
  ApiClient api(ctx);
  const std::string path = "/v1/jobs/" + std::to_string(*id);
  for (;;) {
    auto job = api.CallJson("GET", path, "");
    if (!job.ok()) {
      if (job.status().code() == ErrorCode::kUnavailable) {
        ctx.sleep(kReadyPollMs);
        continue;
      }
      PrintError(ctx, "notebook", "job " + std::to_string(*id) + ": " + job.status().message());
      return kExitError;
    }
    auto j = JobFromJson(job->contains("job") ? (*job)["job"] : *job);
    if (!j.ok()) {
      PrintError(ctx, "notebook", "the head's answer: " + j.status().message());
      return kExitError;
    }
    if (HasEvent(*j, "notebook ready")) break;
    if (IsTerminal(j->state)) {
      PrintError(ctx, "notebook",
                 "session job " + std::to_string(*id) + " " + JobStateName(j->state) + ": " +
                     EndReason(*j));
      return kExitError;
    }
    ctx.sleep(kReadyPollMs);
  }
  *ctx.err << "corral notebook: job " << *id << " is ready; its URL opens once (`corral notebook "
           << "--url " << *id << "` gives another); `corral cancel " << *id << "` ends it\n";
  return PrintNotebookUrl(ctx, api, config->addr, *id);
}

}  // namespace corral::cli
