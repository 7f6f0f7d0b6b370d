// corral qos: QoS classes (docs/qos.md): list them; admins set and delete them.
#include "core/qos.h"

#include <charconv>
#include <ostream>

#include "cli/commands.h"
#include "cli/table.h"

namespace corral::cli {
namespace {

Result<int64_t> PriorityFlag(const ParsedArgs& args, const std::string& flag) {
  const std::string v = args.Get(flag);
  int64_t x = 0;
  auto r = std::from_chars(v.data(), v.data() + v.size(), x);
  if (v.empty() || r.ec != std::errc{} || r.ptr != v.data() + v.size() || x < -1000000 ||
      x > 1000000) {
    return InvalidArgument("flag --" + flag + ": got \"" + v +
                           "\", want an integer from -1000000 to 1000000");
  }
  return x;
}

std::string Names(const std::vector<std::string>& names) {
  return names.empty() ? "-" : Join(names, ",");
}

int QosSet(const ParsedArgs& args, CliContext& ctx) {
  if (args.positional.size() != 2) return UsageError(ctx, "qos", "set wants exactly one name");
  const std::string name = args.positional[1];
  Json body = Json::object();
  for (const char* flag : {"min-priority", "max-priority"}) {
    if (!args.Has(flag)) continue;
    auto x = PriorityFlag(args, flag);
    if (!x.ok()) return UsageError(ctx, "qos", x.status().message());
    body[std::string(flag) == "min-priority" ? "min_priority" : "max_priority"] = *x;
  }
  if (args.Has("no-preempt")) body["preempt"] = false;
  if (args.Has("user")) body["users"] = args.All("user");
  if (args.Has("queue")) body["queues"] = args.All("queue");
  ApiClient api(ctx);
  auto reply = api.CallJson("PUT", "/v1/qos/" + name, body.dump());
  if (!reply.ok()) {
    PrintError(ctx, "qos", "set " + name + ": " + reply.status().message());
    return kExitError;
  }
  auto q = QosFromJson(reply->value("qos", Json::object()));
  if (!q.ok()) {
    PrintError(ctx, "qos", "the head's answer: " + q.status().message());
    return kExitError;
  }
  *ctx.out << "QoS " << name << ": priority " << q->min_priority << ".." << q->max_priority
           << (q->preempt ? ", may" : ", may not") << " preempt by priority\n";
  return kExitOk;
}

}  // namespace

int RunQos(const std::vector<std::string>& argv, CliContext& ctx) {
  static const std::vector<FlagDef> kFlags = {{"output", 'o', true},     {"min-priority", 0, true},
                                              {"max-priority", 0, true}, {"no-preempt", 0, false},
                                              {"user", 0, true},         {"queue", 0, true}};
  auto parsed = ParseArgs(argv, kFlags, false);
  if (!parsed.ok()) return UsageError(ctx, "qos", parsed.status().message());
  const ParsedArgs& args = *parsed;
  if (args.Has("help")) {
    *ctx.out << CommandUsage("qos") << "\n";
    return kExitOk;
  }
  const std::string sub = args.positional.empty() ? "list" : args.positional[0];
  if (sub == "set") return QosSet(args, ctx);
  ApiClient api(ctx);
  if (sub == "delete") {
    if (args.positional.size() != 2) return UsageError(ctx, "qos", "delete wants exactly one name");
    auto reply = api.CallJson("DELETE", "/v1/qos/" + args.positional[1]);
    if (!reply.ok()) {
      PrintError(ctx, "qos", "delete " + args.positional[1] + ": " + reply.status().message());
      return kExitError;
    }
    *ctx.out << "QoS " << args.positional[1] << " deleted\n";
    return kExitOk;
  }
  if (sub != "list") return UsageError(ctx, "qos", "unknown subcommand '" + sub + "'");
  const std::string o = args.Get("output", "table");
  if (o != "json" && o != "table") {
    return UsageError(ctx, "qos", "flag -o: got \"" + o + "\", want json or table");
  }
  auto reply = api.CallJson("GET", "/v1/qos");
  if (!reply.ok() || !reply->contains("qos")) {
    PrintError(ctx, "qos",
               reply.ok() ? "the head's answer has no 'qos'" : reply.status().message());
    return kExitError;
  }
  const Json& list = (*reply)["qos"];
  if (o == "json") {
    *ctx.out << list.dump(2) << "\n";
    return kExitOk;
  }
  Table t({"NAME", "PRIORITY", "PREEMPT", "USERS", "QUEUES"});
  for (const Json& x : list) {
    auto q = QosFromJson(x);
    if (!q.ok()) {
      PrintError(ctx, "qos", "the head's answer: " + q.status().message());
      return kExitError;
    }
    t.AddRow({q->name, std::to_string(q->min_priority) + ".." + std::to_string(q->max_priority),
              q->preempt ? "yes" : "no", Names(q->users), Names(q->queues)});
  }
  *ctx.out << t.Render();
  return kExitOk;
}

}  // namespace corral::cli
