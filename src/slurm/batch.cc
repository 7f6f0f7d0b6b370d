#include "slurm/batch.h"

#include <charconv>
#include <csignal>
#include <sstream>

#include "core/spec.h"
#include "slurm/patterns.h"

namespace corral::slurm {
namespace {

bool ParseInt(const std::string& s, int64_t* out) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && r.ec == std::errc{} && r.ptr == s.data() + s.size();
}

Status Bad(const std::string& option, const std::string& value, const std::string& want) {
  return InvalidArgument("option --" + option + ": got \"" + value + "\", want " + want);
}

Result<int64_t> PositiveOption(const ParsedOptions& o, const std::string& option, int64_t max) {
  const std::string v = o.Get(option);
  int64_t n = 0;
  if (!ParseInt(v, &n) || n < 1 || n > max) {
    return Bad(option, v, "a whole number from 1 to " + std::to_string(max));
  }
  return n;
}

// "2" or "2-4": Slurm's min-max, an elastic job that starts on as many nodes of the range as
// fit (docs/elastic.md). Returns the minimum; `max` gets the maximum.
Result<int64_t> NodesOption(const ParsedOptions& o, int64_t* max) {
  std::string v = o.Get("nodes");
  auto dash = v.find('-');
  std::string min = dash == std::string::npos ? v : v.substr(0, dash);
  int64_t n = 0, m = 0;
  if (!ParseInt(min, &n) || n < 1 || n > 10000 ||
      (dash != std::string::npos && (!ParseInt(v.substr(dash + 1), &m) || m < n))) {
    return Bad("nodes", v, "a node count such as 2, or a range MIN-MAX such as 2-4");
  }
  *max = dash == std::string::npos ? n : m;
  return n;
}

// --gres=gpu:2, gpu:a100:2, gpu (one), or mps:N (N percent of one GPU, through MPS: a share).
// Other resources are not GPUs and not supported.
Status ParseGres(const std::string& v, int64_t* gpus, std::string* model, int32_t* mps_milli) {
  const std::string want = "gpu:N, gpu:TYPE:N or mps:PERCENT, e.g. gpu:4, gpu:a100:4 or mps:25";
  if (v.find(',') != std::string::npos) return Bad("gres", v, want + " (one resource only)");
  if (v.rfind("mps:", 0) == 0) {
    int64_t pct = 0;
    if (!ParseInt(v.substr(4), &pct) || pct < 1 || pct > 99) {
      return Bad("gres", v, "mps:PERCENT with PERCENT from 1 to 99 (a share of one GPU)");
    }
    *mps_milli = static_cast<int32_t>(pct * 10);
    return Status::Ok();
  }
  if (v.rfind("gpu", 0) != 0) return Bad("gres", v, want);
  if (v == "gpu") {
    *gpus = 1;
    return Status::Ok();
  }
  if (v[3] != ':') return Bad("gres", v, want);
  std::string rest = v.substr(4);
  auto colon = rest.rfind(':');
  std::string count = colon == std::string::npos ? rest : rest.substr(colon + 1);
  if (colon != std::string::npos) *model = rest.substr(0, colon);
  int64_t n = 0;
  if (!ParseInt(count, &n) || n < 0 || n > 1024) {
    if (colon == std::string::npos && !count.empty() && !std::isdigit(count[0])) {
      *model = count;  // gpu:a100 = one a100
      *gpus = 1;
      return Status::Ok();
    }
    return Bad("gres", v, want);
  }
  *gpus = n;
  return Status::Ok();
}

// "[B:|R:]SIG[@SECONDS]"; the default lead time is Slurm's 60 s.
struct SignalOption {
  int32_t signal = 0;
  int64_t seconds = 60;
  bool batch_shell = false;
};
Result<SignalOption> ParseSignalOption(const std::string& v) {
  const std::string want = "[B:]SIGNAL[@SECONDS] such as USR1@90 or B:USR1@120";
  SignalOption s;
  std::string rest = v;
  if (rest.rfind("B:", 0) == 0) {
    s.batch_shell = true;
    rest = rest.substr(2);
  } else if (rest.rfind("R:", 0) == 0 || rest.rfind("RB:", 0) == 0 || rest.rfind("BR:", 0) == 0) {
    return Bad("signal", v, want + " (R:, reservation ends, has no meaning on Corral)");
  }
  auto at = rest.find('@');
  if (at != std::string::npos) {
    if (!ParseInt(rest.substr(at + 1), &s.seconds) || s.seconds < 0 || s.seconds > 65535) {
      return Bad("signal", v, want);
    }
    rest = rest.substr(0, at);
  }
  auto sig = ParseSignal("signal", rest);
  if (!sig.ok()) return Bad("signal", v, want);
  s.signal = *sig;
  return s;
}

std::string CountsForm(int64_t per_node, int64_t nodes) {
  return std::to_string(per_node) + (nodes > 1 ? "(x" + std::to_string(nodes) + ")" : "");
}

bool ExportedByDefault(const std::string& name) {
  // Variables of the submitting shell that describe that shell, or a job it runs in.
  if (name == "_" || name == "PWD" || name == "OLDPWD" || name == "SHLVL") return false;
  return name.rfind("SLURM_", 0) != 0 && name.rfind("CORRAL_", 0) != 0;
}

Status AddExports(const std::string& v, const SubmitContext& ctx,
                  std::map<std::string, std::string>* env) {
  const std::string want = "ALL, NONE, or a comma-separated list such as ALL,LR=0.1,HOME";
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= v.size()) {
    size_t comma = v.find(',', start);
    items.push_back(
        v.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  bool all = items.empty() || items[0] == "ALL";
  if (all) {
    for (const auto& [k, val] : ctx.environment) {
      if (ExportedByDefault(k)) (*env)[k] = val;
    }
  }
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string& it = items[i];
    if ((it == "ALL" || it == "NONE") && i == 0) continue;
    if (it.empty() || it == "ALL" || it == "NONE" || it[0] == '=') return Bad("export", v, want);
    auto eq = it.find('=');
    if (eq != std::string::npos) {
      (*env)[it.substr(0, eq)] = it.substr(eq + 1);
    } else if (auto e = ctx.environment.find(it); e != ctx.environment.end()) {
      (*env)[it] = e->second;
    }
  }
  return Status::Ok();
}

}  // namespace

Result<DurationMs> ParseSlurmTime(const std::string& option, const std::string& text) {
  const std::string want =
      "MINUTES, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED, e.g. 90 or 1-12:00:00";
  if (text == "UNLIMITED" || text == "INFINITE" || text == "unlimited" || text == "infinite") {
    return DurationMs{0};
  }
  int64_t days = 0;
  std::string rest = text;
  auto dash = text.find('-');
  if (dash != std::string::npos) {
    if (!ParseInt(text.substr(0, dash), &days) || days < 0) return Bad(option, text, want);
    rest = text.substr(dash + 1);
  }
  std::vector<int64_t> parts;
  size_t start = 0;
  while (true) {
    size_t colon = rest.find(':', start);
    int64_t n = 0;
    std::string p =
        rest.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (!ParseInt(p, &n) || n < 0) return Bad(option, text, want);
    parts.push_back(n);
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (parts.size() > 3) return Bad(option, text, want);
  int64_t seconds = 0;
  if (dash != std::string::npos) {  // D-HH[:MM[:SS]]
    int64_t mult[] = {3600, 60, 1};
    for (size_t i = 0; i < parts.size(); ++i) seconds += parts[i] * mult[i];
  } else if (parts.size() == 1) {  // MM
    seconds = parts[0] * 60;
  } else if (parts.size() == 2) {  // MM:SS
    seconds = parts[0] * 60 + parts[1];
  } else {  // HH:MM:SS
    seconds = parts[0] * 3600 + parts[1] * 60 + parts[2];
  }
  seconds += days * 86400;
  if (seconds > 366LL * 86400) return Bad(option, text, want + " (at most 366 days)");
  return DurationMs{seconds * 1000};
}

Result<int64_t> ParseSlurmMemoryMb(const std::string& option, const std::string& text) {
  const std::string want = "a size in MB, or with a K, M, G or T suffix, e.g. 4000 or 16G";
  if (text.empty()) return Bad(option, text, want);
  std::string num = text;
  int64_t mult_kb = 1024;  // default unit MB
  char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(text.back())));
  if (std::isalpha(static_cast<unsigned char>(unit))) {
    num = text.substr(0, text.size() - 1);
    switch (unit) {
      case 'K':
        mult_kb = 1;
        break;
      case 'M':
        mult_kb = 1024;
        break;
      case 'G':
        mult_kb = 1024 * 1024;
        break;
      case 'T':
        mult_kb = 1024LL * 1024 * 1024;
        break;
      default:
        return Bad(option, text, want);
    }
  }
  int64_t n = 0;
  if (!ParseInt(num, &n) || n < 0 || n > (int64_t{1} << 40) / mult_kb) {
    return Bad(option, text, want);
  }
  return (n * mult_kb + 1023) / 1024;
}

std::string WrapScript(const std::string& command) {
  return "#!/bin/sh\n# This script was created by sbatch --wrap.\n\n" + command + "\n";
}

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string Base64(const std::string& bytes) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t v = (static_cast<uint8_t>(bytes[i]) << 16) |
                 (static_cast<uint8_t>(bytes[i + 1]) << 8) | static_cast<uint8_t>(bytes[i + 2]);
    for (int k = 18; k >= 0; k -= 6) out += kAlphabet[(v >> k) & 63];
  }
  if (i + 1 == bytes.size()) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == bytes.size()) {
    uint32_t v = (static_cast<uint8_t>(bytes[i]) << 16) | (static_cast<uint8_t>(bytes[i + 1]) << 8);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

std::string BatchStepProgram(const std::string& script, const std::string& output_shell,
                             const std::string& error_shell, bool append,
                             const std::map<std::string, std::string>& exports) {
  std::string p;
  // Replicas other than 0 hold their nodes until the head stops them when replica 0 ends.
  p += "if [ \"${CORRAL_REPLICA:-0}\" != 0 ]; then\n"
       "  trap 'exit 0' TERM INT HUP USR1 USR2\n"
       "  while :; do sleep 3600 & wait $!; done\n"
       "fi\n";
  for (const auto& [k, v] : exports) p += "export " + k + "=" + ShellQuote(v) + "\n";
  p += "f=$(mktemp \"${TMPDIR:-/tmp}/corral-sbatch.XXXXXX\") || exit 1\n"
       "export CORRAL_SLURM_STEPS=\"$f.steps\"\n"
       "trap 'rm -f \"$f\" \"$f.steps\"' EXIT\n"
       "printf %s " +
       ShellQuote(Base64(script)) + " | base64 -d > \"$f\" && chmod 700 \"$f\" || exit 1\n";
  const std::string redirect = append ? ">>" : ">";
  if (!output_shell.empty()) p += "exec " + redirect + output_shell + " || exit 1\n";
  if (error_shell.empty()) {
    if (!output_shell.empty()) p += "exec 2>&1\n";
  } else {
    p += "exec 2" + redirect + error_shell + " || exit 1\n";
  }
  // Not `exec`: the EXIT trap removes the script when it ends. A signal for the batch step
  // (scancel -b --signal, a stop) is the script's to handle; this shell only outlives it.
  p += "trap : TERM INT HUP USR1 USR2 ALRM\n";
  p += "\"$f\" \"$@\"\n";
  return p;
}

Result<std::string> PyxisImage(const std::string& text) {
  if (text.empty()) return Bad("container-image", text, "an image reference");
  if (text.size() > 5 && text.compare(text.size() - 5, 5, ".sqsh") == 0) {
    return Bad("container-image", text,
               "a registry reference, an OCI archive or an OCI layout directory (Corral does "
               "not run enroot's squashfs images)");
  }
  if (text[0] == '/' || text.rfind("oci:", 0) == 0 || text.rfind("oci-archive:", 0) == 0) {
    return text;
  }
  // [USER@][REGISTRY#]IMAGE[:TAG]: the credentials' user is not Corral's to use; the registry
  // is written "registry/image" in OCI's form.
  std::string ref = text;
  auto hash = ref.find('#');
  auto at = ref.find('@');
  if (at != std::string::npos &&
      (hash == std::string::npos ? ref.find("sha256:", at) != at + 1 : at < hash)) {
    ref = ref.substr(at + 1);
    hash = ref.find('#');
  }
  if (hash != std::string::npos) ref[hash] = '/';
  return ref;
}

Result<Json> PyxisMounts(const std::string& text) {
  Json mounts = Json::array();
  std::string rest = text;
  while (!rest.empty()) {
    auto comma = rest.find(',');
    std::string one = rest.substr(0, comma);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    if (one.empty()) continue;
    std::vector<std::string> parts;
    for (size_t s = 0;;) {
      auto c = one.find(':', s);
      parts.push_back(one.substr(s, c - s));
      if (c == std::string::npos) break;
      s = c + 1;
    }
    if (parts.size() > 3) return Bad("container-mounts", one, "SRC[:DST[:FLAGS]]");
    std::string dst = parts.size() >= 2 ? parts[1] : parts[0];
    bool ro = false;
    if (parts.size() == 3) {
      for (size_t s = 0;;) {  // "ro+rprivate": only ro/rw matter to Corral
        auto plus = parts[2].find('+', s);
        std::string flag = parts[2].substr(s, plus - s);
        if (flag == "ro") ro = true;
        if (plus == std::string::npos) break;
        s = plus + 1;
      }
    }
    mounts.push_back(parts[0] + ":" + dst + (ro ? ":ro" : ""));
  }
  return mounts;
}

// pyxis's options onto the spec's container fields. A batch script in a container runs with
// its submit directory mounted at the same path (its output files are written there), unless
// --container-workdir says where it starts.
Status AddContainerOptions(const ParsedOptions& o, const std::string& workdir, Json* spec,
                           BatchSubmission* sub) {
  if (!o.Has("container-image")) {
    for (const char* opt : {"container-mounts", "container-workdir", "container-writable",
                            "no-container-mount-home"}) {
      if (o.Has(opt)) {
        return InvalidArgument(std::string("option --") + opt + ": needs --container-image");
      }
    }
    return Status::Ok();
  }
  auto image = PyxisImage(o.Get("container-image"));
  if (!image.ok()) return image.status();
  (*spec)["image"] = *image;
  Json mounts = Json::array();
  if (o.Has("container-mounts")) {
    auto m = PyxisMounts(o.Get("container-mounts"));
    if (!m.ok()) return m.status();
    mounts = *m;
  }
  if (o.Has("container-workdir")) {
    (*spec)["container_workdir"] = o.Get("container-workdir");
  } else if (!workdir.empty()) {
    mounts.push_back(workdir + ":" + workdir);
  }
  if (!mounts.empty()) (*spec)["mounts"] = mounts;
  if (o.Has("container-writable")) (*spec)["container_writable"] = true;
  if (o.Has("no-container-mount-home")) (*spec)["container_mount_home"] = false;
  if (o.Has("container-name")) {
    sub->warnings.push_back("--container-name: Corral does not keep named containers; ignored");
  }
  return Status::Ok();
}

Result<BatchSubmission> BuildBatchSpec(const ParsedOptions& o, const SubmitContext& ctx,
                                       bool strict) {
  BatchSubmission sub;
  sub.parsable = o.Has("parsable");
  if (!o.unknown.empty()) {
    std::string names;
    for (const std::string& u : o.unknown) names += (names.empty() ? "" : ", ") + u;
    if (strict) {
      return InvalidArgument("unknown option(s): " + names +
                             " (without --strict they are ignored with a warning)");
    }
    sub.warnings.push_back("ignoring unknown option(s): " + names);
  }
  if (ctx.script.rfind("#!", 0) != 0) {
    return InvalidArgument(
        "the script does not look like a batch script: its first line must start with #! "
        "followed by the path to an interpreter, e.g. #!/bin/bash");
  }
  Json spec = Json::object();
  std::map<std::string, std::string> env;
  std::map<std::string, std::string> exports;

  // Layout: nodes -> replicas; tasks per node and CPUs per task -> CPUs per replica.
  int64_t nodes = 1;
  int64_t max_nodes = 1;
  if (o.Has("nodes")) {
    auto n = NodesOption(o, &max_nodes);
    if (!n.ok()) return n.status();
    nodes = *n;
  }
  int64_t tasks_per_node = 1;
  int64_t ntasks = 0;
  if (o.Has("ntasks")) {
    auto n = PositiveOption(o, "ntasks", 1'000'000);
    if (!n.ok()) return n.status();
    ntasks = *n;
  }
  if (o.Has("ntasks-per-node")) {
    auto n = PositiveOption(o, "ntasks-per-node", 4096);
    if (!n.ok()) return n.status();
    tasks_per_node = *n;
    if (ntasks > 0 && ntasks > tasks_per_node * nodes) {
      return InvalidArgument("option --ntasks: " + std::to_string(ntasks) + " tasks do not fit " +
                             std::to_string(nodes) + " node(s) x " +
                             std::to_string(tasks_per_node) + " (--ntasks-per-node)");
    }
  } else if (ntasks > 0) {
    if (ntasks < nodes) {
      return InvalidArgument("option --ntasks: " + std::to_string(ntasks) +
                             " is fewer than --nodes " + std::to_string(nodes) +
                             "; want at least one task per node");
    }
    tasks_per_node = (ntasks + nodes - 1) / nodes;
  }
  if (ntasks == 0) ntasks = tasks_per_node * nodes;
  int64_t cpus_per_task = 1;
  if (o.Has("cpus-per-task")) {
    auto n = PositiveOption(o, "cpus-per-task", 4096);
    if (!n.ok()) return n.status();
    cpus_per_task = *n;
    exports["SLURM_CPUS_PER_TASK"] = std::to_string(cpus_per_task);
  }
  const int64_t cpus = cpus_per_task * tasks_per_node;
  if (cpus > 4096) {
    return InvalidArgument("options --cpus-per-task x --ntasks-per-node: " + std::to_string(cpus) +
                           " CPUs per node, want at most 4096");
  }
  if (max_nodes > nodes) {
    spec["replicas"] = Json{{"min", nodes}, {"max", max_nodes}};
  } else {
    spec["replicas"] = nodes;
  }
  // Slurm's nodes are distinct machines: one replica per node.
  if (max_nodes > 1) spec["max_replicas_per_node"] = 1;
  spec["cpus"] = cpus;

  // GPUs per node: --gpus-per-node, --gres=gpu:N, --gpus-per-task x tasks, or --gpus / nodes.
  int64_t gpus = 0;
  std::string model;
  int given = 0;
  if (o.Has("gpus-per-node")) {
    ++given;
    std::string v = o.Get("gpus-per-node");
    auto colon = v.rfind(':');
    if (colon != std::string::npos) {
      model = v.substr(0, colon);
      v = v.substr(colon + 1);
    }
    if (!ParseInt(v, &gpus) || gpus < 0 || gpus > 1024) {
      return Bad("gpus-per-node", o.Get("gpus-per-node"), "N or TYPE:N, e.g. 8 or a100:8");
    }
  }
  int32_t share_milli = 0;  // a share of one GPU (--gres=mps:N, --gpus 0.5)
  bool mps = false;
  if (o.Has("gres")) {
    ++given;
    CORRAL_RETURN_IF_ERROR(ParseGres(o.Get("gres"), &gpus, &model, &share_milli));
    mps = share_milli > 0;
  }
  if (o.Has("gpus-per-task")) {
    ++given;
    int64_t per_task = 0;
    if (!ParseInt(o.Get("gpus-per-task"), &per_task) || per_task < 0 || per_task > 1024) {
      return Bad("gpus-per-task", o.Get("gpus-per-task"),
                 "a whole number of GPUs (Slurm has no fractions per task; for a share of one "
                 "GPU use --gpus 0.5 with one task, or --gres=mps:50)");
    }
    gpus = per_task * tasks_per_node;
  }
  if (o.Has("gpus") && o.Get("gpus").find('.') != std::string::npos) {
    ++given;
    auto m = ParseGpuCount(Json(o.Get("gpus")));
    if (!m.ok() || *m >= kGpuMilli || *m % kGpuMilli == 0) {
      return Bad("gpus", o.Get("gpus"),
                 "a whole number of GPUs, or a share of one GPU below 1 (e.g. 0.25) for a "
                 "single-node job");
    }
    if (nodes != 1) {
      return Bad("gpus", o.Get("gpus"), "a share of one GPU only with one node (--nodes 1)");
    }
    share_milli = *m;
  } else if (o.Has("gpus")) {
    ++given;
    int64_t total = 0;
    if (!ParseInt(o.Get("gpus"), &total) || total < 0 || total % nodes != 0) {
      return Bad("gpus", o.Get("gpus"),
                 "a whole number of GPUs that divides evenly over the " + std::to_string(nodes) +
                     " node(s)");
    }
    gpus = total / nodes;
  }
  if (given > 1) {
    return InvalidArgument(
        "options --gpus-per-node, --gres, --gpus-per-task and --gpus: give only one of them");
  }
  if (gpus > 0) spec["gpus"] = gpus;
  if (share_milli > 0) {
    spec["gpus"] = share_milli / static_cast<double>(kGpuMilli);
    if (mps) spec["gpu_isolation"] = "mps";
  }
  if (!model.empty()) spec["gpu_model"] = model;
  if (o.Has("gpus-per-node") || o.Has("gres")) {
    exports["SLURM_GPUS_PER_NODE"] = std::to_string(gpus);
  }

  // Memory per node.
  int mem_given = o.Has("mem") + o.Has("mem-per-cpu") + o.Has("mem-per-gpu");
  if (mem_given > 1) {
    return InvalidArgument("options --mem, --mem-per-cpu and --mem-per-gpu: give only one");
  }
  int64_t mem_mb = 0;
  if (o.Has("mem")) {
    auto m = ParseSlurmMemoryMb("mem", o.Get("mem"));
    if (!m.ok()) return m.status();
    mem_mb = *m;  // 0: all of the node's memory; Corral then asks for none in particular
    exports["SLURM_MEM_PER_NODE"] = std::to_string(mem_mb);
  } else if (o.Has("mem-per-cpu")) {
    auto m = ParseSlurmMemoryMb("mem-per-cpu", o.Get("mem-per-cpu"));
    if (!m.ok()) return m.status();
    mem_mb = *m * cpus;
    exports["SLURM_MEM_PER_CPU"] = std::to_string(*m);
  } else if (o.Has("mem-per-gpu")) {
    auto m = ParseSlurmMemoryMb("mem-per-gpu", o.Get("mem-per-gpu"));
    if (!m.ok()) return m.status();
    if (gpus == 0) {
      return InvalidArgument("option --mem-per-gpu: the job asks for no GPUs");
    }
    mem_mb = *m * gpus;
    exports["SLURM_MEM_PER_GPU"] = std::to_string(*m);
  }
  if (mem_mb > 0) spec["memory"] = std::to_string(mem_mb) + "M";

  // Time limit and the signal before it.
  DurationMs limit = 0;
  if (o.Has("time")) {
    auto t = ParseSlurmTime("time", o.Get("time"));
    if (!t.ok()) return t.status();
    limit = *t;
  }
  bool ignore_signal_in_shell = false;
  int32_t signal = 0;
  if (o.Has("signal")) {
    auto s = ParseSignalOption(o.Get("signal"));
    if (!s.ok()) return s.status();
    signal = s->signal;
    // Corral sends the checkpoint signal when a run must stop and SIGKILL a grace period
    // later; ending the limit SECONDS early gives Slurm's "SIG at SECONDS before the end".
    spec["checkpoint_signal"] = std::to_string(s->signal);
    spec["grace_period"] = std::to_string(s->seconds) + "s";
    if (limit > 0) {
      if (limit <= s->seconds * 1000) {
        return InvalidArgument("option --signal: " + std::to_string(s->seconds) +
                               " s before the end is not inside --time " + o.Get("time"));
      }
      limit -= s->seconds * 1000;
    }
    ignore_signal_in_shell = !s->batch_shell && s->signal != SIGTERM;
  }
  if (limit > 0) spec["time_limit"] = std::to_string(limit / 1000) + "s";

  if (o.Has("job-name")) {
    spec["name"] = o.Get("job-name");
  } else {
    spec["name"] = ctx.script_name.empty() ? "sbatch" : ctx.script_name;
  }
  // An account is a queue (sacctmgr lists the queues a user may use as accounts): -A selects
  // the queue as -p does, and both must then name the same one.
  const std::string queue = o.Get("partition", o.Get("account", "default"));
  if (o.Has("partition") && o.Has("account") && o.Get("account") != queue) {
    return Bad("account", o.Get("account"),
               "the queue of --partition=" + queue +
                   " or none (an account is a Corral queue; sacctmgr show assoc lists them)");
  }
  if (o.Has("partition") || o.Has("account")) {
    const char* option = o.Has("partition") ? "partition" : "account";
    if (queue.empty() || queue.find(',') != std::string::npos) {
      return Bad(option, queue, std::string("one ") + option + " (a Corral queue), e.g. gpu");
    }
    spec["queue"] = queue;
  }
  if (o.Has("qos")) exports["SLURM_JOB_QOS"] = o.Get("qos");
  if (std::string r = o.Get("reservation"); o.Has("reservation")) {
    if (r.empty() || r.find(',') != std::string::npos)
      return Bad("reservation", r, "one reservation's name (corral reservations list)");
    spec["reservation"] = exports["SLURM_JOB_RESERVATION"] = r;
  }
  if (o.Has("mail-type")) spec["mail_type"] = o.Get("mail-type");
  if (o.Has("mail-user")) spec["mail_user"] = o.Get("mail-user");
  if (o.Has("dataset")) {  // checked by the spec parser and the head, which name the dataset
    spec["datasets"] = Json::array();
    std::stringstream list(o.Get("dataset"));
    for (std::string one; std::getline(list, one, ',');) spec["datasets"].push_back(one);
  }
  if (o.Has("stage-out")) spec["stage_out"] = o.Get("stage-out");  // checked by the spec parser
  exports["SLURM_JOB_ACCOUNT"] = queue;
  if (o.Has("comment")) env["CORRAL_SLURM_COMMENT"] = o.Get("comment");
  if (o.Has("array")) spec["array"] = o.Get("array");
  if (o.Has("dependency")) spec["dependency"] = o.Get("dependency");
  if (o.Has("constraint")) {
    std::string c = o.Get("constraint");
    if (c.empty() || c.find_first_of("&|[]*,!") != std::string::npos) {
      return Bad("constraint", c,
                 "one feature name, taken as the GPU model (e.g. a100); expressions are not "
                 "supported");
    }
    if (!model.empty() && model != c) {
      return InvalidArgument("option --constraint: \"" + c + "\" contradicts the GPU type \"" +
                             model + "\" asked for in --gres/--gpus-per-node");
    }
    spec["gpu_model"] = c;
  }
  if (o.Has("exclusive")) {
    sub.warnings.push_back(
        "--exclusive: Corral does not reserve whole nodes; the job gets the CPUs, GPUs and "
        "memory it asks for");
  }
  if (o.Has("exclude")) {
    sub.warnings.push_back("--exclude: Corral does not exclude nodes by name; ignored");
  }
  if (o.Has("nodelist")) {
    sub.warnings.push_back("--nodelist: Corral places jobs itself; ignored");
  }
  if (o.Has("hold")) spec["hold"] = true;
  // --requeue is what Corral does anyway (a lost or preempted run goes back to the queue);
  // --no-requeue cannot be had.
  if (o.Has("no-requeue")) {
    sub.warnings.push_back("--no-requeue: Corral always requeues runs lost with their node");
  }

  std::string workdir = ctx.cwd;
  if (o.Has("chdir")) {
    std::string d = o.Get("chdir");
    if (d.empty()) return Bad("chdir", d, "a directory");
    workdir = d[0] == '/' ? d : ctx.cwd + "/" + d;
  }
  spec["workdir"] = workdir;
  CORRAL_RETURN_IF_ERROR(AddContainerOptions(o, workdir, &spec, &sub));

  std::string open_mode = o.Get("open-mode", "truncate");
  if (open_mode != "truncate" && open_mode != "append") {
    return Bad("open-mode", open_mode, "append or truncate");
  }
  const bool is_array = o.Has("array");
  std::string output = o.Get("output", is_array ? "slurm-%A_%a.out" : "slurm-%j.out");
  if (ctx.output_to_log && !o.Has("output")) output.clear();
  if (!output.empty()) CORRAL_RETURN_IF_ERROR(ValidatePattern("output", output));
  std::string error;
  if (o.Has("error")) {
    error = o.Get("error");
    CORRAL_RETURN_IF_ERROR(ValidatePattern("error", error));
  }
  const std::string name = spec["name"].get<std::string>();

  CORRAL_RETURN_IF_ERROR(AddExports(o.Get("export", "ALL"), ctx, &env));

  // The batch step's view of the whole allocation (Corral runs one process per node for it).
  exports["SLURM_NTASKS"] = std::to_string(ntasks);
  exports["SLURM_NPROCS"] = std::to_string(ntasks);
  exports["SLURM_NTASKS_PER_NODE"] = CountsForm(tasks_per_node, nodes);
  exports["SLURM_TASKS_PER_NODE"] = CountsForm(tasks_per_node, nodes);
  exports["SLURM_JOB_CPUS_PER_NODE"] = CountsForm(cpus, nodes);
  exports["SLURM_CPUS_ON_NODE"] = std::to_string(cpus);
  exports["SLURM_SUBMIT_DIR"] = ctx.cwd;
  if (!ctx.submit_host.empty()) exports["SLURM_SUBMIT_HOST"] = ctx.submit_host;
  exports["SLURM_CLUSTER_NAME"] = "corral";
  exports["SLURM_JOB_PARTITION"] = queue;
  exports["SLURM_LOCALID"] = "0";
  exports["SLURM_PROCID"] = "0";
  exports["SLURM_NODEID"] = "0";
  if (o.Has("open-mode")) exports["SLURM_OPEN_MODE"] = open_mode == "append" ? "a" : "t";
  if (!env.empty()) spec["env"] = env;

  std::string program = BatchStepProgram(
      ctx.script, output.empty() ? "" : PatternToShell(output, name, ctx.user),
      error.empty() ? "" : PatternToShell(error, name, ctx.user), open_mode == "append", exports);
  if (ignore_signal_in_shell) {
    // Without B: Slurm signals the steps, not the batch shell; Corral signals every process
    // of the run, so the script's shell ignores it (programs that handle it still can).
    std::string trap = "trap '' " + std::to_string(signal) + "\n\"$f\" \"$@\"\n";
    program.replace(program.rfind("\"$f\" \"$@\"\n"), 10, trap);
  }
  // An image need not have bash; the batch step's program is plain sh.
  Json command =
      Json::array({spec.contains("image") ? "/bin/sh" : "/bin/bash", "-c", program, "sbatch"});
  for (const std::string& a : ctx.script_args) command.push_back(a);
  spec["command"] = command;
  spec["batch"] = true;
  sub.tasks_per_node = tasks_per_node;
  sub.spec = std::move(spec);
  return sub;
}

}  // namespace corral::slurm
