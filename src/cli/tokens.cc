// `corral token create|list|revoke`: identities on the cluster (admins only, except that
// anyone may list their own tokens); `corral whoami`: who the head takes the caller for.
#include "cli/commands.h"
#include "cli/table.h"
#include "core/credential.h"

namespace corral::cli {
namespace {

std::string Str(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

int CreateToken(const ParsedArgs& args, CliContext& ctx) {
  if (!args.Has("user")) return UsageError(ctx, "token", "token create needs --user NAME");
  Json body{{"user", args.Get("user")}, {"role", args.Get("role", "user")}};
  if (args.Has("queue")) body["queues"] = args.All("queue");
  if (args.Has("group")) body["groups"] = args.All("group");
  if (args.Has("expires")) body["expires"] = args.Get("expires");
  ApiClient api(ctx);
  auto r = api.CallJson("POST", "/v1/tokens", body.dump());
  if (!r.ok()) {
    PrintError(ctx, "token", r.status().message());
    return kExitError;
  }
  *ctx.out << Str(*r, "token") << "\n";  // alone on stdout, so `$(corral token create ...)` works
  return kExitOk;
}

int List(CliContext& ctx) {
  ApiClient api(ctx);
  auto r = api.CallJson("GET", "/v1/tokens");
  if (!r.ok()) {
    PrintError(ctx, "token", r.status().message());
    return kExitError;
  }
  Table t({"ID", "KIND", "USER", "ROLE", "QUEUES", "EXPIRES"});
  Result<Json> tokens = ArrayIn(*r, "tokens");
  if (!tokens.ok()) {
    PrintError(ctx, "token", tokens.status().message());
    return kExitError;
  }
  for (const Json& j : *tokens) {
    Result<Credential> c = CredentialFromJson(j);
    if (!c.ok()) {
      PrintError(ctx, "token", "the head's answer: " + c.status().message());
      return kExitError;
    }
    std::string queues;
    for (const std::string& q : c->who.queues) queues += (queues.empty() ? "" : ",") + q;
    t.AddRow({c->id, CallerKindName(c->who.kind), c->who.name, RoleName(c->who.role),
              queues.empty() ? "-" : queues,
              c->expires_at ? FormatTimestamp(c->expires_at, false) : "never"});
  }
  *ctx.out << t.Render();
  return kExitOk;
}

int Revoke(const std::vector<std::string>& ids, CliContext& ctx) {
  if (ids.empty())
    return UsageError(ctx, "token", "token revoke needs an ID (see corral token list)");
  ApiClient api(ctx);
  int code = kExitOk;
  for (const std::string& id : ids) {
    auto r = api.CallJson("DELETE", "/v1/tokens/" + id);
    if (!r.ok()) {
      PrintError(ctx, "token", r.status().message());
      code = kExitError;
    } else {
      *ctx.out << "revoked " << id << "\n";
    }
  }
  return code;
}

}  // namespace

int RunToken(const std::vector<std::string>& argv, CliContext& ctx) {
  static const std::vector<FlagDef> kFlags = {{"user", 0, true},
                                              {"role", 0, true},
                                              {"queue", 0, true},
                                              {"group", 0, true},
                                              {"expires", 0, true}};
  auto parsed = ParseArgs(argv, kFlags, false);
  if (!parsed.ok()) return UsageError(ctx, "token", parsed.status().message());
  const ParsedArgs& args = *parsed;
  if (args.Has("help") || args.positional.empty()) {
    *ctx.out << CommandUsage("token") << "\n";
    return args.Has("help") ? kExitOk : kExitUsage;
  }
  const std::string& sub = args.positional[0];
  if (sub == "create") return CreateToken(args, ctx);
  if (sub == "list") return List(ctx);
  if (sub == "revoke") return Revoke({args.positional.begin() + 1, args.positional.end()}, ctx);
  return UsageError(ctx, "token", "unknown subcommand '" + sub + "'");
}

int RunWhoAmI(const std::vector<std::string>& argv, CliContext& ctx) {
  auto parsed = ParseArgs(argv, {{"output", 'o', true}}, false);
  if (!parsed.ok()) return UsageError(ctx, "whoami", parsed.status().message());
  if (parsed->Has("help")) {
    *ctx.out << CommandUsage("whoami") << "\n";
    return kExitOk;
  }
  ApiClient api(ctx);
  auto r = api.CallJson("GET", "/v1/whoami");
  if (!r.ok()) {
    PrintError(ctx, "whoami", r.status().message());
    return kExitError;
  }
  if (parsed->Get("output", "text") == "json") {
    *ctx.out << r->dump(2) << "\n";
    return kExitOk;
  }
  // "ana (user) via unix socket, uid 1001, groups ana,vision"
  std::string line = Str(*r, "user") + " (" + Str(*r, "role");
  if (auto q = r->find("queues"); q != r->end() && q->is_array() && !q->empty()) {
    std::string queues;
    for (const Json& one : *q) queues += (queues.empty() ? "" : ",") + one.get<std::string>();
    line += " of " + queues;
  }
  line += ")";
  if (Str(*r, "via") == "unix_socket") {
    line += " via the local socket, uid " + std::to_string(r->value("uid", 0));
  } else if (Str(*r, "via") == "node_socket") {
    line += " via this node's local socket, uid " + std::to_string(r->value("uid", 0));
  } else {
    line += " via a token";
  }
  if (auto g = r->find("groups"); g != r->end() && g->is_array() && !g->empty()) {
    std::string groups;
    for (const Json& one : *g) groups += (groups.empty() ? "" : ",") + one.get<std::string>();
    line += ", groups " + groups;
  }
  *ctx.out << line << "\n";
  return kExitOk;
}

}  // namespace corral::cli
