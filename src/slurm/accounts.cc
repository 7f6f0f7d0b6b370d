#include "slurm/accounts.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "core/usage.h"
#include "slurm/format.h"

namespace corral::slurm {
namespace {

// A column of Slurm's print_fields: its header and width (negative: left-justified).
struct PrintField {
  std::string header;
  int len = 10;
};

std::string PrintTable(const std::vector<PrintField>& fields,
                       const std::vector<std::vector<std::string>>& rows, const PrintOptions& p) {
  auto line = [&](const std::vector<std::string>& values, bool is_header) {
    std::string out;
    for (size_t i = 0; i < fields.size(); ++i) {
      const std::string& v = values[i];
      if (p.parsable || p.parsable2) {
        out += v + (p.parsable || i + 1 < fields.size() ? "|" : "");
        continue;
      }
      const size_t width = static_cast<size_t>(std::abs(fields[i].len));
      std::string cell = v;
      if (cell.size() > width) {
        cell.resize(width);
        if (!is_header && width > 0) cell[width - 1] = '+';  // Slurm marks a cut value
      }
      std::string fill(width - cell.size(), ' ');
      out += (fields[i].len < 0 ? cell + fill : fill + cell) + " ";
    }
    return out + "\n";
  };
  std::string out;
  if (p.header) {
    std::vector<std::string> names;
    for (const PrintField& f : fields) names.push_back(f.header);
    out += line(names, true);
    if (!p.parsable && !p.parsable2) {
      for (const PrintField& f : fields) out += std::string(std::abs(f.len), '-') + " ";
      out += "\n";
    }
  }
  for (const auto& r : rows) out += line(r, false);
  return out;
}

// sacctmgr's columns: the name a format names it by (with the shortest abbreviation Slurm
// takes), its header and width.
struct SacctmgrColumn {
  const char* name;
  size_t min_abbrev;
  const char* header;
  int len;
};
constexpr SacctmgrColumn kSacctmgrColumns[] = {
    {"Account", 3, "Account", 10},
    {"AdminLevel", 2, "Admin", 9},
    {"Clusters", 2, "Cluster", 10},
    {"DefaultAccount", 8, "Def Acct", 10},
    {"DefaultQOS", 8, "Def QOS", 9},
    {"Description", 3, "Descr", 20},
    {"GrpJobs", 4, "GrpJobs", 7},
    {"GrpSubmitJobs", 4, "GrpSubmit", 9},
    {"GrpTRES", 7, "GrpTRES", 13},
    {"GrpTRESMins", 7, "GrpTRESMins", 13},
    {"GrpTRESRunMins", 7, "GrpTRESRunMins", 13},
    {"GrpWall", 4, "GrpWall", 11},
    {"MaxCPUMinsPerJob", 7, "MaxCPUMins", 15},
    {"MaxCPUsPerJob", 7, "MaxCPUs", 9},
    {"MaxJobs", 4, "MaxJobs", 7},
    {"MaxNodesPerJob", 4, "MaxNodes", 11},
    {"MaxSubmitJobs", 4, "MaxSubmit", 9},
    {"MaxTRES", 7, "MaxTRES", 13},
    {"MaxTRESPerNode", 11, "MaxTRESPerNode", 14},
    {"MaxTRESMinsPerJob", 8, "MaxTRESMins", 13},
    {"MaxWallDurationPerJob", 4, "MaxWall", 11},
    {"Organization", 1, "Org", 20},
    {"ParentName", 7, "ParentName", 10},
    {"Partition", 4, "Partition", 10},
    {"Priority", 3, "Priority", 10},
    {"QOSLevel", 3, "QOS", 20},
    {"Share", 1, "Share", 9},
    {"User", 1, "User", 10},
};

// "account%20": the column and, after '%', its width. Matching is Slurm's: the word is a
// case-insensitive prefix of the name at least min_abbrev long.
Result<std::pair<const SacctmgrColumn*, int>> FindSacctmgrColumn(const std::string& word) {
  std::string name = word;
  int width = 0;
  if (size_t pct = word.find('%'); pct != std::string::npos) {
    name = word.substr(0, pct);
    width = std::atoi(word.c_str() + pct + 1);
  }
  const std::string want = AsciiLower(name);
  for (const SacctmgrColumn& c : kSacctmgrColumns) {
    const std::string full = AsciiLower(c.name);
    if (want.size() >= c.min_abbrev && full.compare(0, want.size(), want) == 0) {
      return std::make_pair(&c, width);
    }
  }
  std::string known;
  for (const SacctmgrColumn& c : kSacctmgrColumns)
    known += (known.empty() ? "" : ",") + std::string(c.name);
  return InvalidArgument("format: unknown field \"" + name + "\"; known: " + known);
}

// One association (an account's own when user is "") and what its columns show.
struct Assoc {
  const QueueConfig* queue = nullptr;  // nullptr: Slurm's root account
  const AccountUser* user = nullptr;
};

std::string Parent(const std::string& queue) {
  size_t slash = queue.rfind('/');
  return slash == std::string::npos ? "root" : queue.substr(0, slash);
}

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string DefaultAccount(const AccountsView& v, const AccountUser& u) {
  for (const QueueConfig& q : v.queues) {
    if (q.name == "default" && QueueAdmits(v, u, q.name)) return q.name;
  }
  for (const QueueConfig& q : v.queues) {
    if (QueueAdmits(v, u, q.name)) return q.name;
  }
  return "";
}

std::string AssocValue(const AccountsView& v, const SacctmgrColumn& c, const Assoc& a) {
  const std::string name = c.name;
  const std::string account = a.queue ? a.queue->name : "root";
  if (name == "Clusters") return "corral";
  if (name == "Description" && !a.queue) return "default root account";  // as Slurm's
  if (name == "Account" || name == "Description" || name == "Organization") return account;
  if (name == "ParentName") return a.queue && !a.user ? Parent(account) : "";
  if (name == "User") return a.user ? a.user->name : "";
  if (name == "AdminLevel") {
    if (!a.user) return "";
    return a.user->role == Role::kAdmin ? "Administrator" : "None";
  }
  if (name == "DefaultAccount") return a.user ? DefaultAccount(v, *a.user) : "";
  if (name == "Share") return a.queue && !a.user ? Number(a.queue->weight) : "1";
  if (name == "GrpTRES") {
    return a.queue && !a.user && a.queue->limit_gpus >= 0
               ? "gres/gpu=" + std::to_string(a.queue->limit_gpus)
               : "";
  }
  if (name == "QOSLevel") return "normal";
  return "";
}

struct SacctmgrQuery {
  std::set<std::string> names, users, accounts;
  std::vector<std::string> format;
};

// sacctmgr's words after the entity: bare names, "where", KEY=VALUE filters and format=.
Result<SacctmgrQuery> ParseSacctmgrArgs(const std::vector<std::string>& args) {
  SacctmgrQuery q;
  for (const std::string& arg : args) {
    if (AsciiLower(arg) == "where" || AsciiLower(arg) == "set") continue;
    size_t eq = arg.find('=');
    if (eq == std::string::npos) {
      q.names.insert(arg);
      continue;
    }
    const std::string key = AsciiLower(arg.substr(0, eq));
    const std::vector<std::string> values = SplitCommaList(arg.substr(eq + 1));
    if (key == "format" || key == "fo" || key == "form") {
      q.format.insert(q.format.end(), values.begin(), values.end());
    } else if (key == "name" || key == "names") {
      q.names.insert(values.begin(), values.end());
    } else if (key == "user" || key == "users") {
      q.users.insert(values.begin(), values.end());
    } else if (key == "account" || key == "accounts" || key == "acct" || key == "acc") {
      q.accounts.insert(values.begin(), values.end());
    } else if (key != "cluster" && key != "clusters") {
      return InvalidArgument("unknown condition \"" + arg.substr(0, eq) +
                             "\"; known: name, user, account, cluster, format");
    }
  }
  return q;
}

// The associations to show, root's first, then each account's own and its users'.
std::vector<Assoc> Associations(const AccountsView& v, bool with_accounts, bool with_users) {
  std::vector<Assoc> out;
  if (with_accounts) out.push_back(Assoc{});
  for (const QueueConfig& q : v.queues) {
    if (with_accounts) out.push_back(Assoc{&q, nullptr});
    if (!with_users) continue;
    for (const AccountUser& u : v.users) {
      if (QueueAdmits(v, u, q.name)) out.push_back(Assoc{&q, &u});
    }
  }
  return out;
}

}  // namespace

bool QueueAdmits(const AccountsView& v, const AccountUser& user, const std::string& queue) {
  if (user.role == Role::kAdmin) return true;
  for (size_t end = 0; end != std::string::npos;) {
    end = queue.find('/', end + 1);
    const std::string level = queue.substr(0, end);
    for (const QueueConfig& c : v.queues) {
      if (c.name != level || (c.allowed_users.empty() && c.allowed_groups.empty())) continue;
      bool allowed = std::find(c.allowed_users.begin(), c.allowed_users.end(), user.name) !=
                     c.allowed_users.end();
      for (const std::string& g : user.groups) {
        allowed |= std::find(c.allowed_groups.begin(), c.allowed_groups.end(), g) !=
                   c.allowed_groups.end();
      }
      if (!allowed) return false;
    }
  }
  return true;
}

namespace {

// Slurm's default columns for `sacctmgr show user|account|association` (-s: with associations).
std::vector<std::string> DefaultSacctmgrFormat(bool users, bool accounts, bool with_assoc) {
  if (users) {
    std::vector<std::string> f = {"User", "DefaultA", "Ad"};
    if (with_assoc) {
      for (const char* c : {"Cl", "Acc", "Part", "Share", "Priority", "MaxJ", "MaxN", "MaxCPUs",
                            "MaxS", "MaxW", "MaxCPUMins", "QOS", "DefaultQOS"}) {
        f.push_back(c);
      }
    }
    return f;
  }
  if (accounts) {
    std::vector<std::string> f = {"Acc", "Des", "O"};
    if (with_assoc) {
      for (const char* c :
           {"Cl",      "ParentN", "U",    "Share",      "Priority",   "GrpJ",      "GrpN",
            "GrpCPUs", "GrpMEM",  "GrpS", "GrpWall",    "GrpCPUMins", "MaxJ",      "MaxN",
            "MaxCPUs", "MaxS",    "MaxW", "MaxCPUMins", "QOS",        "DefaultQOS"}) {
        f.push_back(c);
      }
    }
    return f;
  }
  return {"Cluster",     "Account",     "User",    "Part",        "Share",
          "Priority",    "GrpJ",        "GrpTRES", "GrpS",        "GrpWall",
          "GrpTRESMins", "MaxJ",        "MaxTRES", "MaxTRESPerN", "MaxS",
          "MaxW",        "MaxTRESMins", "QOS",     "DefaultQOS",  "GrpTRESRunMins"};
}

// The columns of a format; nullptr for the old limits Corral has no value for (GrpNodes,
// GrpCPUs, GrpMEM, GrpCPUMins), shown empty under their own names as Slurm shows one unset.
Status SacctmgrFields(const std::vector<std::string>& format, std::vector<PrintField>* fields,
                      std::vector<const SacctmgrColumn*>* columns) {
  static const std::map<std::string, std::string> kEmpty = {{"grpn", "GrpNodes"},
                                                            {"grpcpus", "GrpCPUs"},
                                                            {"grpmem", "GrpMem"},
                                                            {"grpcpumins", "GrpCPUMins"}};
  for (const std::string& f : format) {
    auto c = FindSacctmgrColumn(f);
    if (!c.ok()) {
      auto empty = kEmpty.find(AsciiLower(f));
      if (empty == kEmpty.end()) return c.status();
      fields->push_back(PrintField{empty->second, 8});
      columns->push_back(nullptr);
      continue;
    }
    fields->push_back(PrintField{c->first->header, c->second != 0 ? c->second : c->first->len});
    columns->push_back(c->first);
  }
  return Status::Ok();
}

bool PrefixOf(const char* full, const std::string& word, size_t min) {
  return word.size() >= min && std::string(full).compare(0, word.size(), word) == 0;
}

}  // namespace

Result<std::string> RenderSacctmgrShow(const AccountsView& v, const std::string& entity,
                                       const std::vector<std::string>& args, bool with_assoc,
                                       const PrintOptions& p) {
  const std::string e = AsciiLower(entity);
  const bool users = PrefixOf("users", e, 1), accounts = PrefixOf("accounts", e, 2);
  const bool assocs = PrefixOf("associations", e, 3);
  if (!users && !accounts && !assocs) {
    return InvalidArgument("show: unsupported entity \"" + entity +
                           "\" (Corral shows user, account and association)");
  }
  auto q = ParseSacctmgrArgs(args);
  if (!q.ok()) return q.status();
  std::vector<PrintField> fields;
  std::vector<const SacctmgrColumn*> columns;
  Status st = SacctmgrFields(
      q->format.empty() ? DefaultSacctmgrFormat(users, accounts, with_assoc) : q->format, &fields,
      &columns);
  if (!st.ok()) return st;
  // Rows: a user's line (or, with -s, one per association of the user), an account's (or,
  // with -s, its own and its users'), every association with root's first.
  std::vector<Assoc> rows;
  if (users && !with_assoc) {
    for (const AccountUser& u : v.users) rows.push_back(Assoc{nullptr, &u});
  } else {
    rows = Associations(v, !users, true);
    if (accounts && !with_assoc) std::erase_if(rows, [](const Assoc& a) { return a.user; });
  }
  std::vector<std::vector<std::string>> table;
  for (const Assoc& a : rows) {
    const std::string account = a.queue ? a.queue->name : "root";
    const std::string user = a.user ? a.user->name : "";
    const std::string& named = users ? user : account;
    if ((!assocs && !q->names.empty() && !q->names.count(named)) ||
        (!q->users.empty() && !q->users.count(user)) ||
        (!q->accounts.empty() && (!a.queue || !q->accounts.count(account)))) {
      continue;
    }
    std::vector<std::string> row;
    for (const SacctmgrColumn* c : columns) {
      // Without associations a user's line has no account of its own.
      const bool blank =
          c == nullptr || (users && !with_assoc && std::string(c->name) == "Account");
      row.push_back(blank ? "" : AssocValue(v, *c, a));
    }
    table.push_back(std::move(row));
  }
  return PrintTable(fields, table, p);
}

ShareUsage ComputeShareUsage(const std::vector<Job>& jobs, TimeMs from, TimeMs to) {
  ShareUsage u;
  for (const Job& j : jobs) {
    for (const Run& r : j.runs) {
      const double s = RunGpuSecondsIn(r, from, to);
      if (s <= 0) continue;
      u.by_queue[j.spec.queue] += s;
      u.by_queue_user[{j.spec.queue, j.owner}] += s;
      u.total += s;
    }
  }
  return u;
}

namespace {

// A queue's weight over its siblings' (Slurm's NormShares of an account).
double NormShares(const AccountsView& v, const QueueConfig& q) {
  double sum = 0;
  for (const QueueConfig& s : v.queues) {
    if (Parent(s.name) == Parent(q.name)) sum += s.weight;
  }
  return sum > 0 ? q.weight / sum : 0;
}

int UsersIn(const AccountsView& v, const std::string& queue) {
  int n = 0;
  for (const AccountUser& u : v.users) n += QueueAdmits(v, u, queue) ? 1 : 0;
  return n;
}

std::string Fixed(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%f", v);
  return buf;
}

struct SshareColumn {
  const char* name;
  int len;
};
constexpr SshareColumn kSshareColumns[] = {
    {"Account", -20},  {"Cluster", 10},     {"EffectvUsage", 13},
    {"FairShare", 10}, {"GrpTRESMins", 30}, {"GrpTRESRaw", 30},
    {"ID", 6},         {"LevelFS", 10},     {"NormShares", 11},
    {"NormUsage", 11}, {"Partition", 12},   {"RawShares", 10},
    {"RawUsage", 11},  {"TRESRunMins", 30}, {"User", 10},
};

std::string SshareValue(const AccountsView& v, const ShareUsage& u, const std::string& column,
                        const QueueConfig* q, const AccountUser* user) {
  const std::string account = q ? q->name : "root";
  const double usage = !q     ? u.total
                       : user ? (u.by_queue_user.count({account, user->name})
                                     ? u.by_queue_user.at({account, user->name})
                                     : 0)
                              : (u.by_queue.count(account) ? u.by_queue.at(account) : 0);
  const double effective = u.total > 0 ? usage / u.total : 0;
  if (column == "Account") {
    // Slurm's tree: each level one space further in; a user's line under its account.
    const size_t depth = q ? std::count(account.begin(), account.end(), '/') + 1 : 0;
    return std::string(depth + (user ? 1 : 0), ' ') + account;
  }
  if (column == "Cluster") return "corral";
  if (column == "User") return user ? user->name : "";
  if (column == "RawShares") return !q ? "" : user ? "1" : Number(q->weight);
  if (column == "NormShares") {
    if (!q) return Fixed(0);  // Slurm's root: no share of its own
    const int n = UsersIn(v, account);
    return Fixed(user ? (n > 0 ? 1.0 / n : 0) : NormShares(v, *q));
  }
  if (column == "RawUsage") return std::to_string(static_cast<int64_t>(std::llround(usage)));
  if (column == "NormUsage" || column == "EffectvUsage") return Fixed(q ? effective : 1);
  if (column == "FairShare")
    return q && user ? Fixed(FairShareFactor(v, u, account, user->name)) : "";
  if (column == "LevelFS") return "";
  return "";
}

}  // namespace

double FairShareFactor(const AccountsView& v, const ShareUsage& u, const std::string& queue,
                       const std::string& user) {
  auto used = u.by_queue_user.find({queue, user});
  if (u.total <= 0 || used == u.by_queue_user.end()) return 1;
  double shares = 0;
  for (const QueueConfig& q : v.queues) {
    if (q.name == queue) {
      const int n = UsersIn(v, queue);
      shares = NormShares(v, q) / std::max(1, n);
    }
  }
  if (shares <= 0) return 0;
  return std::pow(2.0, -(used->second / u.total) / shares);
}

Result<std::string> RenderSshare(const AccountsView& v, const ShareUsage& u, const SshareOptions& o,
                                 const PrintOptions& p) {
  std::vector<std::string> names = o.fields;
  if (names.empty()) {
    names = o.long_output
                ? std::vector<std::string>{"Account",  "User",        "RawShares",    "NormShares",
                                           "RawUsage", "NormUsage",   "EffectvUsage", "FairShare",
                                           "LevelFS",  "GrpTRESMins", "TRESRunMins"}
                : std::vector<std::string>{"Account",  "User",         "RawShares", "NormShares",
                                           "RawUsage", "EffectvUsage", "FairShare"};
  }
  std::vector<PrintField> fields;
  std::vector<std::string> columns;
  for (const std::string& n : names) {
    std::string name = n;
    int width = 0;
    if (size_t pct = n.find('%'); pct != std::string::npos) {
      name = n.substr(0, pct);
      width = std::atoi(n.c_str() + pct + 1);
    }
    const SshareColumn* found = nullptr;
    for (const SshareColumn& c : kSshareColumns) {
      if (!found && !name.empty() &&
          AsciiLower(c.name).compare(0, name.size(), AsciiLower(name)) == 0) {
        found = &c;
      }
    }
    if (found == nullptr) return InvalidArgument("Invalid field requested: \"" + name + "\"");
    fields.push_back(PrintField{found->name, width != 0 ? width : found->len});
    columns.push_back(found->name);
  }
  std::vector<std::vector<std::string>> table;
  auto add = [&](const QueueConfig* q, const AccountUser* user) {
    std::vector<std::string> row;
    for (const std::string& c : columns) row.push_back(SshareValue(v, u, c, q, user));
    table.push_back(std::move(row));
  };
  auto wanted = [&](const std::string& user) {
    return o.all_users || std::find(o.users.begin(), o.users.end(), user) != o.users.end();
  };
  if (o.accounts.empty()) add(nullptr, nullptr);
  for (const QueueConfig& q : v.queues) {
    if (!o.accounts.empty() &&
        std::find(o.accounts.begin(), o.accounts.end(), q.name) == o.accounts.end()) {
      continue;
    }
    add(&q, nullptr);
    for (const AccountUser& user : v.users) {
      if (QueueAdmits(v, user, q.name) && wanted(user.name)) add(&q, &user);
    }
  }
  return PrintTable(fields, table, p);
}

namespace {

constexpr DurationMs kMaxAgeMs = 7 * 24 * 3600 * 1000LL;  // Slurm's PriorityMaxAge default

struct SprioColumn {
  char letter;
  const char* header;
};
constexpr SprioColumn kSprioColumns[] = {
    {'i', "JOBID"},     {'r', "PARTITION"}, {'u', "USER"},    {'Y', "PRIORITY"}, {'y', "PRIORITY"},
    {'S', "SITE"},      {'A', "AGE"},       {'a', "AGE"},     {'B', "ASSOC"},    {'b', "ASSOC"},
    {'F', "FAIRSHARE"}, {'f', "FAIRSHARE"}, {'J', "JOBSIZE"}, {'j', "JOBSIZE"},  {'P', "PARTITION"},
    {'p', "PARTITION"}, {'Q', "QOS"},       {'q', "QOS"},     {'N', "NICE"},     {'T', "TRES"},
    {'t', "TRES"},
};

// sprio -n's factors: "%.7f" (its priority "%.8f").
std::string Normalized(double v, int digits) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string SprioValue(const AccountsView& v, const ShareUsage& u, char letter, const Job& j,
                       TimeMs now) {
  const double age = std::min(1.0, static_cast<double>(std::max<TimeMs>(0, now - j.submitted_at)) /
                                       static_cast<double>(kMaxAgeMs));
  const double fs = FairShareFactor(v, u, j.spec.queue, j.owner);
  auto scaled = [](double f) {
    return std::to_string(static_cast<int64_t>(std::llround(1000 * f)));
  };
  switch (letter) {
    case 'i':
      return std::to_string(j.id);
    case 'r':
      return j.spec.queue;
    case 'u':
      return j.owner;
    case 'Y':
      return std::to_string(j.spec.priority);
    case 'y':
      return Normalized(j.spec.priority, 8);
    case 'A':
      return scaled(age);
    case 'a':
      return Normalized(age, 7);
    case 'F':
      return scaled(fs);
    case 'f':
      return Normalized(fs, 7);
    case 'T':
    case 't':
      return "";
    default:
      return std::isupper(static_cast<unsigned char>(letter)) ? "0" : Normalized(0, 7);
  }
}

}  // namespace

Result<std::string> RenderSprio(const AccountsView& v, const ShareUsage& u,
                                const std::vector<Job>& pending, const SprioOptions& o,
                                TimeMs now) {
  std::string format = o.format;
  if (format.empty()) {
    // Slurm's layouts with the factors Corral orders by: its priority, age and fair share.
    if (o.normalized) {
      format = o.long_output
                   ? "%.15i %9r %.8u %10y %10a %10b %10f %10j %10p %10q %20t"
                   : std::string("%.15i %9r") + (o.show_user ? " %.8u" : "") + " %10y %10a %10f";
    } else {
      format = o.long_output ? "%.15i %9r %.8u %.10Y %.10S %.10A %.10B %.10F %.10J %.10P %.10Q "
                               "%.11N %.20T"
                             : std::string("%.15i %9r") + (o.show_user ? " %.8u" : "") +
                                   " %.10Y %.10S %.10A %.10F";
    }
  }
  auto parsed = ParsePercentFormat(format);
  if (!parsed.ok()) return parsed.status();
  const PercentFormat& pf = *parsed;
  for (const PercentField& f : pf.fields) {
    bool known = false;
    for (const SprioColumn& c : kSprioColumns) known |= c.letter == f.letter;
    if (!known) {
      return InvalidArgument(std::string("option --format: unknown field %") + f.letter +
                             "; known: %i %r %u %Y %y %S %A %a %B %b %F %f %J %j %P %p %Q %q %N "
                             "%T %t");
    }
  }
  std::string out;
  if (o.header) {
    for (const PercentField& f : pf.fields) {
      std::string header;
      for (const SprioColumn& c : kSprioColumns) {
        if (c.letter == f.letter) header = c.header;
      }
      out += PercentCell(header, f);
    }
    out += pf.tail + "\n";
  }
  for (const Job& j : pending) {
    // Slurm's sprio shows the jobs it ranks: not held ones, nor those waiting on dependencies.
    if (j.held || j.pending_code == PendingCode::kHeld ||
        j.pending_code == PendingCode::kDependency ||
        j.pending_code == PendingCode::kDependencyNever) {
      continue;
    }
    for (const PercentField& f : pf.fields) {
      out += PercentCell(SprioValue(v, u, f.letter, j, now), f);
    }
    out += pf.tail + "\n";
  }
  return out;
}

}  // namespace corral::slurm
