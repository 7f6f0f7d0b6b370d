// `corral whatif`: fetches the head's history (GET /v1/history, admins only) and replays it in
// this process. The replay runs here, not in the head: it is a whole simulation of the period
// (seconds to minutes of CPU for weeks of jobs), which on the head's state machine would hold
// up every command and agent sync, and the client has the simulator already.
#include "sim/whatif_command.h"

#include <charconv>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/commands.h"
#include "cli/table.h"
#include "core/spec.h"

namespace corral::sim {

namespace {

constexpr char kUsage[] =
    "usage: corral whatif [--since 7d] [--set-quota QUEUE=GPUS]... [--policy P] [--nodes N]\n"
    "                     [--running so-far|limit] [--history FILE] [-o table|json]";

int Usage(cli::CliContext& ctx, const std::string& message) {
  *ctx.err << "corral whatif: " << message << "\n" << kUsage << "\n";
  return cli::kExitUsage;
}

int Fail(cli::CliContext& ctx, const std::string& message) {
  *ctx.err << "corral whatif: " << message << "\n";
  return cli::kExitError;
}

// Seconds to the tenth under 100 s (short jobs' waits would all read "0s"), then as `corral`
// shows ages.
std::string Seconds(double s) {
  if (s < 100) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1fs", s);
    return buf;
  }
  return cli::FormatAge(static_cast<DurationMs>(s * 1000));
}

std::string Percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", share * 100);
  return buf;
}

std::string GroupTable(const std::string& title, const std::vector<GroupRow>& rows,
                       bool has_change) {
  std::vector<std::string> headers = {title, "JOBS", "WAIT rec", "WAIT replay"};
  if (has_change) headers.push_back("WAIT changed");
  for (const char* h : {"JCT rec", "JCT replay"}) headers.push_back(h);
  if (has_change) headers.push_back("JCT changed");
  for (const char* h : {"GPU rec", "GPU replay"}) headers.push_back(h);
  if (has_change) headers.push_back("GPU changed");
  cli::Table t(headers);
  for (const GroupRow& r : rows) {
    std::vector<std::string> cells = {
        r.name.empty() ? "-" : r.name, std::to_string(r.recorded.jobs),
        Seconds(r.recorded.avg_wait_s), Seconds(r.replayed.avg_wait_s)};
    if (has_change) cells.push_back(Seconds(r.changed.avg_wait_s));
    cells.push_back(Seconds(r.recorded.avg_jct_s));
    cells.push_back(Seconds(r.replayed.avg_jct_s));
    if (has_change) cells.push_back(Seconds(r.changed.avg_jct_s));
    cells.push_back(Percent(r.recorded.gpu_share));
    cells.push_back(Percent(r.replayed.gpu_share));
    if (has_change) cells.push_back(Percent(r.changed.gpu_share));
    t.AddRow(std::move(cells));
  }
  return t.Render();
}

Result<Json> ReadHistoryFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return InvalidArgument("flag --history: cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  Json j = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument("flag --history: " + path + " is not JSON");
  return j;
}

}  // namespace

std::string RenderWhatIf(const WhatIfReport& r) {
  char line[256];
  std::string out;
  std::snprintf(line, sizeof line,
                "%lld jobs replayed (%lld ended in the recording and are measured; %lld left out: "
                "cancelled before they ran)\n",
                static_cast<long long>(r.jobs), static_cast<long long>(r.measured_jobs),
                static_cast<long long>(r.left_out));
  out += line;
  std::snprintf(line, sizeof line,
                "start order, recorded vs replayed as recorded: Spearman %.3f over %lld jobs\n\n",
                r.spearman, static_cast<long long>(r.ranked_jobs));
  out += line;
  out += GroupTable("QUEUE", r.queues, r.has_change) + "\n";
  out += GroupTable("USER", r.users, r.has_change);
  return out;
}

int RunWhatIf(const std::vector<std::string>& argv, cli::CliContext& ctx) {
  static const std::vector<cli::FlagDef> kFlags = {
      {"since", 0, true},   {"set-quota", 0, true}, {"policy", 0, true},  {"nodes", 0, true},
      {"running", 0, true}, {"history", 0, true},   {"output", 'o', true}};
  auto parsed = cli::ParseArgs(argv, kFlags, false);
  if (!parsed.ok()) return Usage(ctx, parsed.status().message());
  const cli::ParsedArgs& args = *parsed;
  if (args.Has("help")) {
    *ctx.out << kUsage << "\n";
    return cli::kExitOk;
  }
  if (!args.positional.empty()) {
    return Usage(ctx, "unexpected argument '" + args.positional[0] + "'");
  }
  std::string format = args.Get("output", "table");
  if (format != "table" && format != "json") {
    return Usage(ctx, "flag -o: got \"" + format + "\", want table or json");
  }
  auto since = ParseDuration("--since", args.Get("since", "7d"));
  if (!since.ok()) return Usage(ctx, since.status().message());
  if (*since < kSecond) {
    return Usage(ctx, "flag --since: got \"" + args.Get("since") + "\", want at least 1s");
  }
  WhatIfChange change;
  for (const std::string& q : args.All("set-quota")) {
    if (Status st = ParseSetQuota(q, &change); !st.ok()) return Usage(ctx, st.message());
  }
  if (args.Has("policy")) {
    sched::OrderPolicy p;
    if (!sched::ParseOrderPolicy(args.Get("policy"), &p)) {
      return Usage(ctx, "flag --policy: got \"" + args.Get("policy") +
                            "\", want fifo, sjf, srtf, las or corral");
    }
    change.policy = p;
  }
  if (args.Has("nodes")) {
    const std::string n = args.Get("nodes");
    int32_t nodes = 0;
    auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), nodes);
    if (ec != std::errc{} || end != n.data() + n.size() || nodes < 1) {
      return Usage(ctx, "flag --nodes: got \"" + n + "\", want a whole number >= 1");
    }
    change.nodes = nodes;
  }
  std::string running = args.Get("running", "so-far");
  if (running != "so-far" && running != "limit") {
    return Usage(ctx, "flag --running: got \"" + running + "\", want so-far or limit");
  }

  Result<Json> doc = Json();
  if (args.Has("history")) {
    doc = ReadHistoryFile(args.Get("history"));
  } else {
    cli::ApiClient api(ctx);
    doc = api.CallJson("GET", "/v1/history?since=" + std::to_string(*since / kSecond));
  }
  if (!doc.ok()) return Fail(ctx, doc.status().message());
  auto history = head::HistoryFromJson(*doc);
  if (!history.ok()) return Fail(ctx, history.status().message());
  auto replay =
      ReplayFromHistory(*history, running == "limit" ? RunningAs::kLimit : RunningAs::kSoFar);
  if (!replay.ok()) return Fail(ctx, replay.status().message());
  auto changed_config = ChangedConfig(*replay, change);
  if (!changed_config.ok()) return Usage(ctx, changed_config.status().message());

  auto replayed = Simulate(replay->jobs, replay->config);
  if (!replayed.ok()) return Fail(ctx, "replay as recorded: " + replayed.status().message());
  Result<SimResult> changed = SimResult();
  if (!change.Empty()) {
    changed = Simulate(replay->jobs, *changed_config);
    if (!changed.ok()) return Fail(ctx, "replay with the change: " + changed.status().message());
  }
  WhatIfReport report = BuildReport(*replay, *replayed, change.Empty() ? nullptr : &*changed);
  if (format == "json") {
    *ctx.out << ToJson(report).dump(2) << "\n";
  } else {
    *ctx.out << RenderWhatIf(report);
  }
  return cli::kExitOk;
}

}  // namespace corral::sim
