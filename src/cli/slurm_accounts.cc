// sacctmgr (read-only), sshare and sprio: Slurm's accounting views of Corral's queues (the
// accounts), users (from the tokens the caller may list) and jobs. The renderers live in
// src/slurm/accounts.h; this file fetches.
#include <algorithm>
#include <ostream>

#include "cli/commands.h"
#include "cli/slurm_errors.h"
#include "core/credential.h"
#include "slurm/accounts.h"
#include "slurm/format.h"
#include "slurm/options.h"

namespace corral::cli {
namespace {

constexpr DurationMs kShareWindowMs = 7 * 24 * 3600 * 1000LL;  // as `corral usage`'s default

void AddUser(std::vector<slurm::AccountUser>& users, const std::string& name, Role role,
             const std::vector<std::string>& groups) {
  auto it = std::find_if(users.begin(), users.end(),
                         [&](const slurm::AccountUser& u) { return u.name == name; });
  if (it == users.end()) {
    users.push_back(slurm::AccountUser{name, role, {}});
    it = users.end() - 1;
  }
  if (role == Role::kAdmin) it->role = role;
  for (const std::string& g : groups) {
    if (std::find(it->groups.begin(), it->groups.end(), g) == it->groups.end())
      it->groups.push_back(g);
  }
}

// The queues ("default" first) and the users: those of the tokens the caller may list (an
// admin: all; a user: their own) and those the queues' access lists name.
Result<slurm::AccountsView> LoadAccounts(CliContext& ctx) {
  ApiClient api(ctx);
  auto queues = api.CallJson("GET", "/v1/queues");
  if (!queues.ok()) return queues.status();
  auto views = QueuesFromAnswer(*queues);
  if (!views.ok()) return views.status();
  slurm::AccountsView v;
  v.queues.push_back(QueueConfig{.name = "default"});
  for (const QueueView& q : *views) {
    if (q.config.name == "default") {
      v.queues[0] = q.config;
    } else {
      v.queues.push_back(q.config);
    }
  }
  auto tokens = api.CallJson("GET", "/v1/tokens");
  if (!tokens.ok()) return tokens.status();
  for (const Json& t : tokens->value("tokens", Json::array())) {
    auto c = CredentialFromJson(t);
    if (!c.ok()) return Internal("cannot read a token from the head: " + c.status().message());
    if (c->who.kind == Caller::Kind::kUser)
      AddUser(v.users, c->who.name, c->who.role, c->who.groups);
  }
  for (const QueueConfig& q : v.queues) {
    for (const std::string& u : q.allowed_users) AddUser(v.users, u, Role::kUser, {});
  }
  std::sort(
      v.users.begin(), v.users.end(),
      [](const slurm::AccountUser& a, const slurm::AccountUser& b) { return a.name < b.name; });
  return v;
}

// Every job live or ended within the fair-share window, added up per queue and user.
Result<slurm::ShareUsage> LoadUsage(CliContext& ctx) {
  const TimeMs from = ctx.now() - kShareWindowMs;
  auto raw = FetchJobs(ctx, "&ended_since=" + std::to_string(from), 0);
  if (!raw.ok()) return raw.status();
  auto jobs = DecodeJobs(*raw);
  if (!jobs.ok()) return jobs.status();
  return slurm::ComputeShareUsage(*jobs, from, ctx.now());
}

slurm::PrintOptions PrintOptionsOf(const slurm::ParsedOptions& o) {
  slurm::PrintOptions p;
  p.header = !o.Has("noheader");
  p.parsable = o.Has("parsable");
  p.parsable2 = o.Has("parsable2");
  return p;
}

}  // namespace

int RunSacctmgr(const std::vector<std::string>& argv, CliContext& ctx) {
  static const std::vector<slurm::OptionDef> kDefs = {
      {"noheader", 'n', slurm::OptionDef::kNone},  {"parsable", 'p', slurm::OptionDef::kNone},
      {"parsable2", 'P', slurm::OptionDef::kNone}, {"associations", 's', slurm::OptionDef::kNone},
      {"immediate", 'i', slurm::OptionDef::kNone}, {"quiet", 'Q', slurm::OptionDef::kNone},
      {"readonly", 'r', slurm::OptionDef::kNone},  {"help", 'h', slurm::OptionDef::kNone}};
  auto o = slurm::ParseOptions(argv, kDefs, false);
  if (!o.ok()) return SlurmError(ctx, "sacctmgr", o.status().message());
  if (!o->unknown.empty()) {
    return SlurmError(ctx, "sacctmgr", "unrecognized option " + o->unknown[0]);
  }
  const std::vector<std::string>& words = o->positional;
  if (o->Has("help") || words.empty()) {
    *ctx.out << "Usage: sacctmgr [-n] [-P|-p] [-s] show|list user|account|assoc [NAMES] "
                "[where] [user=U] [account=A] [format=F[%W],...]\n";
    return words.empty() && !o->Has("help") ? kExitError : kExitOk;
  }
  const std::string command = words[0];
  if (command != "show" && command != "list") {
    return SlurmError(ctx, "sacctmgr",
                      "\"" + command +
                          "\" is not supported: Corral's accounts are its queues (corral queues "
                          "set) and its users those of its tokens (corral token create); show "
                          "and list are");
  }
  if (words.size() < 2) return SlurmError(ctx, "sacctmgr", command + ": name what to show");
  std::vector<std::string> args(words.begin() + 2, words.end());
  bool with_assoc = o->Has("associations");
  std::erase_if(args, [&with_assoc](const std::string& a) {
    const bool w = a == "withassoc" || a == "WithAssoc" || a == "WithAssocs";
    with_assoc = with_assoc || w;
    return w;
  });
  auto v = LoadAccounts(ctx);
  if (!v.ok()) return SlurmError(ctx, "sacctmgr", v.status().message());
  auto out = slurm::RenderSacctmgrShow(*v, words[1], args, with_assoc, PrintOptionsOf(*o));
  if (!out.ok()) return SlurmError(ctx, "sacctmgr", out.status().message());
  *ctx.out << *out;
  return kExitOk;
}

int RunSshare(const std::vector<std::string>& argv, CliContext& ctx) {
  static const std::vector<slurm::OptionDef> kDefs = {
      {"all", 'a', slurm::OptionDef::kNone},
      {"long", 'l', slurm::OptionDef::kNone},
      {"parsable", 'p', slurm::OptionDef::kNone},
      {"parsable2", 'P', slurm::OptionDef::kNone},
      {"noheader", 'n', slurm::OptionDef::kNone},
      {"users", 'u', slurm::OptionDef::kRequired},
      {"accounts", 'A', slurm::OptionDef::kRequired},
      {"format", 'o', slurm::OptionDef::kRequired},
      {"help", 0, slurm::OptionDef::kNone}};
  auto o = slurm::ParseOptions(argv, kDefs, false);
  if (!o.ok()) return SlurmError(ctx, "sshare", o.status().message());
  if (!o->unknown.empty()) return SlurmError(ctx, "sshare", "unrecognized option " + o->unknown[0]);
  if (o->Has("help")) {
    *ctx.out << "Usage: sshare [-a] [-l] [-P|-p] [-n] [-u USERS] [-A ACCOUNTS] [-o FIELDS]\n";
    return kExitOk;
  }
  slurm::SshareOptions so;
  so.fields = slurm::SplitCommaList(o->Get("format"));
  so.long_output = o->Has("long");
  so.all_users = o->Has("all") || o->Get("users") == "all";
  so.users = slurm::SplitCommaList(o->Get("users"));
  if (so.users.empty()) so.users.push_back(ctx.env("USER").value_or(""));  // Slurm: the caller
  so.accounts = slurm::SplitCommaList(o->Get("accounts"));
  auto v = LoadAccounts(ctx);
  if (!v.ok()) return SlurmError(ctx, "sshare", v.status().message());
  auto usage = LoadUsage(ctx);
  if (!usage.ok()) return SlurmError(ctx, "sshare", usage.status().message());
  auto out = slurm::RenderSshare(*v, *usage, so, PrintOptionsOf(*o));
  if (!out.ok()) return SlurmError(ctx, "sshare", out.status().message());
  *ctx.out << *out;
  return kExitOk;
}

int RunSprio(const std::vector<std::string>& argv, CliContext& ctx) {
  static const std::vector<slurm::OptionDef> kDefs = {
      {"noheader", 'h', slurm::OptionDef::kNone},   {"jobs", 'j', slurm::OptionDef::kRequired},
      {"long", 'l', slurm::OptionDef::kNone},       {"norm", 'n', slurm::OptionDef::kNone},
      {"format", 'o', slurm::OptionDef::kRequired}, {"partition", 'p', slurm::OptionDef::kRequired},
      {"user", 'u', slurm::OptionDef::kRequired},   {"help", 0, slurm::OptionDef::kNone}};
  auto o = slurm::ParseOptions(argv, kDefs, false);
  if (!o.ok()) return SlurmError(ctx, "sprio", o.status().message());
  if (!o->unknown.empty()) return SlurmError(ctx, "sprio", "unrecognized option " + o->unknown[0]);
  if (o->Has("help")) {
    *ctx.out << "Usage: sprio [-h] [-l] [-n] [-j IDS] [-u USERS] [-p PARTS] [-o FORMAT]\n";
    return kExitOk;
  }
  auto raw = FetchJobs(ctx, "&state=pending", 0);
  if (!raw.ok()) return SlurmError(ctx, "sprio", raw.status().message());
  auto jobs = DecodeJobs(*raw);
  if (!jobs.ok()) return SlurmError(ctx, "sprio", jobs.status().message());
  const std::vector<std::string> ids = slurm::SplitCommaList(o->Get("jobs"));
  const std::vector<std::string> users = slurm::SplitCommaList(o->Get("user"));
  const std::vector<std::string> parts = slurm::SplitCommaList(o->Get("partition"));
  auto listed = [](const std::vector<std::string>& list, const std::string& v) {
    return list.empty() || std::find(list.begin(), list.end(), v) != list.end();
  };
  std::erase_if(*jobs, [&](const Job& j) {
    return !listed(ids, std::to_string(j.id)) || !listed(users, j.owner) ||
           !listed(parts, j.spec.queue);
  });
  auto v = LoadAccounts(ctx);
  if (!v.ok()) return SlurmError(ctx, "sprio", v.status().message());
  auto usage = LoadUsage(ctx);
  if (!usage.ok()) return SlurmError(ctx, "sprio", usage.status().message());
  slurm::SprioOptions so;
  so.format = o->Get("format");
  so.long_output = o->Has("long");
  so.normalized = o->Has("norm");
  so.show_user = o->Has("user");
  so.header = !o->Has("noheader");
  auto out = slurm::RenderSprio(*v, *usage, *jobs, so, ctx.now());
  if (!out.ok()) return SlurmError(ctx, "sprio", out.status().message());
  *ctx.out << *out;
  return kExitOk;
}

}  // namespace corral::cli
