// `corral admin backup FILE`: an online, consistent copy of the head's SQLite store, written by
// the head to FILE on its own host (POST /v1/admin/backup; admins only). A relative FILE is
// made absolute against this command's working directory, which names the same place when the
// CLI runs on the head's host (the usual case; say an absolute path otherwise).
#include "cli/commands.h"

namespace corral::cli {

int RunAdmin(const std::vector<std::string>& argv, CliContext& ctx) {
  auto parsed = ParseArgs(argv, {}, false);
  if (!parsed.ok()) return UsageError(ctx, "admin", parsed.status().message());
  const ParsedArgs& args = *parsed;
  if (args.Has("help") || args.positional.empty()) {
    *ctx.out << CommandUsage("admin") << "\n";
    return args.Has("help") ? kExitOk : kExitUsage;
  }
  const std::string& sub = args.positional[0];
  if (sub != "backup") return UsageError(ctx, "admin", "unknown subcommand '" + sub + "'");
  if (args.positional.size() != 2) {
    return UsageError(ctx, "admin",
                      "backup: want one FILE, got " + std::to_string(args.positional.size() - 1));
  }
  std::string path = args.positional[1];
  if (path.empty()) return UsageError(ctx, "admin", "backup: FILE is empty");
  if (path.front() != '/') path = (ctx.cwd.empty() ? std::string("/") : ctx.cwd + "/") + path;
  ApiClient api(ctx);
  auto r = api.CallJson("POST", "/v1/admin/backup", Json{{"path", path}}.dump());
  if (!r.ok()) {
    PrintError(ctx, "admin backup", r.status().message());
    return kExitError;
  }
  *ctx.out << "backed up revision " << r->value("revision", 0) << " (" << r->value("jobs", 0)
           << " jobs, " << r->value("bytes", 0) << " bytes) to " << r->value("path", path) << "\n";
  return kExitOk;
}

}  // namespace corral::cli
