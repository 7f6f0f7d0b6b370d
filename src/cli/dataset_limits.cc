// corral datasets limits / source-limit: the sources' cluster-wide bandwidth budgets
// (docs/datasets.md, "Sharing a source's bandwidth"). Admins set one per source; every node's
// stage-ins from it together stay within it, queued at the head in the scheduler's order.
#include <cstdio>
#include <iterator>
#include <ostream>
#include <string>

#include "cli/commands.h"
#include "cli/table.h"
#include "core/byte_units.h"
#include "core/source_budget.h"

namespace corral::cli {
namespace {

std::string FormatBudgetRate(int64_t bytes_per_second) {
  return bytes_per_second <= 0 ? "-" : FormatBytes(bytes_per_second) + "/s";
}

int DatasetLimitsList(const ParsedArgs& args, CliContext& ctx) {
  const std::string o = args.Get("output", "table");
  if (o != "json" && o != "table") {
    return UsageError(ctx, "datasets", "flag -o: got \"" + o + "\", want json or table");
  }
  ApiClient api(ctx);
  auto reply = api.CallJson("GET", "/v1/dataset-limits");
  if (!reply.ok() || !reply->contains("limits")) {
    PrintError(ctx, "datasets",
               reply.ok() ? "the head's answer has no 'limits'" : reply.status().message());
    return kExitError;
  }
  if (o == "json") {
    *ctx.out << (*reply)["limits"].dump(2) << "\n";
    return kExitOk;
  }
  Table t({"SOURCE", "RATE", "FETCHES", "FETCHING", "WAITING"});
  for (const Json& x : (*reply)["limits"]) {
    auto b = SourceBudgetFromJson(x);
    if (!b.ok()) {
      PrintError(ctx, "datasets", "the head's answer: " + b.status().message());
      return kExitError;
    }
    t.AddRow({b->source, FormatBudgetRate(b->rate), std::to_string(b->fetches),
              std::to_string(b->fetching), std::to_string(b->waiting)});
  }
  *ctx.out << t.Render();
  return kExitOk;
}

int DatasetSourceLimitSet(const ParsedArgs& args, CliContext& ctx) {
  if (args.positional.size() != 2) {
    return UsageError(ctx, "datasets", "source-limit wants one SOURCE (a directory or a URL)");
  }
  if (!args.Has("rate") && !args.Has("fetches")) {
    return UsageError(ctx, "datasets", "source-limit needs --rate RATE and/or --fetches N");
  }
  auto rate = ParseByteRate("flag '--rate'", args.Get("rate", "0"));
  if (!rate.ok()) return UsageError(ctx, "datasets", rate.status().message());
  const std::string fetches_text = args.Get("fetches", "0");
  if (fetches_text.empty() || fetches_text.size() > 9 ||
      fetches_text.find_first_not_of("0123456789") != std::string::npos) {
    return UsageError(ctx, "datasets",
                      "flag '--fetches': got \"" + fetches_text + "\", want a count such as 4");
  }
  // --rate 0 alone removes the budget.
  const int32_t fetches = args.Has("rate") && *rate == 0 ? 0 : std::stoi(fetches_text);
  Json body{{"source", args.positional[1]}, {"rate", *rate}, {"fetches", fetches}};
  ApiClient api(ctx);
  auto reply = api.CallJson("PUT", "/v1/dataset-limits", body.dump());
  if (!reply.ok() || !reply->contains("limit")) {
    PrintError(ctx, "datasets",
               "source-limit " + args.positional[1] + ": " +
                   (reply.ok() ? "the head's answer has no 'limit'" : reply.status().message()));
    return kExitError;
  }
  auto b = SourceBudgetFromJson((*reply)["limit"]);
  if (!b.ok()) {
    PrintError(ctx, "datasets", "the head's answer: " + b.status().message());
    return kExitError;
  }
  if (b->rate == 0 && b->fetches == 0) {
    *ctx.out << "Source " << b->source << ": no budget\n";
  } else {
    *ctx.out << "Source " << b->source << ": " << FormatBudgetRate(b->rate) << " in all, "
             << b->fetches << " node(s) fetching at once\n";
  }
  return kExitOk;
}

}  // namespace

int RunDatasetLimits(const ParsedArgs& args, CliContext& ctx) {
  if (args.positional[0] == "limits") return DatasetLimitsList(args, ctx);
  return DatasetSourceLimitSet(args, ctx);
}

}  // namespace corral::cli
