// corral nodes, corral queues.
#include <algorithm>
#include <cmath>
#include <map>
#include <ostream>
#include <set>

#include "cli/commands.h"
#include "cli/table.h"
#include "core/gpu_health.h"
#include "core/spec.h"

namespace corral::cli {

Result<Json> ArrayIn(const Json& answer, const char* key) {
  auto it = answer.find(key);
  if (it == answer.end() || !it->is_array()) {
    return Internal(std::string("the head's answer has no '") + key + "' array");
  }
  return *it;
}

namespace {

std::string Number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

bool OutputJson(const ParsedArgs& args, CliContext& ctx, const std::string& command, int* code) {
  if (!args.Has("output")) return false;
  const std::string o = args.Get("output");
  if (o == "json") return true;
  if (o != "table" && o != "wide") {
    *code = UsageError(ctx, command, "flag -o: got \"" + o + "\", want json or table");
  }
  return false;
}

Result<Json> ListOf(ApiClient& api, const std::string& path, const char* key) {
  auto reply = api.CallJson("GET", path);
  if (!reply.ok()) return reply.status();
  return ArrayIn(*reply, key);
}

// Each element of a listing read back into the type the head answered with.
template <typename T>
Result<std::vector<T>> Decoded(const Json& list, Result<T> (*decode)(const Json&)) {
  std::vector<T> out;
  out.reserve(list.size());
  for (const Json& x : list) {
    auto v = decode(x);
    if (!v.ok()) return Internal("the head's answer: " + v.status().message());
    out.push_back(std::move(*v));
  }
  return out;
}

// `corral nodes` and `corral queues` without a subcommand: GET `path`, then the head's array
// as it came (-o json) or read back into T and drawn as a table.
template <typename T>
int ShowListing(CliContext& ctx, const char* command, const std::string& path, const char* key,
                bool json, Result<T> (*decode)(const Json&),
                std::string (*render)(const std::vector<T>&)) {
  ApiClient api(ctx);
  auto list = ListOf(api, path, key);
  if (!list.ok()) {
    PrintError(ctx, command, list.status().message());
    return kExitError;
  }
  if (json) {
    *ctx.out << list->dump(2) << "\n";
    return kExitOk;
  }
  auto views = Decoded<T>(*list, decode);
  if (!views.ok()) {
    PrintError(ctx, command, views.status().message());
    return kExitError;
  }
  *ctx.out << render(*views);
  return kExitOk;
}

const GpuSample* SampleOf(const NodeView& n, int32_t gpu) {
  for (const GpuSample& s : n.gpu_samples) {
    if (s.index == gpu) return &s;
  }
  return nullptr;
}

int NodeAction(const std::string& action, const std::vector<std::string>& names,
               const ParsedArgs& args, CliContext& ctx) {
  if (names.size() != 1) return UsageError(ctx, "nodes", action + " wants exactly one node name");
  ApiClient api(ctx);
  if (args.Has("gpu")) {  // one GPU of the node
    Json body = Json::object();
    if (args.Has("reason")) body["reason"] = args.Get("reason");
    auto reply = api.CallJson(
        "POST", "/v1/nodes/" + names[0] + "/gpus/" + args.Get("gpu") + "/" + action, body.dump());
    if (!reply.ok()) {
      PrintError(
          ctx, "nodes",
          action + " " + names[0] + " GPU " + args.Get("gpu") + ": " + reply.status().message());
      return kExitError;
    }
    *ctx.out << "Node " << names[0] << " GPU " << args.Get("gpu") << ": "
             << (action == "drain" ? "drained" : "returned") << "\n";
    return kExitOk;
  }
  if (args.Has("reason") && action != "drain") {
    return UsageError(ctx, "nodes", "--reason goes with drain");
  }
  Json body = Json::object();
  if (args.Has("reason")) body["reason"] = args.Get("reason");
  auto reply =
      api.CallJson("POST", "/v1/nodes/" + names[0] + "/" + action, body.empty() ? "" : body.dump());
  if (!reply.ok()) {
    PrintError(ctx, "nodes", action + " " + names[0] + ": " + reply.status().message());
    return kExitError;
  }
  std::string state = "?";
  if (auto n = reply->find("node"); n != reply->end() && n->is_object()) {
    if (auto node = NodeFromJson(*n); node.ok()) state = NodeStateName(node->state());
  }
  *ctx.out << "Node " << names[0] << ": " << state << "\n";
  return kExitOk;
}

// `corral nodes rm NAME`: the node's record and credential go (its agent, if still running,
// registers it again only with the join token).
int RemoveNodeCommand(const std::vector<std::string>& names, CliContext& ctx) {
  if (names.size() != 1) return UsageError(ctx, "nodes", "rm wants exactly one node name");
  ApiClient api(ctx);
  auto reply = api.CallJson("DELETE", "/v1/nodes/" + names[0], "");
  if (!reply.ok()) {
    PrintError(ctx, "nodes", "rm " + names[0] + ": " + reply.status().message());
    return kExitError;
  }
  *ctx.out << "Node " << names[0] << ": removed; its credential is revoked\n";
  return kExitOk;
}

Result<double> ParseNumberFlag(const std::string& flag, const std::string& text, double lo) {
  try {
    size_t pos = 0;
    double x = std::stod(text, &pos);
    if (pos == text.size() && std::isfinite(x) && x >= lo) return x;
  } catch (...) {
  }
  return InvalidArgument("flag --" + flag + ": got \"" + text +
                         "\", want a number >= " + Number(lo));
}

// A whole-number flag of `queues set` into body[key]; `want` says what it takes.
Status SetWholeNumber(const ParsedArgs& args, const char* flag, const char* key,
                      const std::string& want, Json& body) {
  if (!args.Has(flag)) return Status::Ok();
  auto x = ParseNumberFlag(flag, args.Get(flag), 0);
  if (!x.ok() || *x != std::floor(*x)) {
    return InvalidArgument(std::string("flag --") + flag + ": got \"" + args.Get(flag) +
                           "\", want " + want);
  }
  body[key] = static_cast<int64_t>(*x);
  return Status::Ok();
}

// The GPU counts and limits of `queues set` (--quota, --limit, --weight, the per-user ones).
Status SetQueueNumbers(const ParsedArgs& args, Json& body) {
  CORRAL_RETURN_IF_ERROR(
      SetWholeNumber(args, "quota", "quota_gpus", "a whole number of GPUs >= 0", body));
  if (args.Has("limit")) {
    const std::string l = args.Get("limit");
    if (l == "none" || l == "-1" || l == "unlimited") {
      body["limit_gpus"] = -1;
    } else {
      CORRAL_RETURN_IF_ERROR(SetWholeNumber(args, "limit", "limit_gpus",
                                            "a whole number of GPUs >= 0, or none", body));
    }
  }
  if (args.Has("weight")) {
    auto x = ParseNumberFlag("weight", args.Get("weight"), 0);
    if (!x.ok() || *x <= 0) {
      return InvalidArgument("flag --weight: got \"" + args.Get("weight") +
                             "\", want a number > 0");
    }
    body["weight"] = *x;
  }
  CORRAL_RETURN_IF_ERROR(SetWholeNumber(args, "max-pending-per-user", "max_pending_per_user",
                                        "a whole number >= 0 (0: no limit)", body));
  return SetWholeNumber(args, "max-interactive-gpus-per-user", "max_interactive_gpus_per_user",
                        "a whole number of GPUs >= 0 (0: no limit)", body);
}

// The times, sharing and access of `queues set`.
Status SetQueuePolicies(const ParsedArgs& args, Json& body) {
  if (args.Has("max-grace")) {
    auto ms = ParseDuration("max-grace", args.Get("max-grace"));
    if (!ms.ok()) {
      return InvalidArgument("flag --max-grace: got \"" + args.Get("max-grace") +
                             "\", want a duration such as 10m (0: no limit)");
    }
    body["max_grace_ms"] = *ms;
  }
  if (args.Has("gpu-sharing")) {
    const std::string v = args.Get("gpu-sharing");
    if (v != "on" && v != "off" && v != "true" && v != "false") {
      return InvalidArgument("flag --gpu-sharing: got \"" + v + "\", want on or off");
    }
    body["gpu_sharing"] = v == "on" || v == "true";
  }
  if (args.Has("idle-timeout")) {
    auto d = ParseDuration("--idle-timeout", args.Get("idle-timeout"));
    if (!d.ok()) return InvalidArgument(d.status().message() + " (0: never)");
    body["idle_timeout_ms"] = *d;
  }
  if (args.Has("max-wait")) {
    auto d = ParseDuration("--max-wait", args.Get("max-wait"));
    if (!d.ok()) {
      return InvalidArgument(d.status().message() + " (0: the parent queue's or the scheduler's)");
    }
    body["max_wait_ms"] = *d;
  }
  // Repeated to name several; one empty value clears the list (everyone may submit).
  for (const char* flag : {"allow-user", "allow-group"}) {
    if (!args.Has(flag)) continue;
    Json names = Json::array();
    for (const std::string& n : args.All(flag)) {
      if (!n.empty()) names.push_back(n);
    }
    body[std::string(flag) == "allow-user" ? "allowed_users" : "allowed_groups"] = names;
  }
  return Status::Ok();
}

// The PUT sets the whole queue: what was not given is filled from the queue as it is now.
Status FillFromCurrentQueue(ApiClient& api, const std::string& name, Json& body) {
  auto queues = ListOf(api, "/v1/queues", "queues");
  if (!queues.ok()) return queues.status();
  auto views = Decoded<QueueView>(*queues, QueueViewFromJson);
  if (!views.ok()) return views.status();
  for (const QueueView& q : *views) {
    if (q.config.name != name) continue;
    Json current = ToJson(q.config);
    current.erase("name");  // the path names the queue
    for (auto it = current.begin(); it != current.end(); ++it) {
      if (!body.contains(it.key())) body[it.key()] = it.value();
    }
  }
  return Status::Ok();
}

int QueueSet(const ParsedArgs& args, CliContext& ctx) {
  if (args.positional.size() != 2)
    return UsageError(ctx, "queues", "set wants exactly one queue name");
  const std::string name = args.positional[1];
  if (!args.Has("quota") && !args.Has("limit") && !args.Has("weight") &&
      !args.Has("max-pending-per-user") && !args.Has("max-grace") && !args.Has("allow-user") &&
      !args.Has("allow-group") && !args.Has("gpu-sharing") && !args.Has("idle-timeout") &&
      !args.Has("max-wait") && !args.Has("max-interactive-gpus-per-user")) {
    return UsageError(ctx, "queues",
                      "set " + name +
                          ": give at least one of --quota, --limit, --weight, "
                          "--max-pending-per-user, --max-grace, --allow-user, --allow-group, "
                          "--gpu-sharing, --idle-timeout, --max-wait, "
                          "--max-interactive-gpus-per-user");
  }
  Json body = Json::object();
  Status st = SetQueueNumbers(args, body);
  if (st.ok()) st = SetQueuePolicies(args, body);
  if (!st.ok()) return UsageError(ctx, "queues", st.message());
  ApiClient api(ctx);
  if (st = FillFromCurrentQueue(api, name, body); !st.ok()) {
    PrintError(ctx, "queues", st.message());
    return kExitError;
  }
  auto reply = api.CallJson("PUT", "/v1/queues/" + name, body.dump());
  if (!reply.ok()) {
    PrintError(ctx, "queues", "set " + name + ": " + reply.status().message());
    return kExitError;
  }
  std::vector<QueueView> shown;
  if (auto q = reply->find("queue"); q != reply->end() && q->is_object()) {
    auto v = QueueViewFromJson(*q);
    if (!v.ok()) {
      PrintError(ctx, "queues", "the head's answer: " + v.status().message());
      return kExitError;
    }
    shown.push_back(std::move(*v));
  }
  *ctx.out << RenderQueuesTable(shown);
  return kExitOk;
}

}  // namespace

Result<std::vector<NodeView>> NodesFromAnswer(const Json& answer) {
  auto list = ArrayIn(answer, "nodes");
  if (!list.ok()) return list.status();
  return Decoded<NodeView>(*list, NodeViewFromJson);
}

Result<std::vector<QueueView>> QueuesFromAnswer(const Json& answer) {
  auto list = ArrayIn(answer, "queues");
  if (!list.ok()) return list.status();
  return Decoded<QueueView>(*list, QueueViewFromJson);
}

// Each GPU's health in a word: drained (by whom), else its last check's verdict, "-" unchecked.
std::string GpuHealthWord(const NodeView& n, int32_t gpu) {
  if (auto d = n.node.gpu_drains.find(gpu); d != n.node.gpu_drains.end()) {
    return std::string("drained:") + DrainSourceName(d->second.source);
  }
  const GpuSample* s = SampleOf(n, gpu);
  return s != nullptr && s->check > 0 ? GpuHealthName(s->health) : "-";
}

// The node's state in a word, with an admin's drain kept beside a lost agent ("drained+down"):
// the drain still holds when the node comes back, so it must not vanish while it is away.
std::string NodeStateText(const Node& n) {
  std::string state = NodeStateName(n.state());
  if (n.liveness != Liveness::kAlive && n.drain != Drain::kNone) {
    state = std::string(DrainName(n.drain)) + "+" + state;
  }
  return state;
}

// `corral nodes show NAME`: the node, and each of its GPUs on a line.
std::string RenderNodeDetail(const NodeView& n) {
  std::string out = "Node " + n.node.name + ": " + NodeStateText(n.node) + "\n";
  if (!n.node.drain_reason.empty()) out += "  " + n.node.drain_reason + "\n";
  if (!n.node.unhealthy.empty()) out += "  unhealthy: " + n.node.unhealthy + "\n";
  if (!n.reservation.empty()) {
    out += std::string("  ") + (n.maintenance ? "maintenance window " : "reservation ") +
           n.reservation + " (corral reservations)\n";
  }
  Table t({"GPU", "MODEL", "UTIL", "HEALTH", "WHY"});
  for (const Gpu& gpu : n.node.gpus) {
    const GpuSample* s = SampleOf(n, gpu.index);
    std::string why = s != nullptr ? s->health_reason : "";
    if (auto d = n.node.gpu_drains.find(gpu.index); d != n.node.gpu_drains.end())
      why = d->second.reason;
    t.AddRow({std::to_string(gpu.index), gpu.model.empty() ? "-" : gpu.model,
              s != nullptr ? std::to_string(s->utilization_percent) + "%" : "-",
              GpuHealthWord(n, gpu.index), why.empty() ? "-" : why});
  }
  return out + t.Render();
}

std::string RenderNodesTable(const std::vector<NodeView>& nodes) {
  // The image cache's column only where a node has images in it (containers, docs/containers.md).
  const bool images = std::any_of(nodes.begin(), nodes.end(),
                                  [](const NodeView& n) { return n.image_cache.images > 0; });
  std::vector<std::string> columns = {"NAME",       "STATE", "GPUS",   "MODEL", "GPU-UTIL",
                                      "GPU-HEALTH", "CPUS",  "MEMORY", "LABELS"};
  if (images) columns.push_back("IMAGES");
  Table t(columns);
  for (const NodeView& n : nodes) {
    std::vector<std::string> models, util, health, shared;
    std::set<std::string> seen;
    for (const Gpu& gpu : n.node.gpus) {
      if (!gpu.model.empty() && seen.insert(gpu.model).second) models.push_back(gpu.model);
      // A shared GPU: "INDEX:MILLIm/HOLDERS", e.g. 0:750m/3.
      int64_t milli = 0;
      int holders = 0;
      for (const GpuShareHolder& h : n.shares) {
        if (h.gpu != gpu.index) continue;
        milli += h.milli;
        ++holders;
      }
      if (holders > 0) {
        shared.push_back(std::to_string(gpu.index) + ":" + std::to_string(milli) + "m/" +
                         std::to_string(holders));
      }
      const GpuSample* s = SampleOf(n, gpu.index);
      util.push_back(!gpu.healthy   ? "FAIL"
                     : s != nullptr ? std::to_string(s->utilization_percent) + "%"
                                    : "-");
      health.push_back(GpuHealthWord(n, gpu.index));
    }
    // One word when every GPU agrees ("ok"), else each GPU's.
    std::string health_text = health.empty() ? "-"
                              : std::all_of(health.begin(), health.end(),
                                            [&](const std::string& h) { return h == health[0]; })
                                  ? health[0]
                                  : Join(health, ",");
    // Health is not an admin state: a ready node whose GPUs fail their probe shows unhealthy.
    std::string state = NodeStateText(n.node);
    if (!n.node.unhealthy.empty()) state = state == "ready" ? "unhealthy" : state + "+unhealthy";
    // Inside an admin reservation now (Slurm's sinfo: maint, reserved).
    if (!n.reservation.empty()) {
      const std::string word = n.maintenance ? "maint" : "reserved";
      state = state == "ready" ? word : state + "+" + word;
    }
    std::vector<std::string> row = {
        n.node.name,
        state,
        std::to_string(n.gpus_used) + "/" + std::to_string(n.node.gpus.size()) +
            (shared.empty() ? "" : " (shared " + Join(shared, ",") + ")"),
        models.empty() ? "-" : Join(models, ","),
        util.empty() ||
                std::all_of(util.begin(), util.end(), [](const std::string& u) { return u == "-"; })
            ? "-"
            : Join(util, ","),
        health_text,
        FormatCpus(n.node.cpu_milli),
        FormatMemoryMb(n.node.memory_mb),
        FormatLabels(n.node.labels)};
    if (images) {
      // "2 (310M/20G)": images, and the space they take of the cache's limit.
      const ImageCacheReport& c = n.image_cache;
      row.push_back(c.limit_bytes <= 0
                        ? "-"
                        : std::to_string(c.images) + " (" + FormatMemoryMb(c.bytes >> 20) + "/" +
                              FormatMemoryMb(c.limit_bytes >> 20) + ")");
    }
    t.AddRow(row);
  }
  return t.Render();
}

namespace {

// The nearest listed ancestor of a queue ("org" for "org/team/x" when "org/team" is not
// listed); empty: none.
std::string ListedParent(const std::string& name, const std::set<std::string>& names) {
  for (size_t slash = name.rfind('/'); slash != std::string::npos && slash > 0;
       slash = name.rfind('/', slash - 1)) {
    if (names.count(name.substr(0, slash))) return name.substr(0, slash);
  }
  return "";
}

}  // namespace

std::string RenderQueuesTable(const std::vector<QueueView>& queues) {
  // The age bound's column only where a queue sets one.
  const bool max_wait = std::any_of(queues.begin(), queues.end(),
                                    [](const QueueView& q) { return q.config.max_wait_ms > 0; });
  // A tree (a queue listed with its sub-queues): each queue's parent, and what each parent's
  // subtree uses against the parent's quota, which the subtree shares.
  std::set<std::string> names;
  for (const QueueView& q : queues) names.insert(q.config.name);
  std::map<std::string, int64_t> subtree_used;
  bool tree = false;
  for (const QueueView& q : queues) {
    subtree_used[q.config.name] += q.used_gpus;
    const std::string& n = q.config.name;
    for (std::string p = ListedParent(n, names); !p.empty(); p = ListedParent(p, names)) {
      subtree_used[p] += q.used_gpus;
      tree = true;
    }
  }
  std::vector<std::string> header = {"NAME", "QUOTA",   "LIMIT",  "WEIGHT",
                                     "USED", "PENDING", "RUNNING"};
  if (tree) {
    header.insert(header.begin() + 1, "PARENT");
    header.push_back("SUBTREE_USED/QUOTA");
  }
  if (max_wait) header.push_back("MAX_WAIT");
  // Parents before their sub-queues: by path segments ("org/a" right after "org", before
  // "org-x").
  std::vector<const QueueView*> rows;
  for (const QueueView& q : queues) rows.push_back(&q);
  auto segments = [](const std::string& name) {
    std::vector<std::string> out;
    for (size_t from = 0;;) {
      size_t slash = name.find('/', from);
      out.push_back(name.substr(from, slash - from));
      if (slash == std::string::npos) return out;
      from = slash + 1;
    }
  };
  if (tree) {
    std::stable_sort(rows.begin(), rows.end(), [&](const QueueView* a, const QueueView* b) {
      return segments(a->config.name) < segments(b->config.name);
    });
  }
  Table t(header);
  for (const QueueView* v : rows) {
    const QueueView& q = *v;
    const QueueConfig& c = q.config;
    std::vector<std::string> row = {c.name,
                                    std::to_string(c.quota_gpus),
                                    c.limit_gpus < 0 ? "-" : std::to_string(c.limit_gpus),
                                    Number(c.weight),
                                    std::to_string(q.used_gpus),
                                    std::to_string(q.pending),
                                    std::to_string(q.running)};
    if (tree) {
      std::string parent = ListedParent(c.name, names);
      row.insert(row.begin() + 1, parent.empty() ? "-" : parent);
      bool has_subs = false;
      for (auto it = names.lower_bound(c.name + "/");
           it != names.end() && it->rfind(c.name + "/", 0) == 0; ++it) {
        has_subs = true;
        break;
      }
      row.push_back(has_subs
                        ? std::to_string(subtree_used[c.name]) + "/" + std::to_string(c.quota_gpus)
                        : "-");
    }
    if (max_wait) row.push_back(c.max_wait_ms > 0 ? FormatDuration(c.max_wait_ms) : "-");
    t.AddRow(row);
  }
  return t.Render();
}

int RunNodes(const std::vector<std::string>& argv, CliContext& ctx) {
  auto parsed =
      ParseArgs(argv, {{"output", 'o', true}, {"gpu", 0, true}, {"reason", 0, true}}, false);
  if (!parsed.ok()) return UsageError(ctx, "nodes", parsed.status().message());
  const ParsedArgs& args = *parsed;
  if (args.Has("help")) {
    *ctx.out << CommandUsage("nodes") << "\n";
    return kExitOk;
  }
  if (!args.positional.empty()) {
    const std::string& sub = args.positional[0];
    if (sub == "drain" || sub == "undrain") {
      return NodeAction(sub, {args.positional.begin() + 1, args.positional.end()}, args, ctx);
    }
    if (sub == "rm")
      return RemoveNodeCommand({args.positional.begin() + 1, args.positional.end()}, ctx);
    if (sub == "show") {
      if (args.positional.size() != 2) return UsageError(ctx, "nodes", "show wants one node name");
      ApiClient api(ctx);
      auto nodes = ListOf(api, "/v1/nodes", "nodes");
      if (!nodes.ok()) {
        PrintError(ctx, "nodes", nodes.status().message());
        return kExitError;
      }
      for (const Json& n : *nodes) {
        if (!n.is_object() || n.value("name", "") != args.positional[1]) continue;
        if (args.Get("output") == "json") {
          *ctx.out << n.dump(2) << "\n";
          return kExitOk;
        }
        auto view = NodeViewFromJson(n);
        if (!view.ok()) {
          PrintError(ctx, "nodes", "the head's answer: " + view.status().message());
          return kExitError;
        }
        *ctx.out << RenderNodeDetail(*view);
        return kExitOk;
      }
      PrintError(ctx, "nodes", "no node " + args.positional[1]);
      return kExitError;
    }
    return UsageError(ctx, "nodes", "unknown subcommand '" + sub + "'");
  }
  int code = kExitOk;
  bool json = OutputJson(args, ctx, "nodes", &code);
  if (code != kExitOk) return code;
  return ShowListing<NodeView>(ctx, "nodes", "/v1/nodes", "nodes", json, NodeViewFromJson,
                               RenderNodesTable);
}

int RunQueues(const std::vector<std::string>& argv, CliContext& ctx) {
  static const std::vector<FlagDef> kFlags = {{"output", 'o', true},
                                              {"quota", 0, true},
                                              {"limit", 0, true},
                                              {"weight", 0, true},
                                              {"max-pending-per-user", 0, true},
                                              {"max-grace", 0, true},
                                              {"allow-user", 0, true},
                                              {"allow-group", 0, true},
                                              {"gpu-sharing", 0, true},
                                              {"idle-timeout", 0, true},
                                              {"max-wait", 0, true},
                                              {"max-interactive-gpus-per-user", 0, true}};
  auto parsed = ParseArgs(argv, kFlags, false);
  if (!parsed.ok()) return UsageError(ctx, "queues", parsed.status().message());
  const ParsedArgs& args = *parsed;
  if (args.Has("help")) {
    *ctx.out << CommandUsage("queues") << "\n";
    return kExitOk;
  }
  if (!args.positional.empty()) {
    if (args.positional[0] == "set") return QueueSet(args, ctx);
    return UsageError(ctx, "queues", "unknown subcommand '" + args.positional[0] + "'");
  }
  if (args.Has("quota") || args.Has("limit") || args.Has("weight")) {
    return UsageError(ctx, "queues", "--quota, --limit and --weight go with `queues set NAME`");
  }
  int code = kExitOk;
  bool json = OutputJson(args, ctx, "queues", &code);
  if (code != kExitOk) return code;
  return ShowListing<QueueView>(ctx, "queues", "/v1/queues", "queues", json, QueueViewFromJson,
                                RenderQueuesTable);
}

}  // namespace corral::cli
