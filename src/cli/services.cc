// corral serve and corral services (docs/services.md): create a service from flags and/or a
// YAML/JSON file, list services, show one with its replicas, remove one.
#include <charconv>
#include <cmath>
#include <ostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/table.h"
#include "core/service.h"

namespace corral::cli {
namespace {

// serve's own flags; the rest are submit's resource flags, for the replica template.
const std::vector<std::string> kServiceOnlyFlags = {
    "file",    "replicas",         "min-replicas",   "max-replicas",       "port",
    "health",  "any-user",         "drain-timeout",  "wake-timeout",       "ready-timeout",
    "dry-run", "target-in-flight", "scale-up-delay", "scale-down-delay",   "scale-to-zero-after",
    "live",    "target-latency",   "panic-window",   "panic-threshold-pct"};

// The flags of the replica template that `serve` takes and `serve update` may change.
std::vector<FlagDef> ReplicaTemplateFlags() {
  std::vector<FlagDef> flags;
  static const char* const kTemplate[] = {"gpus",
                                          "gpu-memory",
                                          "gpu-isolation",
                                          "cpus",
                                          "memory",
                                          "queue",
                                          "priority",
                                          "env",
                                          "workdir",
                                          "gpu-model",
                                          "label",
                                          "image",
                                          "mount",
                                          "container-workdir",
                                          "container-writable",
                                          "no-container-mount-home"};
  for (const FlagDef& f : SubmitFlags()) {
    for (const char* t : kTemplate) {
      if (f.name == t) flags.push_back(f);
    }
  }
  return flags;
}

std::vector<FlagDef> ServeFlags() {
  std::vector<FlagDef> flags = {{"file", 'f', true},
                                {"replicas", 0, true},
                                {"min-replicas", 0, true},
                                {"max-replicas", 0, true},
                                {"port", 0, true},
                                {"health", 0, true},
                                {"live", 0, true},
                                {"any-user", 0, false},
                                {"dry-run", 0, false},
                                {"drain-timeout", 0, true},
                                {"wake-timeout", 0, true},
                                {"target-in-flight", 0, true},
                                {"scale-up-delay", 0, true},
                                {"scale-down-delay", 0, true},
                                {"scale-to-zero-after", 0, true},
                                {"target-latency", 0, true},
                                {"panic-window", 0, true},
                                {"panic-threshold-pct", 0, true}};
  for (FlagDef& f : ReplicaTemplateFlags()) flags.push_back(std::move(f));
  return flags;
}

std::vector<FlagDef> ServeUpdateFlags() {
  std::vector<FlagDef> flags = {
      {"file", 'f', true},         {"ready-timeout", 0, true},    {"dry-run", 0, false},
      {"replicas", 0, true},       {"min-replicas", 0, true},     {"max-replicas", 0, true},
      {"drain-timeout", 0, true},  {"wake-timeout", 0, true},     {"target-in-flight", 0, true},
      {"scale-up-delay", 0, true}, {"scale-down-delay", 0, true}, {"scale-to-zero-after", 0, true},
      {"target-latency", 0, true}, {"panic-window", 0, true},     {"panic-threshold-pct", 0, true}};
  for (FlagDef& f : ReplicaTemplateFlags()) flags.push_back(std::move(f));
  return flags;
}

// An integer flag's value as a number, else as the text (the head's check names the field).
Json IntOrText(const std::string& v) {
  int64_t n = 0;
  auto r = std::from_chars(v.data(), v.data() + v.size(), n);
  if (!v.empty() && r.ec == std::errc{} && r.ptr == v.data() + v.size()) return n;
  return v;
}

// A number flag's value (an integer or a decimal) as a number, else as the text.
Json ServeNumberOrText(const std::string& v) {
  double d = 0;
  auto r = std::from_chars(v.data(), v.data() + v.size(), d);
  if (!v.empty() && r.ec == std::errc{} && r.ptr == v.data() + v.size()) return d;
  return v;
}

// The settings flags given (replica counts, the autoscaler's, the timeouts), as the fields of
// a service or of an update of its settings.
void AddSettingFlags(const ParsedArgs& args, Json& body) {
  static const std::pair<const char*, const char*> kInts[] = {
      {"replicas", "replicas"},
      {"min-replicas", "min_replicas"},
      {"max-replicas", "max_replicas"},
      {"panic-threshold-pct", "panic_threshold_pct"}};
  for (const auto& [flag, field] : kInts) {
    if (args.Has(flag)) body[field] = IntOrText(args.Get(flag));
  }
  if (args.Has("target-in-flight")) {
    body["target_in_flight"] = ServeNumberOrText(args.Get("target-in-flight"));
  }
  static const std::pair<const char*, const char*> kDurations[] = {
      {"scale-up-delay", "scale_up_delay"},
      {"scale-down-delay", "scale_down_delay"},
      {"scale-to-zero-after", "scale_to_zero_after"},
      {"drain-timeout", "drain_timeout"},
      {"wake-timeout", "wake_timeout"},
      {"target-latency", "target_latency"},
      {"panic-window", "panic_window"}};
  for (const auto& [flag, field] : kDurations) {
    if (args.Has(flag)) body[field] = args.Get(flag);
  }
}

// The service's body (ParseServiceSpec's form) from -f FILE, NAME, the flags and the command.
Result<Json> BuildServiceBody(const ParsedArgs& args, CliContext& ctx) {
  Json body = Json::object();
  if (args.Has("file")) {
    auto f = ReadSpecFile(args.Get("file"));
    if (!f.ok()) return f.status();
    body = *f;
  }
  if (!args.positional.empty()) body["name"] = args.positional[0];
  if (args.Has("port")) body["port"] = IntOrText(args.Get("port"));
  if (args.Has("health")) body["health"] = args.Get("health");
  if (args.Has("live")) body["live"] = args.Get("live");
  if (args.Has("any-user")) body["any_user"] = true;
  AddSettingFlags(args, body);
  ParsedArgs resources = args;
  for (const std::string& f : kServiceOnlyFlags) resources.flags.erase(f);
  auto spec = BuildSubmitSpec(resources, ctx.cwd, ctx.env);
  if (!spec.ok()) return spec.status();
  Json merged = body.contains("spec") && body["spec"].is_object() ? body["spec"] : Json::object();
  if (body.contains("spec") && merged.contains("workdir")) spec->erase("workdir");
  merged.update(*spec);
  body["spec"] = merged;
  return body;
}

// An update's body (ParseServiceUpdate's form) from -f FILE, the flags given and the command:
// only what is given changes (the working directory only with --workdir).
Result<Json> BuildUpdateBody(const ParsedArgs& args, CliContext& ctx) {
  Json body = Json::object();
  if (args.Has("file")) {
    auto f = ReadSpecFile(args.Get("file"));
    if (!f.ok()) return f.status();
    body = *f;
  }
  if (args.Has("ready-timeout")) body["ready_timeout"] = args.Get("ready-timeout");
  AddSettingFlags(args, body);
  ParsedArgs resources = args;
  for (const std::string& f : kServiceOnlyFlags) resources.flags.erase(f);
  auto spec = BuildSubmitSpec(resources, ctx.cwd, ctx.env);
  if (!spec.ok()) return spec.status();
  if (!args.Has("workdir")) spec->erase("workdir");
  // Settings alone change no replica: no template fields then (the check names both).
  if (spec->empty() && !body.contains("spec")) {
    for (const std::string& f : ServiceSettingFields()) {
      if (body.contains(f)) return body;
    }
  }
  Json merged = body.contains("spec") && body["spec"].is_object() ? body["spec"] : Json::object();
  merged.update(*spec);
  body["spec"] = merged;
  return body;
}

std::string ServiceReplicaRange(const Json& s);

int RunServeUpdate(const std::vector<std::string>& argv, CliContext& ctx) {
  auto parsed = ParseArgs(argv, ServeUpdateFlags(), /*stop_at_positional=*/false);
  if (!parsed.ok()) return UsageError(ctx, "serve update", parsed.status().message());
  const ParsedArgs& args = *parsed;
  if (args.positional.size() != 1) {
    return UsageError(ctx, "serve update",
                      "want one service name: corral serve update NAME [flags] [-- NEW CMD]");
  }
  auto body = BuildUpdateBody(args, ctx);
  if (!body.ok()) return UsageError(ctx, "serve update", body.status().message());
  if (auto valid = ParseServiceUpdate(*body); !valid.ok()) {
    PrintError(ctx, "serve update", valid.status().message());
    return kExitUsage;
  }
  if (args.Has("dry-run")) {
    *ctx.out << body->dump(2) << "\n";
    return kExitOk;
  }
  ApiClient api(ctx);
  auto reply = api.CallJson("POST", "/v1/services/" + args.positional[0] + "/update", body->dump());
  if (!reply.ok()) {
    PrintError(ctx, "serve update", reply.status().message());
    return kExitError;
  }
  const Json s = reply->value("service", Json::object());
  if (!s.contains("rollout")) {  // its settings: at once
    *ctx.out << "Service " << s.value("name", "") << ": settings updated, no replica replaced "
             << "(replicas " << ServiceReplicaRange(s) << ", desired " << s.value("desired", 0)
             << ")\n";
    return kExitOk;
  }
  *ctx.out << "Service " << s.value("name", "") << ": updating to version " << s.value("version", 0)
           << ", one replica at a time (corral services show " << s.value("name", "") << ")\n";
  return kExitOk;
}

std::string ReplicaCounts(const Json& s) {
  int running = 0;
  for (const Json& r : s.value("replicas", Json::array())) running += r.value("running", false);
  return std::to_string(running) + "/" + std::to_string(s.value("desired", 0));
}

std::string ServiceReplicaRange(const Json& s) {
  const int lo = s.value("min_replicas", 0), hi = s.value("max_replicas", 0);
  return lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi);
}

std::string PortText(const Json& s) {
  const int port = s.value("port", 0);
  return port == 0 ? "auto" : std::to_string(port);
}

int ListServicesTable(const Json& answer, CliContext& ctx) {
  auto all = ArrayIn(answer, "services");
  if (!all.ok()) {
    PrintError(ctx, "services", all.status().message());
    return kExitError;
  }
  Table t({"NAME", "OWNER", "RUNNING", "REPLICAS", "PORT", "HEALTH", "PATH", "NOTE"});
  for (const Json& s : *all) {
    t.AddRow({s.value("name", ""), s.value("owner", ""), ReplicaCounts(s), ServiceReplicaRange(s),
              PortText(s), s.value("health", "/"), s.value("path", ""), s.value("note", "-")});
  }
  *ctx.out << t.Render();
  return kExitOk;
}

// "Autoscale: target 2 in flight per replica, up after 30s, down after 10m", or nothing for a
// fixed count.
std::string AutoscaleLine(const Json& s) {
  const int lo = s.value("min_replicas", 1), hi = s.value("max_replicas", 1);
  if (lo == hi && lo > 0) return "";
  std::ostringstream out;
  out << "Autoscale: target " << s.value("target_in_flight", 2.0)
      << " in flight per replica, up after "
      << ServiceDurationText(s.value("scale_up_delay_ms", DurationMs{0})) << ", down after "
      << ServiceDurationText(s.value("scale_down_delay_ms", DurationMs{0}));
  if (lo == 0) {
    out << ", to zero after "
        << ServiceDurationText(s.value("scale_to_zero_after_ms", DurationMs{0}));
  }
  if (const DurationMs latency = s.value("target_latency_ms", DurationMs{0}); latency > 0) {
    out << "; median latency target " << ServiceDurationText(latency);
  }
  out << "; panic at " << s.value("panic_threshold_pct", 200) << "% over "
      << ServiceDurationText(s.value("panic_window_ms", 6 * kSecond));
  return out.str() + "\n";
}

// Its traffic through the head over the last minute (the service JSON's "traffic").
std::string TrafficLine(const Json& s) {
  const Json t = s.value("traffic", Json::object());
  std::ostringstream out;
  out << "Traffic:  ";
  if (t.value("requests", 0) == 0) {
    out << "no request answered in the last minute";
  } else {
    auto latency = [&](const char* key) {
      const Json v = t.value(key, Json());
      std::ostringstream ms;
      ms.setf(std::ios::fixed);
      ms.precision(v.is_number() && v.get<double>() < 10 ? 1 : 0);
      if (v.is_number()) ms << v.get<double>() << " ms";
      return v.is_number() ? ms.str() : std::string("-");
    };
    out.setf(std::ios::fixed);
    out.precision(1);
    out << t.value("requests_per_s", 0.0) << " requests/s over the last "
        << ServiceDurationText(std::llround(t.value("window_s", 0.0)) * kSecond) << ", "
        << 100 * t.value("error_share", 0.0) << "% answered 5xx, p50 " << latency("p50_ms")
        << ", p99 " << latency("p99_ms");
  }
  if (t.value("in_flight", 0) > 0) out << "; " << t.value("in_flight", 0) << " in flight";
  return out.str() + "\n";
}

int ShowService(const Json& s, CliContext& ctx) {
  *ctx.out << "Name:     " << s.value("name", "") << "\n"
           << "Owner:    " << s.value("owner", "") << "\n"
           << "Address:  " << s.value("path", "") << " on the head"
           << (s.value("any_user", false) ? " (any authenticated user)" : " (owner and admins)")
           << "\n"
           << "Replicas: " << ReplicaCounts(s) << " running (min " << s.value("min_replicas", 0)
           << ", max " << s.value("max_replicas", 0) << ")\n"
           << AutoscaleLine(s) << "Port:     " << PortText(s) << "\n"
           << "Health:   GET " << s.value("health", "/") << " (ready), GET "
           << s.value("live", s.value("health", "/")) << " (live)\n"
           << "Wake:     a request waits up to "
           << ServiceDurationText(s.value("wake_timeout_ms", kDefaultWakeTimeout))
           << " for a ready replica\n"
           << "Version:  " << s.value("version", 1) << "\n";
  if (s.contains("rollout")) {
    *ctx.out << "Update:   to version " << s.value("version", 1) << " from version "
             << s["rollout"].value("from_version", 0) << ", in progress\n";
  }
  if (s.contains("last_rollout")) {
    *ctx.out << "Last update: " << s.value("last_rollout", "") << "\n";
  }
  if (s.contains("note")) *ctx.out << "Note:     " << s.value("note", "") << "\n";
  *ctx.out << TrafficLine(s);
  if (const Json scale = s.value("last_scale", Json()); scale.is_object()) {
    *ctx.out << "Scaled:   " << scale.value("text", "") << " (" << scale.value("cause", "")
             << ")\n";
  }
  Table t({"JOB", "STATE", "VERSION", "SERVING", "NODE", "ADDRESS"});
  for (const Json& r : s.value("replicas", Json::array())) {
    const std::string serving = r.value("draining", false) ? "draining"
                                : r.value("ready", false)  ? "ready"
                                                           : "-";
    t.AddRow({std::to_string(r.value("job", 0)), r.value("state", ""),
              std::to_string(r.value("version", 1)), serving, r.value("node", "-"),
              r.value("address", "-")});
  }
  *ctx.out << "\n" << t.Render();
  return kExitOk;
}

}  // namespace

int RunServe(const std::vector<std::string>& argv, CliContext& ctx) {
  if (!argv.empty() && argv[0] == "update") {
    return RunServeUpdate(std::vector<std::string>(argv.begin() + 1, argv.end()), ctx);
  }
  auto parsed = ParseArgs(argv, ServeFlags(), /*stop_at_positional=*/false);
  if (!parsed.ok()) return UsageError(ctx, "serve", parsed.status().message());
  const ParsedArgs& args = *parsed;
  if (args.Has("help")) {
    *ctx.out << CommandUsage("serve") << "\n";
    return kExitOk;
  }
  if (args.positional.size() > 1) {
    return UsageError(ctx, "serve",
                      "one service name, then the flags, then -- and the command (got \"" +
                          args.positional[1] + "\" after the name)");
  }
  if (args.positional.empty() && !args.Has("file")) {
    return UsageError(ctx, "serve", "no service name given: corral serve NAME ... -- CMD");
  }
  auto body = BuildServiceBody(args, ctx);
  if (!body.ok()) return UsageError(ctx, "serve", body.status().message());
  if (auto valid = ParseServiceSpec(*body); !valid.ok()) {
    PrintError(ctx, "serve", valid.status().message());
    return kExitUsage;
  }
  if (args.Has("dry-run")) {
    *ctx.out << body->dump(2) << "\n";
    return kExitOk;
  }
  ApiClient api(ctx);
  auto reply = api.CallJson("POST", "/v1/services", body->dump());
  if (!reply.ok()) {
    PrintError(ctx, "serve", reply.status().message());
    return kExitError;
  }
  const Json s = reply->value("service", Json::object());
  *ctx.out << "Service " << s.value("name", "") << " created: " << s.value("desired", 0)
           << " replica(s), at " << ctx.addr << "/v/" << s.value("name", "") << "/\n";
  return kExitOk;
}

int RunServices(const std::vector<std::string>& argv, CliContext& ctx) {
  auto parsed = ParseArgs(argv, {{"output", 'o', true}, {"replicas", 0, true}},
                          /*stop_at_positional=*/false);
  if (!parsed.ok()) return UsageError(ctx, "services", parsed.status().message());
  const ParsedArgs& args = *parsed;
  if (args.Has("help")) {
    *ctx.out << CommandUsage("services") << "\n";
    return kExitOk;
  }
  const std::string output = args.Get("output", "table");
  if (output != "table" && output != "json") {
    return UsageError(ctx, "services", "flag --output: got \"" + output + "\", want table or json");
  }
  const std::vector<std::string>& pos = args.positional;
  const std::string verb = pos.empty() ? "" : pos[0];
  if (!pos.empty() && (pos.size() != 2 || (verb != "show" && verb != "rm" && verb != "scale"))) {
    return UsageError(ctx, "services",
                      "want no argument, `show NAME`, `scale NAME --replicas N` or `rm NAME`");
  }
  if ((verb == "scale") != args.Has("replicas")) {
    return UsageError(ctx, "services", "--replicas goes with scale, and scale needs it");
  }
  ApiClient api(ctx);
  const std::string method = verb == "rm" ? "DELETE" : verb == "scale" ? "POST" : "GET";
  std::string path = verb.empty() ? "/v1/services" : "/v1/services/" + pos[1];
  std::string body;
  if (verb == "scale") {
    path += "/scale";
    int64_t n = -1;
    const std::string v = args.Get("replicas");
    auto r = std::from_chars(v.data(), v.data() + v.size(), n);
    if (v.empty() || r.ec != std::errc{} || r.ptr != v.data() + v.size()) {
      return UsageError(ctx, "services", "flag --replicas: got \"" + v + "\", want a number");
    }
    body = Json{{"replicas", n}}.dump();
  }
  auto reply = api.CallJson(method, path, body);
  if (!reply.ok()) {
    PrintError(ctx, "services", reply.status().message());
    return kExitError;
  }
  if (output == "json") {
    *ctx.out << reply->dump(2) << "\n";
    return kExitOk;
  }
  if (verb.empty()) return ListServicesTable(*reply, ctx);
  if (verb == "show") return ShowService(reply->value("service", Json::object()), ctx);
  if (verb == "scale") {
    *ctx.out << "Service " << pos[1] << " scaled to "
             << reply->value("service", Json::object()).value("desired", 0) << " replica(s)\n";
    return kExitOk;
  }
  *ctx.out << "Service " << pos[1] << " removed; its replicas are stopping\n";
  return kExitOk;
}

}  // namespace corral::cli
