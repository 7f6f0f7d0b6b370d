// corral submit: flags and/or a YAML/JSON file -> the user-facing spec -> POST /v1/jobs.
#include <pwd.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <fstream>
#include <optional>
#include <ostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/stage_out_dest.h"
#include "core/spec.h"

namespace corral::cli {
namespace {

const std::vector<FlagDef> kSubmitFlags = {
    {"file", 'f', true},
    {"gpus", 0, true},
    {"gpu-memory", 0, true},
    {"gpu-isolation", 0, true},
    {"cpus", 0, true},
    {"memory", 0, true},
    {"replicas", 0, true},
    {"hot-spares", 0, true},
    {"spread", 0, false},
    {"max-replicas-per-node", 0, true},
    {"name", 0, true},
    {"queue", 0, true},
    {"time-limit", 0, true},
    {"priority", 0, true},
    {"preemptible", 0, false},
    {"reservation", 0, true},
    {"mail-type", 0, true},
    {"mail-user", 0, true},
    {"max-restarts", 0, true},
    {"checkpoint-signal", 0, true},
    {"grace-period", 0, true},
    {"env", 0, true},
    {"workdir", 0, true},
    {"gpu-model", 0, true},
    {"label", 0, true},
    {"parsable", 0, false},
    {"dry-run", 0, false},
    {"user", 0, true},
    {"array", 'a', true},
    {"dependency", 'd', true},
    {"tasks-per-replica", 0, true},
    {"image", 0, true},
    {"mount", 0, true},
    {"dataset", 0, true},
    {"stage-out", 0, true},
    {"container-workdir", 0, true},
    {"container-writable", 0, false},
    {"no-container-mount-home", 0, false},
};

// A plain (untagged, unquoted) YAML scalar becomes a bool, null, integer or number when it
// reads as one; a quoted one, or any scalar under a field of strings, stays a string (so that
// `env: {LR: 1e-3, V: 1.10}` keeps its text and `command: [train, --epochs, 10]` stays argv).
Json ScalarToJson(const YAML::Node& n, bool text) {
  const std::string& s = n.Scalar();
  if (!text && n.Tag() == "?") {
    if (s == "true" || s == "True" || s == "TRUE") return true;
    if (s == "false" || s == "False" || s == "FALSE") return false;
    if (s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
    int64_t i = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), i);
    if (!s.empty() && r.ec == std::errc{} && r.ptr == s.data() + s.size()) return i;
    double d = 0;
    auto rd = std::from_chars(s.data(), s.data() + s.size(), d);
    if (!s.empty() && rd.ec == std::errc{} && rd.ptr == s.data() + s.size()) return d;
  }
  return s;
}

// Spec fields whose values are text however they look.
bool IsTextField(const std::string& key) {
  static const char* const kText[] = {"name",         "command",
                                      "env",          "workdir",
                                      "queue",        "gpu_model",
                                      "node_labels",  "time_limit",
                                      "grace_period", "checkpoint_signal",
                                      "memory",       "array",
                                      "dependency",   "image",
                                      "mounts",       "container_workdir",
                                      "gpu_memory",   "gpu_isolation",
                                      "datasets",     "stage_out"};
  for (const char* k : kText) {
    if (key == k) return true;
  }
  return false;
}

// YAML aliases can make a document a cycle (`&a [*a]`) or an exponential tree of repeats
// ("billion laughs"), which a plain walk would follow until the stack or memory runs out.
constexpr int kMaxSpecDepth = 32;
constexpr int kMaxSpecNodes = 100000;

struct YamlWalk {
  int nodes_left = kMaxSpecNodes;
  std::string error;
};

std::optional<Json> YamlToJson(const YAML::Node& n, bool text, int depth, YamlWalk* walk) {
  if (depth > kMaxSpecDepth) {
    walk->error = "nested deeper than " + std::to_string(kMaxSpecDepth) +
                  " levels (an alias that contains itself?)";
    return std::nullopt;
  }
  if (--walk->nodes_left < 0) {
    walk->error =
        "more than " + std::to_string(kMaxSpecNodes) + " values once its aliases are expanded";
    return std::nullopt;
  }
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return Json(nullptr);
    case YAML::NodeType::Scalar:
      return ScalarToJson(n, text);
    case YAML::NodeType::Sequence: {
      Json a = Json::array();
      for (const auto& e : n) {
        std::optional<Json> v = YamlToJson(e, text, depth + 1, walk);
        if (!v) return std::nullopt;
        a.push_back(std::move(*v));
      }
      return a;
    }
    case YAML::NodeType::Map: {
      Json o = Json::object();
      for (const auto& kv : n) {
        const std::string key = kv.first.as<std::string>();
        std::optional<Json> v =
            YamlToJson(kv.second, text || (depth == 0 && IsTextField(key)), depth + 1, walk);
        if (!v) return std::nullopt;
        o[key] = std::move(*v);
      }
      return o;
    }
  }
  return Json(nullptr);
}

// "4" -> 4, "1.5" -> 1.5; anything else stays text so that ParseJobSpec names the field.
Json NumberOrText(const std::string& text) {
  int64_t i = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), i);
  if (!text.empty() && r.ec == std::errc{} && r.ptr == text.data() + text.size()) return i;
  double d = 0;
  auto rd = std::from_chars(text.data(), text.data() + text.size(), d);
  if (!text.empty() && rd.ec == std::errc{} && rd.ptr == text.data() + text.size()) return d;
  return text;
}

Status AddPairs(Json* spec, const char* field, const char* flag,
                const std::vector<std::string>& pairs, const EnvLookup* env) {
  Json& obj = (*spec)[field];
  if (!obj.is_object()) obj = Json::object();
  for (const std::string& p : pairs) {
    auto eq = p.find('=');
    if (eq == 0 || p.empty()) {
      return InvalidArgument(std::string("flag --") + flag + ": got \"" + p + "\", want KEY=VALUE");
    }
    if (eq == std::string::npos) {
      // Like `docker run -e NAME`: pass the variable through from this environment.
      std::optional<std::string> v = env ? (*env)(p) : std::nullopt;
      if (!v) {
        return InvalidArgument(std::string("flag --") + flag + ": got \"" + p +
                               "\", want KEY=VALUE (or the name of a variable set here)");
      }
      obj[p] = *v;
    } else {
      obj[p.substr(0, eq)] = p.substr(eq + 1);
    }
  }
  return Status::Ok();
}

}  // namespace

Result<Json> ReadSpecFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return InvalidArgument("cannot read job spec file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  size_t first = text.find_first_not_of(" \t\r\n");
  if (JsonNestingDepth(text) > kMaxJsonNesting) {
    return InvalidArgument("job spec file " + path + ": nested deeper than " +
                           std::to_string(kMaxJsonNesting) + " levels");
  }
  if (first != std::string::npos && text[first] == '{') {
    Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_object()) return j;
    // Not JSON: perhaps a YAML flow mapping such as {command: x}; YAML says if it is neither.
  }
  try {
    YAML::Node n = YAML::Load(text);
    YamlWalk walk;
    std::optional<Json> converted = YamlToJson(n, /*text=*/false, /*depth=*/0, &walk);
    if (!converted) return InvalidArgument("job spec file " + path + ": " + walk.error);
    Json j = std::move(*converted);
    if (!j.is_object()) {
      return InvalidArgument("job spec file " + path +
                             ": want a mapping of spec fields at the top");
    }
    return j;
  } catch (const YAML::Exception& e) {
    return InvalidArgument("job spec file " + path + ": " + e.what());
  }
}

Result<Json> BuildSubmitSpec(const ParsedArgs& args, const std::string& cwd, const EnvLookup& env) {
  Json spec = Json::object();
  if (args.Has("file")) {
    auto f = ReadSpecFile(args.Get("file"));
    if (!f.ok()) return f.status();
    spec = *f;
  }
  struct Mapping {
    const char* flag;
    const char* field;
    bool numeric;
  };
  static const Mapping kScalars[] = {
      {"gpus", "gpus", true},
      {"gpu-memory", "gpu_memory", false},
      {"gpu-isolation", "gpu_isolation", false},
      {"cpus", "cpus", true},
      {"memory", "memory", true},
      {"replicas", "replicas", true},
      {"hot-spares", "hot_spares", true},
      {"max-replicas-per-node", "max_replicas_per_node", true},
      {"name", "name", false},
      {"queue", "queue", false},
      {"time-limit", "time_limit", false},
      {"priority", "priority", true},
      {"max-restarts", "max_restarts", true},
      {"checkpoint-signal", "checkpoint_signal", false},
      {"grace-period", "grace_period", false},
      {"gpu-model", "gpu_model", false},
      {"reservation", "reservation", false},
      {"mail-type", "mail_type", false},
      {"mail-user", "mail_user", false},
      {"array", "array", false},
      {"dependency", "dependency", false},
      {"tasks-per-replica", "tasks_per_replica", true},
      {"image", "image", false},
      {"container-workdir", "container_workdir", false},
      {"stage-out", "stage_out", false},
  };
  for (const Mapping& m : kScalars) {
    if (!args.Has(m.flag)) continue;
    const std::string v = args.Get(m.flag);
    spec[m.field] = m.numeric ? NumberOrText(v) : Json(v);
  }
  if (args.Has("preemptible")) spec["preemptible"] = true;
  if (args.Has("spread")) spec["spread"] = true;
  if (args.Has("container-writable")) spec["container_writable"] = true;
  if (args.Has("no-container-mount-home")) spec["container_mount_home"] = false;
  for (const std::string& m : args.All("mount")) {
    if (!spec.contains("mounts") || !spec["mounts"].is_array()) spec["mounts"] = Json::array();
    spec["mounts"].push_back(m);
  }
  for (const std::string& d : args.All("dataset")) {  // NAME[@V][:MOUNT], checked by the head
    if (!spec.contains("datasets") || !spec["datasets"].is_array()) {
      spec["datasets"] = Json::array();
    }
    spec["datasets"].push_back(d);
  }
  CORRAL_RETURN_IF_ERROR(AddPairs(&spec, "env", "env", args.All("env"), &env));
  if (spec["env"].empty()) spec.erase("env");
  CORRAL_RETURN_IF_ERROR(AddPairs(&spec, "node_labels", "label", args.All("label"), nullptr));
  if (spec["node_labels"].empty()) spec.erase("node_labels");
  if (args.Has("workdir")) spec["workdir"] = args.Get("workdir");
  if (!spec.contains("workdir") && !cwd.empty()) spec["workdir"] = cwd;
  if (auto it = spec.find("workdir"); it != spec.end() && it->is_string()) {
    std::string w = it->get<std::string>();
    if (!w.empty() && w[0] != '/' && !cwd.empty()) *it = cwd + "/" + w;
  }
  if (!args.rest.empty()) spec["command"] = args.rest;
  return spec;
}

const std::vector<FlagDef>& SubmitFlags() { return kSubmitFlags; }

int RunSubmit(const std::vector<std::string>& argv, CliContext& ctx) {
  auto parsed = ParseArgs(argv, kSubmitFlags, /*stop_at_positional=*/true);
  if (!parsed.ok()) return UsageError(ctx, "submit", parsed.status().message());
  const ParsedArgs& args = *parsed;
  if (args.Has("help")) {
    *ctx.out << CommandUsage("submit") << "\n";
    return kExitOk;
  }
  if (args.rest.empty() && !args.Has("file")) {
    return UsageError(ctx, "submit",
                      "no command given: put it after the flags, e.g. "
                      "`corral submit --gpus 1 -- python train.py`, or use -f SPEC.yaml");
  }
  auto spec = BuildSubmitSpec(args, ctx.cwd, ctx.env);
  if (!spec.ok()) return UsageError(ctx, "submit", spec.status().message());
  if (!spec->contains("command")) {
    return UsageError(ctx, "submit",
                      "no command given: the spec file " + args.Get("file") +
                          " has no 'command' and none follows the flags");
  }
  auto valid = ParseJobSpec(*spec);
  if (!valid.ok()) {
    PrintError(ctx, "submit", valid.status().message());
    return kExitUsage;
  }
  if (Status dest = CheckStageOutDest(*valid); !dest.ok()) {
    PrintError(ctx, "submit", dest.message());
    return kExitUsage;
  }
  // The owner is whoever the token names; only an admin may submit for someone else.
  Json body = {{"spec", *spec}};
  if (args.Has("user")) body["user"] = args.Get("user");
  if (args.Has("dry-run")) {
    *ctx.out << body.dump(2) << "\n";
    return kExitOk;
  }
  body["request_id"] = NewRequestId();
  ApiClient api(ctx);
  auto reply = api.CallJson("POST", "/v1/jobs", body.dump());
  if (!reply.ok()) {
    PrintError(ctx, "submit", reply.status().message());
    return kExitError;
  }
  auto job = reply->find("job");
  if (job == reply->end() || !job->is_object() || !job->contains("id")) {
    PrintError(ctx, "submit",
               "the head accepted the job but its answer has no job id: " + reply->dump());
    return kExitError;
  }
  const std::string id = (*job)["id"].dump();
  if (args.Has("parsable")) {
    *ctx.out << id << "\n";
  } else if (job->value("array_id", 0) != 0) {
    *ctx.out << "Submitted array job " << id << "\n";
  } else {
    *ctx.out << "Submitted job " << id << "\n";
  }
  return kExitOk;
}

}  // namespace corral::cli
