// corral reservations: advance reservations and maintenance windows (docs/api.md):
// list them; admins create and delete them.
#include <charconv>
#include <ctime>
#include <ostream>

#include "cli/commands.h"
#include "cli/table.h"
#include "core/node_reservation.h"
#include "core/spec.h"

namespace corral::cli {
namespace {

// "now", "now+2h", epoch milliseconds, or an ISO 8601 UTC time (2026-11-27T10:00[:00][Z]).
Result<TimeMs> ParseTimeFlag(const std::string& flag, const std::string& v, TimeMs now) {
  auto bad = [&] {
    return InvalidArgument("flag --" + flag + ": got \"" + v +
                           "\", want now, now+DURATION, epoch milliseconds or "
                           "YYYY-MM-DDTHH:MM[:SS] (UTC)");
  };
  if (v == "now") return now;
  if (v.rfind("now+", 0) == 0) {
    auto d = ParseDuration(flag, v.substr(4));
    if (!d.ok()) return bad();
    return now + *d;
  }
  int64_t ms = 0;
  auto r = std::from_chars(v.data(), v.data() + v.size(), ms);
  if (!v.empty() && r.ec == std::errc{} && r.ptr == v.data() + v.size() && ms >= 0) return ms;
  std::tm tm{};
  for (const char* format : {"%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M"}) {
    tm = std::tm{};
    const char* end = strptime(v.c_str(), format, &tm);
    if (end && (*end == '\0' || (end[0] == 'Z' && end[1] == '\0'))) {
      return static_cast<TimeMs>(timegm(&tm)) * 1000;
    }
  }
  return bad();
}

std::string NodeNamesOrAny(const std::vector<std::string>& names) {
  return names.empty() ? "any" : Join(names, ",");
}

std::string Utc(TimeMs ms) {
  std::time_t t = ms / 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

int Create(const ParsedArgs& args, CliContext& ctx) {
  if (args.positional.size() != 2) {
    return UsageError(ctx, "reservations", "create wants exactly one name");
  }
  const std::string name = args.positional[1];
  if (!args.Has("nodes")) return UsageError(ctx, "reservations", "create needs --nodes");
  if (!args.Has("start")) return UsageError(ctx, "reservations", "create needs --start");
  if (args.Has("duration") == args.Has("end")) {
    return UsageError(ctx, "reservations", "create needs one of --duration and --end");
  }
  const TimeMs now = ctx.now();
  Json body{{"name", name}, {"nodes", Join(args.All("nodes"), ",")}};
  auto start = ParseTimeFlag("start", args.Get("start"), now);
  if (!start.ok()) return UsageError(ctx, "reservations", start.status().message());
  body["start_ms"] = *start;
  if (args.Has("end")) {
    auto end = ParseTimeFlag("end", args.Get("end"), now);
    if (!end.ok()) return UsageError(ctx, "reservations", end.status().message());
    body["end_ms"] = *end;
  } else {
    body["duration"] = args.Get("duration");
  }
  if (args.Has("maintenance")) body["maintenance"] = true;
  if (args.Has("user")) body["users"] = args.All("user");
  if (args.Has("queue")) body["queues"] = args.All("queue");
  ApiClient api(ctx);
  auto reply = api.CallJson("POST", "/v1/reservations", body.dump());
  if (!reply.ok()) {
    PrintError(ctx, "reservations", "create " + name + ": " + reply.status().message());
    return kExitError;
  }
  auto r = NodeReservationFromJson(reply->value("reservation", Json::object()));
  if (!r.ok()) {
    PrintError(ctx, "reservations", "the head's answer: " + r.status().message());
    return kExitError;
  }
  *ctx.out << (r->maintenance ? "Maintenance window " : "Reservation ") << r->name << ": "
           << Join(r->nodes, ",") << " from " << Utc(r->start_ms) << " to " << Utc(r->end_ms)
           << "\n";
  return kExitOk;
}

}  // namespace

int RunReservations(const std::vector<std::string>& argv, CliContext& ctx) {
  static const std::vector<FlagDef> kFlags = {
      {"output", 'o', true}, {"nodes", 0, true}, {"start", 0, true}, {"duration", 0, true},
      {"end", 0, true},      {"user", 0, true},  {"queue", 0, true}, {"maintenance", 0, false}};
  auto parsed = ParseArgs(argv, kFlags, false);
  if (!parsed.ok()) return UsageError(ctx, "reservations", parsed.status().message());
  const ParsedArgs& args = *parsed;
  if (args.Has("help")) {
    *ctx.out << CommandUsage("reservations") << "\n";
    return kExitOk;
  }
  const std::string sub = args.positional.empty() ? "list" : args.positional[0];
  if (sub == "create") return Create(args, ctx);
  ApiClient api(ctx);
  if (sub == "delete") {
    if (args.positional.size() != 2) {
      return UsageError(ctx, "reservations", "delete wants exactly one name");
    }
    auto reply = api.CallJson("DELETE", "/v1/reservations/" + args.positional[1]);
    if (!reply.ok()) {
      PrintError(ctx, "reservations",
                 "delete " + args.positional[1] + ": " + reply.status().message());
      return kExitError;
    }
    *ctx.out << "Reservation " << args.positional[1] << " deleted\n";
    return kExitOk;
  }
  if (sub != "list") return UsageError(ctx, "reservations", "unknown subcommand '" + sub + "'");
  const std::string o = args.Get("output", "table");
  if (o != "json" && o != "table") {
    return UsageError(ctx, "reservations", "flag -o: got \"" + o + "\", want json or table");
  }
  auto reply = api.CallJson("GET", "/v1/reservations");
  if (!reply.ok() || !reply->contains("reservations")) {
    PrintError(ctx, "reservations",
               reply.ok() ? "the head's answer has no 'reservations'" : reply.status().message());
    return kExitError;
  }
  const Json& list = (*reply)["reservations"];
  if (o == "json") {
    *ctx.out << list.dump(2) << "\n";
    return kExitOk;
  }
  Table t({"NAME", "NODES", "START", "END", "FLAGS", "USERS", "QUEUES"});
  for (const Json& x : list) {
    auto r = NodeReservationFromJson(x);
    if (!r.ok()) {
      PrintError(ctx, "reservations", "the head's answer: " + r.status().message());
      return kExitError;
    }
    t.AddRow({r->name, Join(r->nodes, ","), Utc(r->start_ms), Utc(r->end_ms),
              r->maintenance ? "MAINT" : "-", NodeNamesOrAny(r->users), NodeNamesOrAny(r->queues)});
  }
  *ctx.out << t.Render();
  return kExitOk;
}

}  // namespace corral::cli
