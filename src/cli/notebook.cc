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

}  // namespace

int RunNotebook(const std::vector<std::string>& argv, CliContext& ctx) {
  auto parsed = ParseArgs(argv, SubmitFlags(), /*stop_at_positional=*/true);
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
  std::string addr = config->addr;
  while (!addr.empty() && addr.back() == '/') addr.pop_back();
  *ctx.err << "corral notebook: job " << *id << " is ready; `corral cancel " << *id
           << "` ends it\n";
  *ctx.out << addr << "/s/" << *id << "/tree?token=" << config->token << "\n";
  return kExitOk;
}

}  // namespace corral::cli
