// `corral usage [--by user|queue] [--since 7d] [-o table|json|csv]`: GPU-hours, jobs, average
// wait and preemptions per user or queue over a period (GET /v1/usage), like Slurm's sreport.
#include <cctype>
#include <cstdio>

#include "cli/commands.h"
#include "cli/table.h"
#include "core/spec.h"

namespace corral::cli {
namespace {

double Num(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

std::string Fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string Key(const Json& row) {
  auto it = row.find("key");
  return it != row.end() && it->is_string() ? it->get<std::string>() : "";
}

// A CSV field: quoted when it holds a comma, a quote or a line break (RFC 4180).
std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

std::string RenderUsageTable(const Json& report) {
  std::string by = report.value("by", "user");
  std::string upper = by;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  Table t({upper, "GPU-HOURS", "JOBS", "STARTED", "AVG-WAIT", "PREEMPTIONS"});
  auto add = [&](const Json& r, const std::string& key) {
    t.AddRow({key, Fixed(Num(r, "gpu_hours"), 2), Fixed(Num(r, "jobs"), 0),
              Fixed(Num(r, "started"), 0),
              FormatAge(static_cast<DurationMs>(Num(r, "avg_wait_seconds") * kSecond)),
              Fixed(Num(r, "preemptions"), 0)});
  };
  for (const Json& r : report.value("rows", Json::array())) add(r, Key(r));
  add(report.value("total", Json::object()), "TOTAL");
  return t.Render();
}

std::string RenderUsageCsv(const Json& report) {
  std::string out = report.value("by", "user") +
                    ",gpu_hours,gpu_seconds,jobs,started,avg_wait_seconds,preemptions\n";
  auto add = [&](const Json& r, const std::string& key) {
    out += CsvField(key) + "," + Fixed(Num(r, "gpu_hours"), 4) + "," +
           Fixed(Num(r, "gpu_seconds"), 1) + "," + Fixed(Num(r, "jobs"), 0) + "," +
           Fixed(Num(r, "started"), 0) + "," + Fixed(Num(r, "avg_wait_seconds"), 1) + "," +
           Fixed(Num(r, "preemptions"), 0) + "\n";
  };
  for (const Json& r : report.value("rows", Json::array())) add(r, Key(r));
  add(report.value("total", Json::object()), "total");
  return out;
}

int RunUsage(const std::vector<std::string>& argv, CliContext& ctx) {
  static const std::vector<FlagDef> kFlags = {
      {"by", 0, true}, {"since", 0, true}, {"output", 'o', true}};
  auto parsed = ParseArgs(argv, kFlags, false);
  if (!parsed.ok()) return UsageError(ctx, "usage", parsed.status().message());
  const ParsedArgs& args = *parsed;
  if (args.Has("help")) {
    *ctx.out << CommandUsage("usage") << "\n";
    return kExitOk;
  }
  if (!args.positional.empty()) {
    return UsageError(ctx, "usage", "unexpected argument '" + args.positional[0] + "'");
  }
  std::string by = args.Get("by", "user");
  if (by != "user" && by != "queue") {
    return UsageError(ctx, "usage", "flag --by: got \"" + by + "\", want user or queue");
  }
  std::string format = args.Get("output", "table");
  if (format != "table" && format != "json" && format != "csv") {
    return UsageError(ctx, "usage", "flag -o: got \"" + format + "\", want table, json or csv");
  }
  auto since = ParseDuration("--since", args.Get("since", "7d"));
  if (!since.ok()) return UsageError(ctx, "usage", since.status().message());
  if (*since < kSecond) {
    return UsageError(ctx, "usage",
                      "flag --since: got \"" + args.Get("since") + "\", want at least 1s");
  }
  ApiClient api(ctx);
  auto report =
      api.CallJson("GET", "/v1/usage?by=" + by + "&since=" + std::to_string(*since / kSecond));
  if (!report.ok()) {
    PrintError(ctx, "usage", report.status().message());
    return kExitError;
  }
  if (format == "json") {
    *ctx.out << report->dump(2) << "\n";
  } else if (format == "csv") {
    *ctx.out << RenderUsageCsv(*report);
  } else {
    *ctx.out << RenderUsageTable(*report);
  }
  return kExitOk;
}

}  // namespace corral::cli
