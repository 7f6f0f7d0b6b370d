// corral datasets: register a directory or an archive on shared storage, or an archive at an
// http(s) URL, as a dataset (the manifest is made here, by reading every file: the user who adds
// it shows they can reach it, and the head never reads or downloads anything for a user), list
// datasets, show one, remove one (docs/datasets.md).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <ostream>

#include "cli/commands.h"
#include "cli/table.h"
#include "core/byte_units.h"
#include "core/dataset.h"
#include "core/dataset_files.h"
#include "core/dataset_source.h"
#include "core/source_rate.h"

namespace corral::cli {
namespace {

std::string DatasetNodesOrNone(const std::vector<std::string>& nodes) {
  return nodes.empty() ? "-" : Join(nodes, ",");
}

Result<DatasetView> DatasetViewIn(const Result<Json>& reply, const char* key) {
  if (!reply.ok()) return reply.status();
  auto it = reply->find(key);
  if (it == reply->end()) return InvalidArgument(std::string("no '") + key + "' in the answer");
  return DatasetViewFromJson(*it);
}

int DatasetsAdd(const ParsedArgs& args, CliContext& ctx) {
  if (args.positional.size() != 2) return UsageError(ctx, "datasets", "add wants one name");
  if (!args.Has("source")) return UsageError(ctx, "datasets", "add needs --source PATH|URL");
  std::string source = args.Get("source");
  if (SourceKindOf(source) != DatasetSourceKind::kUrl && source.find("://") == std::string::npos) {
    std::error_code ec;
    source = std::filesystem::absolute(source, ec).lexically_normal();
  }
  if (Status bad = CheckSourceText(source); !bad.ok()) {  // before any download
    PrintError(ctx, "datasets", "add " + args.positional[1] + ": " + bad.message());
    return kExitError;
  }
  const char* tmpdir = std::getenv("TMPDIR");
  auto manifest = ScanSource(source, tmpdir != nullptr && *tmpdir ? tmpdir : "/tmp");
  if (!manifest.ok()) {
    PrintError(ctx, "datasets", "add " + args.positional[1] + ": " + manifest.status().message());
    return kExitError;
  }
  Json body{{"name", args.positional[1]},
            {"source", source},
            {"digest", manifest->digest},
            {"files", manifest->files.size()},
            {"bytes", manifest->bytes}};
  if (args.Has("version")) body["version"] = args.Get("version");
  ApiClient api(ctx);
  auto v = DatasetViewIn(api.CallJson("POST", "/v1/datasets", body.dump()), "dataset");
  if (!v.ok()) {
    PrintError(ctx, "datasets", "add " + args.positional[1] + ": " + v.status().message());
    return kExitError;
  }
  *ctx.out << "Dataset " << v->dataset.name << "@" << v->dataset.version << ": " << v->dataset.files
           << " files, " << FormatBytes(v->dataset.bytes) << ", " << v->dataset.digest << "\n";
  return kExitOk;
}

int DatasetsShow(const ParsedArgs& args, CliContext& ctx) {
  if (args.positional.size() != 2) return UsageError(ctx, "datasets", "show wants one name");
  ApiClient api(ctx);
  auto reply = api.CallJson("GET", "/v1/datasets/" + args.positional[1]);
  auto v = DatasetViewIn(reply, "dataset");
  if (!v.ok()) {
    PrintError(ctx, "datasets", "show " + args.positional[1] + ": " + v.status().message());
    return kExitError;
  }
  if (args.Get("output", "text") == "json") {
    *ctx.out << (*reply)["dataset"].dump(2) << "\n";
    return kExitOk;
  }
  const Dataset& d = v->dataset;
  std::string users;
  for (uint64_t id : v->users) users += (users.empty() ? "" : ",") + std::to_string(id);
  *ctx.out << "Name:     " << d.name << "\nVersion:  " << d.version << "\nDigest:   " << d.digest
           << "\nSource:   " << d.source << "\nFiles:    " << d.files
           << "\nSize:     " << FormatBytes(d.bytes) << " (" << d.bytes << " bytes)"
           << "\nOwner:    " << d.owner << "\nAdded:    " << FormatTimestamp(d.added_at, true)
           << "\nState:    " << v->State() << "\nJobs:     " << (users.empty() ? "-" : users)
           << "\nNodes:    " << DatasetNodesOrNone(v->nodes) << "\n";
  return kExitOk;
}

int DatasetsRemove(const ParsedArgs& args, CliContext& ctx) {
  if (args.positional.size() != 2) return UsageError(ctx, "datasets", "rm wants one name");
  ApiClient api(ctx);
  auto v = DatasetViewIn(api.CallJson("DELETE", "/v1/datasets/" + args.positional[1]), "dataset");
  if (!v.ok()) {
    PrintError(ctx, "datasets", "rm " + args.positional[1] + ": " + v.status().message());
    return kExitError;
  }
  *ctx.out << "Dataset " << args.positional[1] << " removed\n";
  return kExitOk;
}

int DatasetsList(const ParsedArgs& args, CliContext& ctx) {
  const std::string o = args.Get("output", "table");
  if (o != "json" && o != "table") {
    return UsageError(ctx, "datasets", "flag -o: got \"" + o + "\", want json or table");
  }
  ApiClient api(ctx);
  auto reply = api.CallJson("GET", "/v1/datasets");
  if (!reply.ok() || !reply->contains("datasets")) {
    PrintError(ctx, "datasets",
               reply.ok() ? "the head's answer has no 'datasets'" : reply.status().message());
    return kExitError;
  }
  if (o == "json") {
    *ctx.out << (*reply)["datasets"].dump(2) << "\n";
    return kExitOk;
  }
  Table t({"NAME", "VERSION", "SIZE", "FILES", "STATE", "NODES", "SOURCE"});
  for (const Json& x : (*reply)["datasets"]) {
    auto v = DatasetViewFromJson(x);
    if (!v.ok()) {
      PrintError(ctx, "datasets", "the head's answer: " + v.status().message());
      return kExitError;
    }
    const Dataset& d = v->dataset;
    t.AddRow({d.name, d.version, FormatBytes(d.bytes), std::to_string(d.files), v->State(),
              DatasetNodesOrNone(v->nodes), d.source});
  }
  *ctx.out << t.Render();
  return kExitOk;
}

// Each source's measured stage-in rate, as the head answers GET /v1/datasets ("sources").
int DatasetsSources(const ParsedArgs& args, CliContext& ctx) {
  const std::string o = args.Get("output", "table");
  if (o != "json" && o != "table") {
    return UsageError(ctx, "datasets", "flag -o: got \"" + o + "\", want json or table");
  }
  ApiClient api(ctx);
  auto reply = api.CallJson("GET", "/v1/datasets");
  if (!reply.ok() || !reply->contains("sources")) {
    PrintError(ctx, "datasets",
               reply.ok() ? "the head's answer has no 'sources'" : reply.status().message());
    return kExitError;
  }
  if (o == "json") {
    *ctx.out << (*reply)["sources"].dump(2) << "\n";
    return kExitOk;
  }
  Table t({"SOURCE", "RATE", "MEASURED", "FROM"});
  for (const Json& x : (*reply)["sources"]) {
    auto r = DatasetSourceRateFromJson(x);
    if (!r.ok()) {
      PrintError(ctx, "datasets", "the head's answer: " + r.status().message());
      return kExitError;
    }
    t.AddRow({r->source, FormatBytes(r->bytes_per_second) + "/s",
              r->measured_at > 0 ? FormatUtc(r->measured_at) : "-",
              FormatBytes(r->bytes) + " in " + std::to_string(r->ms) + " ms"});
  }
  *ctx.out << t.Render();
  return kExitOk;
}

}  // namespace

int RunDatasets(const std::vector<std::string>& argv, CliContext& ctx) {
  static const std::vector<FlagDef> kFlags = {{"output", 'o', true},
                                              {"source", 0, true},
                                              {"version", 0, true},
                                              {"rate", 0, true},
                                              {"fetches", 0, true}};
  auto parsed = ParseArgs(argv, kFlags, false);
  if (!parsed.ok()) return UsageError(ctx, "datasets", parsed.status().message());
  const ParsedArgs& args = *parsed;
  if (args.Has("help")) {
    *ctx.out << CommandUsage("datasets") << "\n";
    return kExitOk;
  }
  const std::string sub = args.positional.empty() ? "list" : args.positional[0];
  if (sub == "add") return DatasetsAdd(args, ctx);
  if (sub == "show") return DatasetsShow(args, ctx);
  if (sub == "rm") return DatasetsRemove(args, ctx);
  if (sub == "list") return DatasetsList(args, ctx);
  if (sub == "sources") return DatasetsSources(args, ctx);
  if (sub == "limits" || sub == "source-limit") return RunDatasetLimits(args, ctx);
  return UsageError(
      ctx, "datasets",
      "unknown subcommand '" + sub + "' (add, show, rm, list, sources, limits, source-limit)");
}

}  // namespace corral::cli
