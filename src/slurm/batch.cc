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

namespace {

using SlurmEnvMap = std::map<std::string, std::string>;

// What a batch job is built from, filled step by step.
struct BatchDraft {
  Json spec = Json::object();
  SlurmEnvMap env;      // the job's environment (--export, --comment)
  SlurmEnvMap exports;  // SLURM_* variables the batch step exports
};

// Nodes -> replicas; tasks per node and CPUs per task -> CPUs per replica.
struct BatchLayout {
  int64_t nodes = 1, max_nodes = 1, tasks_per_node = 1, ntasks = 0, cpus = 1;
};

struct BatchGpus {
  int64_t per_node = 0;
  std::string model;
  int32_t share_milli = 0;  // a share of one GPU (--gres=mps:N, --gpus 0.5)
  bool mps = false;
};

// The checkpoint signal sbatch --signal asks for; without B the batch shell ignores it.
struct BatchSignal {
  int32_t signal = 0;
  bool ignore_in_shell = false;
};

struct BatchOutputs {
  std::string open_mode, output, error;
};

Status CheckBatchOptionsAndScript(const ParsedOptions& o, const SubmitContext& ctx, bool strict,
                                  BatchSubmission* sub) {
  if (!o.unknown.empty()) {
    std::string names;
    for (const std::string& u : o.unknown) names += (names.empty() ? "" : ", ") + u;
    if (strict) {
      return InvalidArgument("unknown option(s): " + names +
                             " (without --strict they are ignored with a warning)");
    }
    sub->warnings.push_back("ignoring unknown option(s): " + names);
  }
  if (ctx.script.rfind("#!", 0) != 0) {
    return InvalidArgument(
        "the script does not look like a batch script: its first line must start with #! "
        "followed by the path to an interpreter, e.g. #!/bin/bash");
  }
  return Status::Ok();
}

// --ntasks and --ntasks-per-node over the nodes: tasks per node and in all.
Status ReadBatchTasks(const ParsedOptions& o, BatchLayout* l) {
  if (o.Has("ntasks")) {
    auto n = PositiveOption(o, "ntasks", 1'000'000);
    if (!n.ok()) return n.status();
    l->ntasks = *n;
  }
  if (o.Has("ntasks-per-node")) {
    auto n = PositiveOption(o, "ntasks-per-node", 4096);
    if (!n.ok()) return n.status();
    l->tasks_per_node = *n;
    if (l->ntasks > 0 && l->ntasks > l->tasks_per_node * l->nodes) {
      return InvalidArgument("option --ntasks: " + std::to_string(l->ntasks) +
                             " tasks do not fit " + std::to_string(l->nodes) + " node(s) x " +
                             std::to_string(l->tasks_per_node) + " (--ntasks-per-node)");
    }
  } else if (l->ntasks > 0) {
    if (l->ntasks < l->nodes) {
      return InvalidArgument("option --ntasks: " + std::to_string(l->ntasks) +
                             " is fewer than --nodes " + std::to_string(l->nodes) +
                             "; want at least one task per node");
    }
    l->tasks_per_node = (l->ntasks + l->nodes - 1) / l->nodes;
  }
  if (l->ntasks == 0) l->ntasks = l->tasks_per_node * l->nodes;
  return Status::Ok();
}

Result<BatchLayout> ReadBatchLayout(const ParsedOptions& o, BatchDraft* d) {
  BatchLayout l;
  if (o.Has("nodes")) {
    auto n = NodesOption(o, &l.max_nodes);
    if (!n.ok()) return n.status();
    l.nodes = *n;
  }
  CORRAL_RETURN_IF_ERROR(ReadBatchTasks(o, &l));
  int64_t cpus_per_task = 1;
  if (o.Has("cpus-per-task")) {
    auto n = PositiveOption(o, "cpus-per-task", 4096);
    if (!n.ok()) return n.status();
    cpus_per_task = *n;
    d->exports["SLURM_CPUS_PER_TASK"] = std::to_string(cpus_per_task);
  }
  l.cpus = cpus_per_task * l.tasks_per_node;
  if (l.cpus > 4096) {
    return InvalidArgument("options --cpus-per-task x --ntasks-per-node: " +
                           std::to_string(l.cpus) + " CPUs per node, want at most 4096");
  }
  if (l.max_nodes > l.nodes) {
    d->spec["replicas"] = Json{{"min", l.nodes}, {"max", l.max_nodes}};
  } else {
    d->spec["replicas"] = l.nodes;
  }
  // Slurm's nodes are distinct machines: one replica per node.
  if (l.max_nodes > 1) d->spec["max_replicas_per_node"] = 1;
  d->spec["cpus"] = l.cpus;
  return l;
}

// --gpus: a whole number over the nodes, or a share of one GPU on one node.
Status ReadBatchGpusOption(const ParsedOptions& o, const BatchLayout& l, BatchGpus* g) {
  const std::string v = o.Get("gpus");
  if (v.find('.') != std::string::npos) {
    auto m = ParseGpuCount(Json(v));
    if (!m.ok() || *m >= kGpuMilli || *m % kGpuMilli == 0) {
      return Bad("gpus", v,
                 "a whole number of GPUs, or a share of one GPU below 1 (e.g. 0.25) for a "
                 "single-node job");
    }
    if (l.nodes != 1) return Bad("gpus", v, "a share of one GPU only with one node (--nodes 1)");
    g->share_milli = *m;
    return Status::Ok();
  }
  int64_t total = 0;
  if (!ParseInt(v, &total) || total < 0 || total % l.nodes != 0) {
    return Bad("gpus", v,
               "a whole number of GPUs that divides evenly over the " + std::to_string(l.nodes) +
                   " node(s)");
  }
  g->per_node = total / l.nodes;
  return Status::Ok();
}

// GPUs per node: --gpus-per-node, --gres=gpu:N, --gpus-per-task x tasks, or --gpus / nodes.
Result<BatchGpus> ReadBatchGpus(const ParsedOptions& o, const BatchLayout& l) {
  BatchGpus g;
  int given = 0;
  if (o.Has("gpus-per-node")) {
    ++given;
    std::string v = o.Get("gpus-per-node");
    auto colon = v.rfind(':');
    if (colon != std::string::npos) {
      g.model = v.substr(0, colon);
      v = v.substr(colon + 1);
    }
    if (!ParseInt(v, &g.per_node) || g.per_node < 0 || g.per_node > 1024) {
      return Bad("gpus-per-node", o.Get("gpus-per-node"), "N or TYPE:N, e.g. 8 or a100:8");
    }
  }
  if (o.Has("gres")) {
    ++given;
    CORRAL_RETURN_IF_ERROR(ParseGres(o.Get("gres"), &g.per_node, &g.model, &g.share_milli));
    g.mps = g.share_milli > 0;
  }
  if (o.Has("gpus-per-task")) {
    ++given;
    int64_t per_task = 0;
    if (!ParseInt(o.Get("gpus-per-task"), &per_task) || per_task < 0 || per_task > 1024) {
      return Bad("gpus-per-task", o.Get("gpus-per-task"),
                 "a whole number of GPUs (Slurm has no fractions per task; for a share of one "
                 "GPU use --gpus 0.5 with one task, or --gres=mps:50)");
    }
    g.per_node = per_task * l.tasks_per_node;
  }
  if (o.Has("gpus")) {
    ++given;
    CORRAL_RETURN_IF_ERROR(ReadBatchGpusOption(o, l, &g));
  }
  if (given > 1) {
    return InvalidArgument(
        "options --gpus-per-node, --gres, --gpus-per-task and --gpus: give only one of them");
  }
  return g;
}

void AddBatchGpus(const ParsedOptions& o, const BatchGpus& g, BatchDraft* d) {
  if (g.per_node > 0) d->spec["gpus"] = g.per_node;
  if (g.share_milli > 0) {
    d->spec["gpus"] = g.share_milli / static_cast<double>(kGpuMilli);
    if (g.mps) d->spec["gpu_isolation"] = "mps";
  }
  if (!g.model.empty()) d->spec["gpu_model"] = g.model;
  if (o.Has("gpus-per-node") || o.Has("gres")) {
    d->exports["SLURM_GPUS_PER_NODE"] = std::to_string(g.per_node);
  }
}

// Memory per node, from --mem, --mem-per-cpu or --mem-per-gpu.
Status AddBatchMemory(const ParsedOptions& o, int64_t cpus, int64_t gpus, BatchDraft* d) {
  int mem_given = o.Has("mem") + o.Has("mem-per-cpu") + o.Has("mem-per-gpu");
  if (mem_given > 1) {
    return InvalidArgument("options --mem, --mem-per-cpu and --mem-per-gpu: give only one");
  }
  int64_t mem_mb = 0;
  if (o.Has("mem")) {
    auto m = ParseSlurmMemoryMb("mem", o.Get("mem"));
    if (!m.ok()) return m.status();
    mem_mb = *m;  // 0: all of the node's memory; Corral then asks for none in particular
    d->exports["SLURM_MEM_PER_NODE"] = std::to_string(mem_mb);
  } else if (o.Has("mem-per-cpu")) {
    auto m = ParseSlurmMemoryMb("mem-per-cpu", o.Get("mem-per-cpu"));
    if (!m.ok()) return m.status();
    mem_mb = *m * cpus;
    d->exports["SLURM_MEM_PER_CPU"] = std::to_string(*m);
  } else if (o.Has("mem-per-gpu")) {
    auto m = ParseSlurmMemoryMb("mem-per-gpu", o.Get("mem-per-gpu"));
    if (!m.ok()) return m.status();
    if (gpus == 0) return InvalidArgument("option --mem-per-gpu: the job asks for no GPUs");
    mem_mb = *m * gpus;
    d->exports["SLURM_MEM_PER_GPU"] = std::to_string(*m);
  }
  if (mem_mb > 0) d->spec["memory"] = std::to_string(mem_mb) + "M";
  return Status::Ok();
}

// Time limit and the signal before it.
Result<BatchSignal> AddBatchTimeAndSignal(const ParsedOptions& o, BatchDraft* d) {
  DurationMs limit = 0;
  if (o.Has("time")) {
    auto t = ParseSlurmTime("time", o.Get("time"));
    if (!t.ok()) return t.status();
    limit = *t;
  }
  BatchSignal out;
  if (o.Has("signal")) {
    auto s = ParseSignalOption(o.Get("signal"));
    if (!s.ok()) return s.status();
    out.signal = s->signal;
    // Corral sends the checkpoint signal when a run must stop and SIGKILL a grace period
    // later; ending the limit SECONDS early gives Slurm's "SIG at SECONDS before the end".
    d->spec["checkpoint_signal"] = std::to_string(s->signal);
    d->spec["grace_period"] = std::to_string(s->seconds) + "s";
    if (limit > 0) {
      if (limit <= s->seconds * 1000) {
        return InvalidArgument("option --signal: " + std::to_string(s->seconds) +
                               " s before the end is not inside --time " + o.Get("time"));
      }
      limit -= s->seconds * 1000;
    }
    out.ignore_in_shell = !s->batch_shell && s->signal != SIGTERM;
  }
  if (limit > 0) d->spec["time_limit"] = std::to_string(limit / 1000) + "s";
  return out;
}

// An account is a queue (sacctmgr lists the queues a user may use as accounts): -A selects
// the queue as -p does, and both must then name the same one.
Result<std::string> AddBatchQueue(const ParsedOptions& o, BatchDraft* d) {
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
    d->spec["queue"] = queue;
  }
  return queue;
}

// The options carried into the spec as they are (their parsers check them) and --reservation.
Status AddBatchPassThrough(const ParsedOptions& o, BatchDraft* d) {
  if (o.Has("qos")) d->exports["SLURM_JOB_QOS"] = o.Get("qos");
  if (std::string r = o.Get("reservation"); o.Has("reservation")) {
    if (r.empty() || r.find(',') != std::string::npos)
      return Bad("reservation", r, "one reservation's name (corral reservations list)");
    d->spec["reservation"] = d->exports["SLURM_JOB_RESERVATION"] = r;
  }
  if (o.Has("mail-type")) d->spec["mail_type"] = o.Get("mail-type");
  if (o.Has("mail-user")) d->spec["mail_user"] = o.Get("mail-user");
  if (o.Has("dataset")) {  // checked by the spec parser and the head, which name the dataset
    d->spec["datasets"] = Json::array();
    std::stringstream list(o.Get("dataset"));
    for (std::string one; std::getline(list, one, ',');) d->spec["datasets"].push_back(one);
  }
  if (o.Has("stage-out")) d->spec["stage_out"] = o.Get("stage-out");  // the spec parser checks
  return Status::Ok();
}

// --constraint: one feature, taken as the GPU model.
Status AddBatchConstraint(const ParsedOptions& o, const std::string& model, BatchDraft* d) {
  if (!o.Has("constraint")) return Status::Ok();
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
  d->spec["gpu_model"] = c;
  return Status::Ok();
}

// Options accepted with a warning: what Corral does instead.
void WarnBatchIgnored(const ParsedOptions& o, BatchSubmission* sub) {
  if (o.Has("exclusive")) {
    sub->warnings.push_back(
        "--exclusive: Corral does not reserve whole nodes; the job gets the CPUs, GPUs and "
        "memory it asks for");
  }
  if (o.Has("exclude")) {
    sub->warnings.push_back("--exclude: Corral does not exclude nodes by name; ignored");
  }
  if (o.Has("nodelist")) sub->warnings.push_back("--nodelist: Corral places jobs itself; ignored");
  // --requeue is what Corral does anyway (a lost or preempted run goes back to the queue);
  // --no-requeue cannot be had.
  if (o.Has("no-requeue")) {
    sub->warnings.push_back("--no-requeue: Corral always requeues runs lost with their node");
  }
}

Result<std::string> BatchWorkdir(const ParsedOptions& o, const SubmitContext& ctx) {
  if (!o.Has("chdir")) return ctx.cwd;
  std::string d = o.Get("chdir");
  if (d.empty()) return Bad("chdir", d, "a directory");
  return d[0] == '/' ? d : ctx.cwd + "/" + d;
}

Result<BatchOutputs> ReadBatchOutputs(const ParsedOptions& o, const SubmitContext& ctx) {
  BatchOutputs out;
  out.open_mode = o.Get("open-mode", "truncate");
  if (out.open_mode != "truncate" && out.open_mode != "append") {
    return Bad("open-mode", out.open_mode, "append or truncate");
  }
  out.output = o.Get("output", o.Has("array") ? "slurm-%A_%a.out" : "slurm-%j.out");
  if (ctx.output_to_log && !o.Has("output")) out.output.clear();
  if (!out.output.empty()) CORRAL_RETURN_IF_ERROR(ValidatePattern("output", out.output));
  if (o.Has("error")) {
    out.error = o.Get("error");
    CORRAL_RETURN_IF_ERROR(ValidatePattern("error", out.error));
  }
  return out;
}

// The batch step's view of the whole allocation (Corral runs one process per node for it).
void AddAllocationExports(const ParsedOptions& o, const BatchLayout& l, const SubmitContext& ctx,
                          const std::string& queue, const std::string& open_mode, SlurmEnvMap* e) {
  SlurmEnvMap& x = *e;
  x["SLURM_NTASKS"] = std::to_string(l.ntasks);
  x["SLURM_NPROCS"] = std::to_string(l.ntasks);
  x["SLURM_NTASKS_PER_NODE"] = CountsForm(l.tasks_per_node, l.nodes);
  x["SLURM_TASKS_PER_NODE"] = CountsForm(l.tasks_per_node, l.nodes);
  x["SLURM_JOB_CPUS_PER_NODE"] = CountsForm(l.cpus, l.nodes);
  x["SLURM_CPUS_ON_NODE"] = std::to_string(l.cpus);
  x["SLURM_SUBMIT_DIR"] = ctx.cwd;
  if (!ctx.submit_host.empty()) x["SLURM_SUBMIT_HOST"] = ctx.submit_host;
  x["SLURM_CLUSTER_NAME"] = "corral";
  x["SLURM_JOB_PARTITION"] = queue;
  x["SLURM_LOCALID"] = "0";
  x["SLURM_PROCID"] = "0";
  x["SLURM_NODEID"] = "0";
  if (o.Has("open-mode")) x["SLURM_OPEN_MODE"] = open_mode == "append" ? "a" : "t";
}

// The batch step's command: the script run by the program BatchStepProgram renders.
Json BatchCommand(const SubmitContext& ctx, const BatchOutputs& out, const BatchSignal& sig,
                  const BatchDraft& d) {
  const std::string name = d.spec["name"].get<std::string>();
  std::string program = BatchStepProgram(
      ctx.script, out.output.empty() ? "" : PatternToShell(out.output, name, ctx.user),
      out.error.empty() ? "" : PatternToShell(out.error, name, ctx.user), out.open_mode == "append",
      d.exports);
  if (sig.ignore_in_shell) {
    // Without B: Slurm signals the steps, not the batch shell; Corral signals every process
    // of the run, so the script's shell ignores it (programs that handle it still can).
    std::string trap = "trap '' " + std::to_string(sig.signal) + "\n\"$f\" \"$@\"\n";
    program.replace(program.rfind("\"$f\" \"$@\"\n"), 10, trap);
  }
  // An image need not have bash; the batch step's program is plain sh.
  Json command =
      Json::array({d.spec.contains("image") ? "/bin/sh" : "/bin/bash", "-c", program, "sbatch"});
  for (const std::string& a : ctx.script_args) command.push_back(a);
  return command;
}

}  // namespace

// The steps in the order the options were always checked, so that a submission with several
// errors is told the same first one.
Result<BatchSubmission> BuildBatchSpec(const ParsedOptions& o, const SubmitContext& ctx,
                                       bool strict) {
  BatchSubmission sub;
  sub.parsable = o.Has("parsable");
  CORRAL_RETURN_IF_ERROR(CheckBatchOptionsAndScript(o, ctx, strict, &sub));
  BatchDraft d;
  auto layout = ReadBatchLayout(o, &d);
  if (!layout.ok()) return layout.status();
  auto gpus = ReadBatchGpus(o, *layout);
  if (!gpus.ok()) return gpus.status();
  AddBatchGpus(o, *gpus, &d);
  CORRAL_RETURN_IF_ERROR(AddBatchMemory(o, layout->cpus, gpus->per_node, &d));
  auto signal = AddBatchTimeAndSignal(o, &d);
  if (!signal.ok()) return signal.status();
  d.spec["name"] = o.Has("job-name")         ? o.Get("job-name")
                   : ctx.script_name.empty() ? std::string("sbatch")
                                             : ctx.script_name;
  auto queue = AddBatchQueue(o, &d);
  if (!queue.ok()) return queue.status();
  CORRAL_RETURN_IF_ERROR(AddBatchPassThrough(o, &d));
  d.exports["SLURM_JOB_ACCOUNT"] = *queue;
  if (o.Has("comment")) d.env["CORRAL_SLURM_COMMENT"] = o.Get("comment");
  if (o.Has("array")) d.spec["array"] = o.Get("array");
  if (o.Has("dependency")) d.spec["dependency"] = o.Get("dependency");
  CORRAL_RETURN_IF_ERROR(AddBatchConstraint(o, gpus->model, &d));
  WarnBatchIgnored(o, &sub);
  if (o.Has("hold")) d.spec["hold"] = true;
  auto workdir = BatchWorkdir(o, ctx);
  if (!workdir.ok()) return workdir.status();
  d.spec["workdir"] = *workdir;
  CORRAL_RETURN_IF_ERROR(AddContainerOptions(o, *workdir, &d.spec, &sub));
  auto outputs = ReadBatchOutputs(o, ctx);
  if (!outputs.ok()) return outputs.status();
  CORRAL_RETURN_IF_ERROR(AddExports(o.Get("export", "ALL"), ctx, &d.env));
  AddAllocationExports(o, *layout, ctx, *queue, outputs->open_mode, &d.exports);
  if (!d.env.empty()) d.spec["env"] = d.env;
  d.spec["command"] = BatchCommand(ctx, *outputs, *signal, d);
  d.spec["batch"] = true;
  sub.tasks_per_node = layout->tasks_per_node;
  sub.spec = std::move(d.spec);
  return sub;
}

}  // namespace corral::slurm
