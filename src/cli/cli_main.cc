// CliMain: the client commands wired to the real world (environment, wall clock, current
// directory, HTTP). Part of corral_cli_http.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <ostream>
#include <thread>

#include "cli/cli.h"
#include "cli/http_transport.h"

namespace corral::cli {

int CliMain(const std::string& command, const std::vector<std::string>& args, std::ostream& out,
            std::ostream& err) {
  CliContext ctx;
  ctx.out = &out;
  ctx.err = &err;
  ctx.env = ProcessEnv();
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
    return std::shared_ptr<ApiTransport>(std::make_shared<HttpTransport>(cfg->addr, cfg->token));
  };
  return RunCommand(command, args, ctx);
}

}  // namespace corral::cli
