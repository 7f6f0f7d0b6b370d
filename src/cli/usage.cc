// `corral usage [--by user|queue] [--since 7d] [-o table|json|csv]`: GPU-hours, jobs, average
// wait and preemptions per user or queue over a period (GET /v1/usage), like Slurm's sreport.
#include "core/usage.h"

#include <cctype>
#include <cstdio>

#include "cli/commands.h"
#include "cli/table.h"
#include "core/spec.h"

namespace corral::cli {
namespace {

std::string Fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// A CSV field: quoted when it holds a comma, a quote or a line break (RFC 4180).
std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

std::string RenderUsageTable(const UsageReport& report) {
  std::string upper = UsageByName(report.by);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  Table t({upper, "GPU-HOURS", "JOBS", "STARTED", "AVG-WAIT", "PREEMPTIONS", "GPU-UTIL", "CPU-EFF",
           "MEM-EFF", "IDLE-GPU-JOBS"});
  auto pct = [](double v) { return v < 0 ? std::string("-") : Fixed(v, 0) + "%"; };
  auto add = [&](const UsageRow& r, const std::string& key) {
    t.AddRow({key, Fixed(r.gpu_seconds / 3600.0, 2), std::to_string(r.jobs),
              std::to_string(r.started),
              FormatAge(static_cast<DurationMs>(r.AverageWaitSeconds() * kSecond)),
              std::to_string(r.preemptions), pct(r.GpuUtil()), pct(r.CpuEfficiency()),
              pct(r.MemoryEfficiency()), std::to_string(r.idle_gpu_jobs)});
  };
  for (const UsageRow& r : report.rows) add(r, r.key);
  add(report.total, "TOTAL");
  return t.Render();
}

std::string RenderUsageCsv(const UsageReport& report) {
  std::string out = std::string(UsageByName(report.by)) +
                    ",gpu_hours,gpu_seconds,jobs,started,avg_wait_seconds,preemptions,"
                    "gpu_util,cpu_efficiency,memory_efficiency,idle_gpu_jobs\n";
  auto pct = [](double v) { return v < 0 ? std::string() : Fixed(v, 1); };
  auto add = [&](const UsageRow& r, const std::string& key) {
    out += CsvField(key) + "," + Fixed(r.gpu_seconds / 3600.0, 4) + "," + Fixed(r.gpu_seconds, 1) +
           "," + std::to_string(r.jobs) + "," + std::to_string(r.started) + "," +
           Fixed(r.AverageWaitSeconds(), 1) + "," + std::to_string(r.preemptions) + "," +
           pct(r.GpuUtil()) + "," + pct(r.CpuEfficiency()) + "," + pct(r.MemoryEfficiency()) + "," +
           std::to_string(r.idle_gpu_jobs) + "\n";
  };
  for (const UsageRow& r : report.rows) add(r, r.key);
  add(report.total, "total");
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
    return kExitOk;
  }
  auto typed = UsageReportFromJson(*report);
  if (!typed.ok()) {
    PrintError(ctx, "usage", "the head's answer: " + typed.status().message());
    return kExitError;
  }
  *ctx.out << (format == "csv" ? RenderUsageCsv(*typed) : RenderUsageTable(*typed));
  return kExitOk;
}

}  // namespace corral::cli
