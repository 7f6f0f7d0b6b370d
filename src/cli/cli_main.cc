// CliMain: the client commands wired to the real world (environment, wall clock, current
// directory, HTTP). Part of corral_cli_http.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <ostream>
#include <thread>

#include "cli/cli.h"
#include "cli/http_transport.h"
#include "net/tls_context.h"

namespace corral::cli {

namespace {

// Takes `--ca FILE` / `--ca=FILE` (any command, before a `--`) out of args: it says how to
// reach the head, like CORRAL_CA, which it overrides.
std::optional<std::string> TakeCaFlag(std::vector<std::string>& args) {
  std::optional<std::string> ca;
  for (size_t i = 0; i < args.size();) {
    if (args[i] == "--") break;
    if (args[i] == "--ca" && i + 1 < args.size()) {
      ca = args[i + 1];
      args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i) + 2);
    } else if (args[i].rfind("--ca=", 0) == 0) {
      ca = args[i].substr(5);
      args.erase(args.begin() + static_cast<long>(i));
    } else {
      ++i;
    }
  }
  return ca;
}

}  // namespace

int CliMain(const std::string& command, const std::vector<std::string>& args, std::ostream& out,
            std::ostream& err) {
  return CliMainWith([&command](const std::vector<std::string>& a,
                                CliContext& ctx) { return RunCommand(command, a, ctx); },
                     args, out, err);
}

int CliMainWith(const CommandFn& run, const std::vector<std::string>& given_args, std::ostream& out,
                std::ostream& err) {
  std::vector<std::string> args = given_args;
  const std::optional<std::string> ca_flag = TakeCaFlag(args);
  CliContext ctx;
  ctx.out = &out;
  ctx.err = &err;
  ctx.env = [process = ProcessEnv(), ca_flag](const std::string& name) {
    if (name == "CORRAL_CA" && ca_flag) return ca_flag;
    return process(name);
  };
  ctx.environment = [] {
    std::map<std::string, std::string> all;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      std::string kv = *e;
      auto eq = kv.find('=');
      if (eq != std::string::npos) all[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    return all;
  };
  std::error_code ec;
  ctx.cwd = std::filesystem::current_path(ec).string();
  ctx.now = [] {
    return static_cast<TimeMs>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
  };
  ctx.sleep = [](DurationMs ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); };
  ctx.connect = [&ctx]() -> Result<std::shared_ptr<ApiTransport>> {
    auto cfg = LoadClientConfig(ctx.env);
    if (!cfg.ok()) return cfg.status();
    ctx.addr = cfg->addr;
    if (!cfg->ca.empty()) {
      auto trust = net::TlsClientContext::FromCaFile(cfg->ca);
      if (!trust.ok()) return InvalidArgument("--ca / CORRAL_CA: " + trust.status().message());
      net::SetDefaultClientTls(*trust);
    }
    return std::shared_ptr<ApiTransport>(std::make_shared<HttpTransport>(cfg->addr, cfg->token));
  };
  return run(args, ctx);
}

}  // namespace corral::cli
