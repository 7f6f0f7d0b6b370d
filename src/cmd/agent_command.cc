// `corral agent --head URL --join-token-file F --name NAME --state-dir DIR
//               [--simulate-gpus N[xMODEL]] [--listen HOST:PORT] [--label k=v]...`
#include <CLI/CLI.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "agent/agent.h"
#include "agent/gpu_probe.h"
#include "agent/launcher.h"
#include "cmd/commands.h"
#include "cmd/flags.h"
#include "cmd/http_head_channel.h"
#include "cmd/signals.h"
#include "core/spec.h"
#include "head/tokens.h"
#include "net/http_server.h"

namespace corral::cmd {
namespace {

// Serves GET /v1/runs/RUN_ID/logs to the head (join token), reading the run's log files.
net::HttpResponse ServeLog(const std::string& state_dir, const std::string& join_token,
                           const net::HttpRequest& req) {
  if (!head::TokensEqual(req.BearerToken(), join_token)) {
    return net::JsonError(401, "unauthenticated", "bad token");
  }
  const std::string prefix = "/v1/runs/";
  if (req.method != "GET" || req.path.rfind(prefix, 0) != 0 ||
      req.path.size() < prefix.size() + 6 || req.path.substr(req.path.size() - 5) != "/logs") {
    return net::JsonError(404, "not_found", "no such path: " + req.path);
  }
  std::string run_id = req.path.substr(prefix.size(), req.path.size() - prefix.size() - 5);
  auto num = [&](const char* key, int64_t def) {
    auto it = req.query.find(key);
    if (it == req.query.end()) return def;
    try {
      return static_cast<int64_t>(std::stoll(it->second));
    } catch (...) {
      return int64_t{-1};
    }
  };
  int64_t replica = num("replica", 0), offset = num("offset", 0), max = num("max", 65536);
  std::string stream = req.query.count("stream") ? req.query.at("stream") : "stdout";
  if (replica < 0 || offset < 0 || max <= 0) {
    return net::JsonError(400, "invalid_argument", "replica, offset and max must be >= 0");
  }
  auto data = agent::ReadRunLog(state_dir, run_id, static_cast<int32_t>(replica), stream, offset,
                                std::min<int64_t>(max, 4 << 20));
  if (!data.ok()) {
    return net::JsonError(data.status().code() == ErrorCode::kNotFound ? 404 : 400,
                          ErrorCodeName(data.status().code()), data.status().message());
  }
  net::HttpResponse r;
  r.content_type = "text/plain";
  r.headers["X-Corral-Next-Offset"] = std::to_string(offset + static_cast<int64_t>(data->size()));
  r.body = std::move(*data);
  return r;
}

}  // namespace

int AgentMain(std::vector<std::string> args) {
  CLI::App app{"corral agent: runs jobs on this node"};
  std::string head_url, join_token_file, name, state_dir, simulate, listen = "127.0.0.1:0";
  std::vector<std::string> labels;
  int64_t lease_s = 40;  // below the head's --down-after (60 s): a run is stopped here before it is
                         // requeued there
  double cpus = 0;
  std::string memory;
  app.add_option("--head", head_url, "the head's URL, e.g. http://10.0.0.1:7070")->required();
  app.add_option("--join-token-file", join_token_file, "file holding the join token")->required();
  app.add_option("--name", name, "this node's name")->required();
  app.add_option("--state-dir", state_dir, "where runs, logs and records are kept")->required();
  app.add_option("--simulate-gpus", simulate, "N or NxMODEL: simulated GPUs instead of NVML");
  app.add_option("--listen", listen, "HOST:PORT to serve logs to the head on");
  app.add_option("--label", labels, "node label k=v (repeatable), e.g. rack=r1");
  app.add_option("--lease", lease_s, "seconds without the head before stopping all runs");
  app.add_option("--cpus", cpus, "CPUs to offer (default: what this process may use)");
  app.add_option("--memory", memory, "memory to offer, e.g. 64G (default: MemTotal)");
  if (auto code = ParseFlags(app, std::move(args))) return *code;
  auto hp = ListenFlag("agent", listen);
  if (!hp) return 2;
  std::string join_token;
  {
    std::ifstream in(join_token_file);
    std::getline(in, join_token);
  }
  if (join_token.empty()) {
    std::cerr << "corral agent: flag '--join-token-file': cannot read a token from "
              << join_token_file << "\n";
    return 2;
  }
  std::unique_ptr<agent::GpuProbe> probe;
  if (!simulate.empty()) {
    auto sim = agent::ParseSimulateGpus(simulate);
    if (!sim.ok()) {
      std::cerr << "corral agent: " << sim.status().message() << "\n";
      return 2;
    }
    probe = std::make_unique<agent::SimulatedGpuProbe>(sim->count, sim->model, name);
  } else {
    probe = std::make_unique<agent::NvmlGpuProbe>();
  }
  agent::AgentConfig config;
  config.name = name;
  config.state_dir = state_dir;
  config.lease_ms = lease_s * kSecond;
  // Exits are noticed by polling the monitors' exit files: 25 ms keeps a short job from
  // holding its GPUs ~100 ms longer than it runs (docs/benchmarks.md), for a few stat()s.
  config.poll_interval_ms = 25;
  if (cpus < 0) {
    std::cerr << "corral agent: flag '--cpus': must be >= 0\n";
    return 2;
  }
  config.cpu_milli = static_cast<int32_t>(cpus * 1000);
  if (!memory.empty()) {
    auto mb = ParseMemoryMb("--memory", memory);
    if (!mb.ok()) {
      std::cerr << "corral agent: " << mb.status().message() << "\n";
      return 2;
    }
    config.memory_mb = *mb;
  }
  for (const std::string& l : labels) {
    auto eq = l.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "corral agent: flag '--label': got \"" << l << "\", want KEY=VALUE\n";
      return 2;
    }
    config.labels[l.substr(0, eq)] = l.substr(eq + 1);
  }
  BlockStopSignals();
  std::error_code ec;
  std::filesystem::create_directories(state_dir, ec);
  net::HttpServer logs(
      [state_dir, join_token](net::HttpRequest req, net::Responder respond) {
        respond(ServeLog(state_dir, join_token, req));
      },
      1);
  auto port = logs.Listen(hp->first, hp->second);
  if (!port.ok()) {
    std::cerr << "corral agent: " << port.status().ToString() << "\n";
    return 1;
  }
  logs.Start();
  config.address = hp->first + ":" + std::to_string(*port);
  agent::Agent node(config, std::move(probe),
                    std::make_unique<HttpHeadChannel>(head_url, join_token));
  int rc = 0;
  std::thread runner([&] { rc = node.Run(); });
  std::thread stopper([&] {
    WaitForStopSignal();
    node.Stop();
  });
  runner.join();
  // Run() returned on its own (a fatal error): wake the signal thread so it can be joined.
  kill(getpid(), SIGTERM);
  stopper.join();
  logs.Stop();
  return rc;
}

}  // namespace corral::cmd
