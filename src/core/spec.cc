#include "core/spec.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstring>
#include <functional>
#include <set>

#include "core/field_error.h"

namespace corral {
namespace {

// dump() replacing invalid UTF-8 instead of throwing: a YAML spec file can carry any bytes
// (found by fuzz/job_spec_yaml_fuzz.cc).
std::string Dump(const Json& v) { return v.dump(-1, ' ', false, Json::error_handler_t::replace); }

bool ParseInt64(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc{} && r.ptr == s.data() + s.size();
}

Result<int64_t> IntField(const std::string& field, const Json& v, int64_t lo, int64_t hi) {
  int64_t x = 0;
  // A float is taken only when whole and inside int64 (casting one outside is undefined:
  // fuzz_job_spec_json found it).
  const double d = v.is_number_float() ? v.get<double>() : 0.0;
  if (v.is_number_integer()) {
    x = v.get<int64_t>();
  } else if (v.is_number_float() && d >= -9.2e18 && d <= 9.2e18 && d == std::trunc(d)) {
    x = static_cast<int64_t>(d);
  } else if (!(v.is_string() && ParseInt64(v.get<std::string>(), &x))) {
    return FieldError(field, v, "an integer");
  }
  if (x < lo || x > hi) {
    return FieldError(field, v,
                      "an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
  }
  return x;
}

Result<std::string> StringField(const std::string& field, const Json& v) {
  if (!v.is_string()) return FieldError(field, v, "a string");
  return v.get<std::string>();
}

Result<std::map<std::string, std::string>> StringMapField(const std::string& field, const Json& v) {
  if (!v.is_object()) return FieldError(field, v, "an object of strings");
  std::map<std::string, std::string> out;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (it.key().empty()) return FieldError(field, v, "non-empty keys");
    if (it->is_string()) {
      out[it.key()] = it->get<std::string>();
    } else if (it->is_number() || it->is_boolean()) {
      out[it.key()] = Dump(*it);
    } else {
      return FieldError(field + "." + it.key(), *it, "a string");
    }
  }
  return out;
}

// A duration or memory size may come as a number or a string with a unit.
std::string ScalarText(const Json& v) { return v.is_string() ? v.get<std::string>() : Dump(v); }

// image, mounts, container_workdir, container_writable, container_mount_home. The container
// fields other than image need an image.
Status ParseContainerFields(const Json& j, ContainerSpec* c) {
  if (auto it = j.find("image"); it != j.end()) {
    auto v = StringField("image", *it);
    if (!v.ok()) return v.status();
    auto ref = ParseImageRef("image", *v);
    if (!ref.ok()) return ref.status();
    c->image = ref->Canonical();
  }
  if (auto it = j.find("mounts"); it != j.end()) {
    if (!it->is_array()) {
      return FieldError("mounts", *it,
                        "a list of \"SRC:DST[:ro]\" or {source, destination, "
                        "read_only}");
    }
    if (it->size() > 64) return FieldError("mounts", *it, "at most 64 mounts");
    for (size_t i = 0; i < it->size(); ++i) {
      const Json& m = (*it)[i];
      const std::string field = "mounts[" + std::to_string(i) + "]";
      if (m.is_string()) {
        auto parsed = ParseMount(field, m.get<std::string>());
        if (!parsed.ok()) return parsed.status();
        c->mounts.push_back(*parsed);
        continue;
      }
      if (!m.is_object()) return FieldError(field, m, "\"SRC:DST[:ro]\" or an object");
      ContainerMount mount;
      for (auto f = m.begin(); f != m.end(); ++f) {
        if (f.key() == "source" || f.key() == "destination") {
          auto v = StringField(field + "." + f.key(), *f);
          if (!v.ok()) return v.status();
          (f.key() == "source" ? mount.source : mount.destination) = *v;
        } else if (f.key() == "read_only") {
          if (!f->is_boolean()) return FieldError(field + ".read_only", *f, "true or false");
          mount.read_only = f->get<bool>();
        } else {
          return InvalidArgument("unknown field '" + field + "." + f.key() +
                                 "'; known: source, destination, read_only");
        }
      }
      CORRAL_RETURN_IF_ERROR(ValidateMount(field, mount));
      c->mounts.push_back(mount);
    }
  }
  if (auto it = j.find("container_workdir"); it != j.end()) {
    auto v = StringField("container_workdir", *it);
    if (!v.ok()) return v.status();
    if (v->empty() || (*v)[0] != '/' || v->find('\0') != std::string::npos) {
      return FieldError("container_workdir", *it, "an absolute path in the container");
    }
    c->workdir = *v;
  }
  for (const char* flag : {"container_writable", "container_mount_home"}) {
    auto it = j.find(flag);
    if (it == j.end()) continue;
    if (!it->is_boolean()) return FieldError(flag, *it, "true or false");
    (std::string(flag) == "container_writable" ? c->writable : c->mount_home) = it->get<bool>();
  }
  if (c->image.empty() &&
      (!c->mounts.empty() || !c->workdir.empty() || j.contains("container_writable") ||
       j.contains("container_mount_home"))) {
    return InvalidArgument(
        "field 'image': required with mounts, container_workdir, container_writable or "
        "container_mount_home (they apply to a container)");
  }
  return Status::Ok();
}

}  // namespace

Status FieldError(const std::string& field, const Json& value, const std::string& want) {
  return InvalidArgument("field '" + field + "': got " + Dump(value) + ", want " + want);
}

bool IsGoodName(const std::string& s) {
  return !s.empty() && s.size() <= 64 &&
         s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") ==
             std::string::npos;
}

Result<DurationMs> ParseDuration(const std::string& field, const std::string& text) {
  auto bad = [&] {
    return InvalidArgument("field '" + field + "': got \"" + text +
                           "\", want a duration such as 90, 90s, 15m, 2h, 1d or 1:30:00");
  };
  if (text.empty()) return bad();
  // Every number in a duration is at most a leap year's seconds: the products below stay far
  // inside int64 (fuzz_job_spec_json found "2777777777777777:77...75" overflowing them).
  constexpr int64_t kMaxNumber = 366LL * 24 * 3600;
  int64_t days = 0;
  std::string rest = text;
  if (rest.find(':') != std::string::npos) {
    auto dash = rest.find('-');
    if (dash != std::string::npos) {
      if (!ParseInt64(rest.substr(0, dash), &days) || days < 0 || days > kMaxNumber) return bad();
      rest = rest.substr(dash + 1);
    }
    std::vector<int64_t> parts;
    size_t start = 0;
    while (true) {
      auto colon = rest.find(':', start);
      int64_t x = 0;
      if (!ParseInt64(rest.substr(start, colon - start), &x) || x < 0 || x > kMaxNumber) {
        return bad();
      }
      parts.push_back(x);
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
    if (parts.size() > 3) return bad();
    // Slurm's forms: MM:SS, HH:MM:SS; after "D-": HH, HH:MM, HH:MM:SS.
    int64_t secs = 0;
    if (days > 0 || text.find('-') != std::string::npos) {
      const int64_t scale[] = {3600, 60, 1};
      for (size_t i = 0; i < parts.size(); ++i) secs += parts[i] * scale[i];
    } else {
      for (int64_t p : parts) secs = secs * 60 + p;
    }
    return (days * 86400 + secs) * kSecond;
  }
  int64_t mult = kSecond;
  char unit = text.back();
  std::string digits = text;
  if (!std::isdigit(static_cast<unsigned char>(unit))) {
    digits.pop_back();
    switch (unit) {
      case 's':
        mult = kSecond;
        break;
      case 'm':
        mult = kMinute;
        break;
      case 'h':
        mult = kHour;
        break;
      case 'd':
        mult = 24 * kHour;
        break;
      default:
        return bad();
    }
  }
  int64_t x = 0;
  if (!ParseInt64(digits, &x) || x < 0 || x > kMaxNumber) return bad();
  return x * mult;
}

Result<int64_t> ParseMemoryMb(const std::string& field, const std::string& text) {
  auto bad = [&] {
    return InvalidArgument("field '" + field + "': got \"" + text +
                           "\", want a size such as 512 (MB), 512M, 16G or 1T");
  };
  if (text.empty()) return bad();
  int64_t mult = 1;
  std::string digits = text;
  char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(text.back())));
  if (unit == 'B' && text.size() >= 2) {  // "16GB"
    digits.pop_back();
    unit = static_cast<char>(std::toupper(static_cast<unsigned char>(digits.back())));
  }
  if (!std::isdigit(static_cast<unsigned char>(unit))) {
    digits.pop_back();
    switch (unit) {
      case 'M':
        mult = 1;
        break;
      case 'G':
        mult = 1024;
        break;
      case 'T':
        mult = 1024 * 1024;
        break;
      default:
        return bad();
    }
  }
  int64_t x = 0;
  if (!ParseInt64(digits, &x) || x < 0 || x > (int64_t{1} << 40) / mult) return bad();
  return x * mult;
}

Result<int32_t> ParseSignal(const std::string& field, const std::string& text) {
  int64_t n = 0;
  if (ParseInt64(text, &n)) {
    if (n >= 1 && n <= 64) return static_cast<int32_t>(n);
  } else {
    std::string name = text.rfind("SIG", 0) == 0 ? text.substr(3) : text;
    static const std::pair<const char*, int> kNames[] = {
        {"TERM", SIGTERM}, {"INT", SIGINT},   {"HUP", SIGHUP},  {"USR1", SIGUSR1},
        {"USR2", SIGUSR2}, {"QUIT", SIGQUIT}, {"KILL", SIGKILL}};
    for (const auto& [s, v] : kNames) {
      if (name == s) return v;
    }
  }
  return InvalidArgument("field '" + field + "': got \"" + text +
                         "\", want a signal such as SIGTERM, SIGUSR1 or a number 1-64");
}

std::string FormatDuration(DurationMs ms) {
  int64_t s = ms / 1000;
  char buf[64];
  if (s >= 86400) {
    std::snprintf(buf, sizeof buf, "%lld-%02lld:%02lld:%02lld", static_cast<long long>(s / 86400),
                  static_cast<long long>(s % 86400 / 3600), static_cast<long long>(s % 3600 / 60),
                  static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s % 3600 / 60), static_cast<long long>(s % 60));
  }
  return buf;
}

// "gpus": a whole number of GPUs (exclusive), or a share of one GPU in (0, 1) at milli-GPU
// granularity. Returns milli-GPUs.
Result<int32_t> ParseGpuCount(const Json& v) {
  const std::string want =
      "a whole number of GPUs from 0 to 64, or a share of one GPU from 0.001 to 0.999 "
      "(e.g. 0.25)";
  double x = -1;
  if (v.is_number()) {
    x = v.get<double>();
  } else if (v.is_string()) {
    const std::string& t = v.get<std::string>();
    try {
      size_t pos = 0;
      x = std::stod(t, &pos);
      if (pos != t.size()) x = -1;
    } catch (...) {
      x = -1;
    }
  } else {
    return FieldError("gpus", v, want);
  }
  if (!(x >= 0 && x <= 64)) return FieldError("gpus", v, want);
  if (x == std::trunc(x)) return static_cast<int32_t>(x) * kGpuMilli;
  if (x > 1) {
    return FieldError("gpus", v,
                      "a whole number of GPUs when more than one (a share is of one GPU, "
                      "below 1, e.g. 0.5)");
  }
  double milli = x * kGpuMilli;
  int32_t m = static_cast<int32_t>(std::llround(milli));
  if (std::fabs(milli - m) > 1e-6 || m <= 0 || m >= kGpuMilli) {
    return FieldError("gpus", v, want + " with at most 3 decimals");
  }
  return m;
}

// "replicas": N, "MIN:MAX" (an elastic job) or {min: MIN, max: MAX}. MIN == MAX is a rigid gang.
static Status ParseReplicaRange(const Json& v, JobSpec* s) {
  const std::string want = "an integer from 1 to 4096, a range MIN:MAX or {min: MIN, max: MAX}";
  Json lo, hi;
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (it.key() != "min" && it.key() != "max" && it.key() != "hot_spares") {
        return FieldError("replicas." + it.key(), *it, "only the fields min, max and hot_spares");
      }
    }
    if (!v.contains("min") || !v.contains("max")) return FieldError("replicas", v, want);
    lo = v.at("min");
    hi = v.at("max");
  } else if (v.is_string() && v.get<std::string>().find(':') != std::string::npos) {
    const std::string text = v.get<std::string>();
    const size_t colon = text.find(':');
    lo = text.substr(0, colon);
    hi = text.substr(colon + 1);
  } else {
    auto n = IntField("replicas", v, 1, 4096);
    if (!n.ok()) return n.status();
    s->replicas = static_cast<int32_t>(*n);
    s->min_replicas = 0;
    return Status::Ok();
  }
  auto min = IntField("replicas.min", lo, 1, 4096);
  if (!min.ok()) return min.status();
  auto max = IntField("replicas.max", hi, 1, 4096);
  if (!max.ok()) return max.status();
  if (*min > *max) {
    return FieldError("replicas", v,
                      "a range whose min (" + std::to_string(*min) + ") is at most its max (" +
                          std::to_string(*max) + ")");
  }
  s->replicas = static_cast<int32_t>(*max);
  s->min_replicas = *min < *max ? static_cast<int32_t>(*min) : 0;
  if (v.is_object() && v.contains("hot_spares")) {
    auto k = IntField("replicas.hot_spares", v.at("hot_spares"), 0, 4096);
    if (!k.ok()) return k.status();
    s->hot_spares = static_cast<int32_t>(*k);
  }
  return Status::Ok();
}

// Hot spares stand in for replicas an elastic run loses and survives: at most max - min of
// them (a run that loses more is lost whole, and a spare more would never be used).
static Status CheckHotSpares(const JobSpec& s) {
  const std::string field = "hot_spares";
  if (s.hot_spares == 0) return Status::Ok();
  if (!s.IsElastic()) {
    return InvalidArgument("field '" + field + "': " + std::to_string(s.hot_spares) +
                           ": hot spares replace lost replicas of an elastic job; want replicas "
                           "MIN:MAX with MIN below MAX, or no hot spares");
  }
  if (s.batch) {
    return InvalidArgument("field '" + field +
                           "': a batch job keeps the size it started with; want no hot spares");
  }
  const int32_t most = s.replicas - s.min_replicas;
  if (s.hot_spares > most) {
    return InvalidArgument("field '" + field + "': " + std::to_string(s.hot_spares) +
                           ": want an integer from 0 to max - min (" + std::to_string(most) +
                           "): a run that loses more replicas than that is lost whole");
  }
  return Status::Ok();
}

namespace {

// The fields a job spec may have, in the order an error lists them.
constexpr const char* kJobSpecFields[] = {"name",
                                          "command",
                                          "env",
                                          "workdir",
                                          "queue",
                                          "replicas",
                                          "hot_spares",
                                          "max_replicas_per_node",
                                          "spread",
                                          "gpus",
                                          "cpus",
                                          "memory",
                                          "gpu_model",
                                          "node_labels",
                                          "time_limit",
                                          "priority",
                                          "preemptible",
                                          "reservation",
                                          "mail_type",
                                          "mail_user",
                                          "max_restarts",
                                          "checkpoint_signal",
                                          "grace_period",
                                          "array",
                                          "dependency",
                                          "tasks_per_replica",
                                          "batch",
                                          "hold",
                                          "image",
                                          "mounts",
                                          "container_workdir",
                                          "container_writable",
                                          "container_mount_home",
                                          "gpu_memory",
                                          "gpu_isolation",
                                          "kind",
                                          "notebook",
                                          "datasets",
                                          "stage_out"};

Status CheckSpecFieldsKnown(const Json& j) {
  static const std::set<std::string> known(std::begin(kJobSpecFields), std::end(kJobSpecFields));
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (known.count(it.key())) continue;
    std::string list;
    for (const char* f : kJobSpecFields) list += (list.empty() ? "" : ", ") + std::string(f);
    return InvalidArgument("unknown field '" + it.key() + "'; known fields: " + list);
  }
  return Status::Ok();
}

Status ParseSpecCommand(const Json& j, JobSpec* s) {
  auto cmd = j.find("command");
  if (cmd == j.end()) return InvalidArgument("field 'command': required, want an array of strings");
  if (cmd->is_string()) {
    s->command = {"/bin/sh", "-c", cmd->get<std::string>()};
  } else if (cmd->is_array() && !cmd->empty()) {
    for (const Json& a : *cmd) {
      if (!a.is_string()) return FieldError("command", *cmd, "an array of strings");
      s->command.push_back(a.get<std::string>());
    }
  } else {
    return FieldError("command", *cmd, "a non-empty array of strings");
  }
  if (s->command[0].empty()) return FieldError("command", *cmd, "a non-empty program name");
  // Sizes a head must hold for every job it keeps (and send to agents): generous for any real
  // command line, small enough that one request cannot bloat the cluster's state.
  size_t command_bytes = 0;
  for (const std::string& a : s->command) command_bytes += a.size();
  if (s->command.size() > kMaxCommandArgs || command_bytes > kMaxCommandBytes) {
    return InvalidArgument("field 'command': " + std::to_string(s->command.size()) +
                           " arguments, " + std::to_string(command_bytes) +
                           " bytes; want at most " + std::to_string(kMaxCommandArgs) +
                           " arguments and " + std::to_string(kMaxCommandBytes) + " bytes");
  }
  return Status::Ok();
}

Status ParseSpecEnv(const Json& j, JobSpec* s) {
  auto it = j.find("env");
  if (it == j.end()) return Status::Ok();
  auto v = StringMapField("env", *it);
  if (!v.ok()) return v.status();
  size_t env_bytes = 0;
  for (const auto& [k, val] : *v) env_bytes += k.size() + val.size();
  if (v->size() > kMaxEnvVars || env_bytes > kMaxEnvBytes) {
    return InvalidArgument("field 'env': " + std::to_string(v->size()) + " variables, " +
                           std::to_string(env_bytes) + " bytes; want at most " +
                           std::to_string(kMaxEnvVars) + " variables and " +
                           std::to_string(kMaxEnvBytes) + " bytes");
  }
  s->env = *v;
  return Status::Ok();
}

// name, command, env, workdir and queue: what the job is and where it goes.
Status ParseSpecIdentity(const Json& j, JobSpec* s) {
  if (auto it = j.find("name"); it != j.end()) {
    auto v = StringField("name", *it);
    if (!v.ok()) return v.status();
    if (v->size() > 200) return FieldError("name", *it, "at most 200 characters");
    s->name = *v;
  }
  CORRAL_RETURN_IF_ERROR(ParseSpecCommand(j, s));
  CORRAL_RETURN_IF_ERROR(ParseSpecEnv(j, s));
  if (auto it = j.find("workdir"); it != j.end()) {
    auto v = StringField("workdir", *it);
    if (!v.ok()) return v.status();
    if (!v->empty() && (*v)[0] != '/') return FieldError("workdir", *it, "an absolute path");
    s->workdir = *v;
  }
  if (auto it = j.find("queue"); it != j.end()) {
    auto v = StringField("queue", *it);
    if (!v.ok()) return v.status();
    if (v->empty() || v->front() == '/' || v->back() == '/' ||
        v->find_first_not_of(
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_/.") !=
            std::string::npos) {
      return FieldError("queue", *it, "a queue name like 'default' or 'org/team'");
    }
    s->queue = *v;
  }
  return Status::Ok();
}

// The integer fields, replicas and spread: the gang's shape and its rank.
Status ParseSpecShape(const Json& j, JobSpec* s) {
  struct IntSpec {
    const char* field;
    int64_t lo, hi;
    std::function<void(int64_t)> set;
  };
  const IntSpec ints[] = {
      {"max_replicas_per_node", 1, 4096,
       [&](int64_t x) { s->max_replicas_per_node = static_cast<int32_t>(x); }},
      {"priority", -1000000, 1000000, [&](int64_t x) { s->priority = static_cast<int32_t>(x); }},
      {"max_restarts", 0, 1000, [&](int64_t x) { s->max_restarts = static_cast<int32_t>(x); }},
  };
  for (const IntSpec& f : ints) {
    if (auto it = j.find(f.field); it != j.end()) {
      auto v = IntField(f.field, *it, f.lo, f.hi);
      if (!v.ok()) return v.status();
      f.set(*v);
    }
  }
  if (auto it = j.find("replicas"); it != j.end()) {
    CORRAL_RETURN_IF_ERROR(ParseReplicaRange(*it, s));
  }
  if (auto it = j.find("hot_spares"); it != j.end()) {
    if (s->hot_spares > 0) {
      return FieldError("hot_spares", *it, "one of hot_spares and replicas.hot_spares");
    }
    auto k = IntField("hot_spares", *it, 0, 4096);
    if (!k.ok()) return k.status();
    s->hot_spares = static_cast<int32_t>(*k);
  }
  if (auto it = j.find("spread"); it != j.end()) {
    if (!it->is_boolean()) return FieldError("spread", *it, "true or false");
    if (it->get<bool>()) {
      if (s->max_replicas_per_node > 1) {
        return FieldError("spread", *it,
                          "not with max_replicas_per_node above 1 (spread means one replica per "
                          "node)");
      }
      s->max_replicas_per_node = 1;
    }
  }
  return Status::Ok();
}

Status ParseSpecGpuShare(const Json& j, JobSpec* s) {
  if (auto it = j.find("gpu_memory"); it != j.end()) {
    if (!it->is_string() && !it->is_number_integer()) {
      return FieldError("gpu_memory", *it, "a size of GPU memory such as 10G or 4096M");
    }
    auto v = ParseMemoryMb("gpu_memory", ScalarText(*it));
    if (!v.ok()) return v.status();
    if (*v <= 0) return FieldError("gpu_memory", *it, "a size above 0, such as 10G");
    if (s->per_replica.gpu_milli >= kGpuMilli) {
      return FieldError("gpu_memory", *it,
                        "a share of one GPU: give it with gpus below 1 (e.g. 0.25) or alone; "
                        "whole GPUs are exclusive and have all their memory");
    }
    s->per_replica.gpu_memory_mb = *v;
  }
  if (auto it = j.find("gpu_isolation"); it != j.end()) {
    GpuIsolation g;
    if (!it->is_string() || !ParseGpuIsolation(it->get<std::string>(), &g)) {
      return FieldError("gpu_isolation", *it, "\"memory\" (the default) or \"mps\"");
    }
    if (!s->per_replica.IsShare()) {
      return FieldError("gpu_isolation", *it,
                        "only for a share of one GPU (gpus below 1 or gpu_memory)");
    }
    s->per_replica.gpu_isolation = g;
  }
  return Status::Ok();
}

// "cpus": a number of cores (a JSON number or its text) from 0 to 4096.
Status ParseSpecCpus(const Json& j, JobSpec* s) {
  auto it = j.find("cpus");
  if (it == j.end()) return Status::Ok();
  double c = -1;
  if (it->is_number()) {
    c = it->get<double>();
  } else if (it->is_string()) {
    try {
      size_t pos = 0;
      c = std::stod(it->get<std::string>(), &pos);
      if (pos != it->get<std::string>().size()) c = -1;
    } catch (...) {
      c = -1;
    }
  }
  if (!(c >= 0 && c <= 4096)) return FieldError("cpus", *it, "a number of cores from 0 to 4096");
  s->per_replica.cpu_milli = static_cast<int32_t>(c * 1000 + 0.5);
  return Status::Ok();
}

// gpus, the GPU share's fields, cpus, memory and gpu_model: what each replica holds.
Status ParseSpecResources(const Json& j, JobSpec* s) {
  if (auto it = j.find("gpus"); it != j.end()) {
    auto v = ParseGpuCount(*it);
    if (!v.ok()) return v.status();
    s->per_replica.gpu_milli = *v;
  }
  CORRAL_RETURN_IF_ERROR(ParseSpecGpuShare(j, s));
  CORRAL_RETURN_IF_ERROR(ParseSpecCpus(j, s));
  if (auto it = j.find("memory"); it != j.end()) {
    if (!it->is_string() && !it->is_number_integer()) {
      return FieldError("memory", *it, "a size such as 512 (MB), 512M or 16G");
    }
    auto v = ParseMemoryMb("memory", ScalarText(*it));
    if (!v.ok()) return v.status();
    s->per_replica.memory_mb = *v;
  }
  if (auto it = j.find("gpu_model"); it != j.end()) {
    auto v = StringField("gpu_model", *it);
    if (!v.ok()) return v.status();
    s->gpu_model = *v;
  }
  return Status::Ok();
}

// mail_type and mail_user: whom to tell of what.
Status ParseSpecMail(const Json& j, JobSpec* s) {
  if (auto it = j.find("mail_type"); it != j.end()) {
    std::string text;  // "END,FAIL", or a list of types (YAML's [end, fail])
    if (it->is_array()) {
      for (const Json& t : *it) {
        if (!t.is_string()) return FieldError("mail_type", *it, "a list of mail types");
        text += (text.empty() ? "" : ",") + t.get<std::string>();
      }
    } else {
      auto v = StringField("mail_type", *it);
      if (!v.ok()) return v.status();
      text = *v;
    }
    auto events = ParseMailTypes("mail_type", text);
    if (!events.ok()) return events.status();
    s->notify.events = *events;
  }
  if (auto it = j.find("mail_user"); it != j.end()) {
    auto v = StringField("mail_user", *it);
    if (!v.ok()) return v.status();
    if (Status st = ValidateMailUser("mail_user", *v); !st.ok()) return st;
    s->notify.mail_user = *v;
  }
  return Status::Ok();
}

// datasets, stage_out and node_labels: what the job carries and where it may run.
Status ParseSpecPlacementAndData(const Json& j, JobSpec* s) {
  if (auto it = j.find("datasets"); it != j.end()) {
    auto v = ParseDatasetRefs("datasets", *it);
    if (!v.ok()) return v.status();
    s->datasets = std::move(*v);
  }
  if (auto it = j.find("stage_out"); it != j.end()) {
    auto v = ParseStageOutJson("stage_out", *it);
    if (!v.ok()) return v.status();
    s->stage_out = std::move(*v);
  }
  if (auto it = j.find("node_labels"); it != j.end()) {
    auto v = StringMapField("node_labels", *it);
    if (!v.ok()) return v.status();
    s->node_labels = *v;
  }
  return Status::Ok();
}

// A duration field (a string such as 90s or an integer of seconds), if present.
Status ParseSpecDuration(const Json& j, const char* field, const char* want, int64_t* out) {
  auto it = j.find(field);
  if (it == j.end()) return Status::Ok();
  if (!it->is_string() && !it->is_number_integer()) return FieldError(field, *it, want);
  auto v = ParseDuration(field, ScalarText(*it));
  if (!v.ok()) return v.status();
  *out = *v;
  return Status::Ok();
}

// A boolean field, if present.
Status ParseSpecBool(const Json& j, const char* field, bool* out) {
  auto it = j.find(field);
  if (it == j.end()) return Status::Ok();
  if (!it->is_boolean()) return FieldError(field, *it, "true or false");
  *out = it->get<bool>();
  return Status::Ok();
}

// preemptible, hold, kind, notebook and batch.
Status ParseSpecKindAndFlags(const Json& j, JobSpec* s) {
  CORRAL_RETURN_IF_ERROR(ParseSpecBool(j, "preemptible", &s->preemptible));
  CORRAL_RETURN_IF_ERROR(ParseSpecBool(j, "hold", &s->hold));
  if (auto it = j.find("kind"); it != j.end()) {
    if (!it->is_string() || (*it != "job" && *it != "interactive")) {
      return FieldError("kind", *it, "\"job\" or \"interactive\"");
    }
    s->interactive = *it == "interactive";
  }
  if (auto it = j.find("notebook"); it != j.end()) {
    CORRAL_RETURN_IF_ERROR(ParseSpecBool(j, "notebook", &s->notebook));
    if (s->notebook && !s->interactive) {
      return FieldError("notebook", *it, "false: a notebook is a session (kind \"interactive\")");
    }
  }
  return ParseSpecBool(j, "batch", &s->batch);
}

// checkpoint_signal, tasks_per_replica, array and dependency: how the job is run and released.
Status ParseSpecLaunch(const Json& j, JobSpec* s) {
  if (auto it = j.find("checkpoint_signal"); it != j.end()) {
    auto v = ParseSignal("checkpoint_signal", ScalarText(*it));
    if (!v.ok()) return v.status();
    s->checkpoint_signal = *v;
  }
  if (auto it = j.find("tasks_per_replica"); it != j.end()) {
    if (it->is_string() && it->get<std::string>() == "gpu") {
      s->tasks_per_replica = -1;
    } else {
      auto v = IntField("tasks_per_replica", *it, 1, 1024);
      if (!v.ok()) {
        return FieldError("tasks_per_replica", *it,
                          "an integer from 1 to 1024, or \"gpu\" (one per GPU)");
      }
      s->tasks_per_replica = static_cast<int32_t>(*v);
    }
  }
  if (auto it = j.find("array"); it != j.end()) {
    if (!it->is_string() && !it->is_number_integer()) {
      return FieldError("array", *it, "indices like \"0-999%8\"");
    }
    auto a = ParseArray(ScalarText(*it));
    if (!a.ok()) return a.status();
    s->array = ScalarText(*it);
  }
  if (auto it = j.find("dependency"); it != j.end()) {
    if (!it->is_string()) return FieldError("dependency", *it, "a string like \"afterok:12\"");
    auto d = ParseDependencies(it->get<std::string>());
    if (!d.ok()) return d.status();
    s->dependencies = *d;
  }
  return Status::Ok();
}

// Fields each valid alone that do not go together.
Status CheckSpecCombinations(const JobSpec& s) {
  if (s.interactive && !s.array.empty()) {
    return InvalidArgument("field 'array': an interactive session is one job; drop array or kind");
  }
  if (s.IsElastic() && !s.array.empty()) {
    return InvalidArgument(
        "field 'replicas': a range (MIN:MAX) makes one elastic job; an array's elements are "
        "separate jobs, want one number or no array");
  }
  if (s.IsElastic() && s.interactive) {
    return InvalidArgument(
        "field 'replicas': a range (MIN:MAX) is for elastic jobs; an interactive session runs "
        "on a fixed allocation, want one number");
  }
  return CheckHotSpares(s);
}

}  // namespace

// The steps in the order the fields were always checked, so that a spec with several errors
// is told the same first one.
Result<JobSpec> ParseJobSpec(const Json& j) {
  if (!j.is_object()) return InvalidArgument("job spec: want a JSON/YAML object, got " + Dump(j));
  CORRAL_RETURN_IF_ERROR(CheckSpecFieldsKnown(j));
  JobSpec s;
  CORRAL_RETURN_IF_ERROR(ParseSpecIdentity(j, &s));
  CORRAL_RETURN_IF_ERROR(ParseSpecShape(j, &s));
  CORRAL_RETURN_IF_ERROR(ParseSpecResources(j, &s));
  if (auto it = j.find("reservation"); it != j.end()) {
    auto v = StringField("reservation", *it);
    if (!v.ok()) return v.status();
    s.reservation = *v;
  }
  CORRAL_RETURN_IF_ERROR(ParseSpecMail(j, &s));
  CORRAL_RETURN_IF_ERROR(ParseSpecPlacementAndData(j, &s));
  CORRAL_RETURN_IF_ERROR(ParseSpecDuration(
      j, "time_limit", "a duration such as 90s, 15m, 2h or 1:30:00", &s.time_limit_ms));
  CORRAL_RETURN_IF_ERROR(
      ParseSpecDuration(j, "grace_period", "a duration such as 10s or 2m", &s.grace_ms));
  CORRAL_RETURN_IF_ERROR(ParseSpecKindAndFlags(j, &s));
  CORRAL_RETURN_IF_ERROR(ParseSpecLaunch(j, &s));
  CORRAL_RETURN_IF_ERROR(ParseContainerFields(j, &s.container));
  CORRAL_RETURN_IF_ERROR(CheckSpecCombinations(s));
  return s;
}

Status ValidateQueue(const QueueConfig& q) {
  if (q.name.empty() || q.name.size() > 128 || q.name.front() == '/' || q.name.back() == '/' ||
      q.name.find("//") != std::string::npos) {
    return InvalidArgument("queue name: got \"" + q.name +
                           "\", want path segments like org/team (at most 128 characters)");
  }
  for (char c : q.name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '/' && c != '-' && c != '_' &&
        c != '.') {
      return InvalidArgument("queue name: got \"" + q.name +
                             "\", want letters, digits, '-', '_', '.' and '/'");
    }
  }
  if (q.quota_gpus < 0) {
    return InvalidArgument("field 'quota_gpus': got " + std::to_string(q.quota_gpus) +
                           ", want an integer >= 0");
  }
  if (q.limit_gpus < -1) {
    return InvalidArgument("field 'limit_gpus': got " + std::to_string(q.limit_gpus) +
                           ", want -1 (no limit) or an integer >= 0");
  }
  if (q.limit_gpus >= 0 && q.limit_gpus < q.quota_gpus) {
    return InvalidArgument("field 'limit_gpus': " + std::to_string(q.limit_gpus) +
                           " is below quota_gpus " + std::to_string(q.quota_gpus));
  }
  if (!(q.weight > 0) || q.weight > 1e6) {
    return InvalidArgument("field 'weight': got " + std::to_string(q.weight) +
                           ", want a number > 0");
  }
  if (q.max_grace_ms < 0 || q.max_grace_ms > 7 * kDay) {
    return InvalidArgument("field 'max_grace_ms': got " + std::to_string(q.max_grace_ms) +
                           ", want 0 (no limit) to a week in milliseconds");
  }
  return Status::Ok();
}

}  // namespace corral
