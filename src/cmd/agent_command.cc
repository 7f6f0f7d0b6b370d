// `corral agent --head URL --join-token-file F --name NAME --state-dir DIR
//               [--simulate-gpus N[xMODEL]] [--advertise-addr ADDR] [--listen HOST:PORT]
//               [--label k=v]... [--ca FILE]`
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cctype>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <thread>

#include "agent/agent.h"
#include "agent/gpus/gpu_probe.h"
#include "agent/gpus/mps.h"
#include "agent/launch/launcher.h"
#include "agentnet/advertise.h"
#include "agentnet/head_channel.h"
#include "agentnet/log_cert_channel.h"
#include "agentnet/log_server.h"
#include "agentnet/notebook_relay.h"
#include "agentnet/relay_auth.h"
#include "agentnet/user_socket.h"
#include "cmd/agent_flags.h"
#include "cmd/commands.h"
#include "cmd/flags.h"
#include "cmd/local_socket.h"
#include "cmd/service_notifier.h"
#include "cmd/signals.h"
#include "core/source_budget.h"
#include "core/spec.h"
#include "net/head_client.h"
#include "net/http_server.h"
#include "net/tls_context.h"
#include "net/url.h"

namespace corral::cmd {
namespace {

// The node's users' local socket at `path` ("none": a server listening nowhere), each request
// handed to `users`. Started.
Result<std::unique_ptr<net::HttpServer>> ServeNodeUsers(agentnet::UserForwarder& users,
                                                        const std::string& path) {
  auto server = std::make_unique<net::HttpServer>(
      [&users](net::HttpRequest req, net::Responder respond) {
        users.Handle(std::move(req), std::move(respond));
      },
      net::HttpServerOptions{.io_threads = 1});
  if (Status st = ListenOnLocalSocket(*server, path); !st.ok()) return st;
  server->Start();
  return server;
}

// The flags checked before anything starts: --mps-control found or checked, --unix-socket.
Status CheckEarlyFlags(AgentFlags& f) {
  if (f.mps_control == "auto") {
    f.mps_control = agent::MpsDaemons::FindControl();
  } else if (f.mps_control == "none") {
    f.mps_control.clear();
  } else if (f.mps_control.empty() || f.mps_control[0] != '/' ||
             access(f.mps_control.c_str(), X_OK) != 0) {
    return InvalidArgument("flag '--mps-control': " + f.mps_control +
                           " is not an executable absolute path (or \"none\")");
  }
  if (!IsLocalSocketFlag(f.unix_socket)) {
    return InvalidArgument("flag '--unix-socket': got \"" + f.unix_socket +
                           "\", want an absolute path or none");
  }
  return Status::Ok();
}

// With an https head: its CA trusted (--ca, else $CORRAL_CA) and the log server's TLS, whose
// certificate the head issues at registration. Null for an http head.
Result<std::shared_ptr<net::TlsServerContext>> TrustTheHead(AgentFlags& f,
                                                            const net::ParsedUrl& head) {
  if (head.scheme != "https") {
    if (!f.ca_file.empty()) {
      return InvalidArgument("flag '--ca': the head's URL is http://, not https://");
    }
    return std::shared_ptr<net::TlsServerContext>();
  }
  if (f.ca_file.empty()) {
    if (const char* env = std::getenv("CORRAL_CA"); env != nullptr) f.ca_file = env;
  }
  if (!f.ca_file.empty()) {
    auto trust = net::TlsClientContext::FromCaFile(f.ca_file);
    if (!trust.ok()) return InvalidArgument("flag '--ca': " + trust.status().message());
    net::SetDefaultClientTls(*trust);
  }
  return net::TlsServerContext::WithoutCertificate();
}

// The join token, which may be absent once the node holds a credential of its own.
Result<std::string> ReadJoinToken(const AgentFlags& f) {
  std::string join_token;
  std::ifstream in(f.join_token_file);
  std::getline(in, join_token);
  // A node that has joined registers again with its own credential: the join token may then
  // be removed from it.
  if (join_token.empty() && !std::filesystem::exists(f.state_dir + "/node.credential")) {
    return InvalidArgument("flag '--join-token-file': cannot read a token from " +
                           f.join_token_file + " (and " + f.state_dir +
                           "/node.credential holds no credential of this node's)");
  }
  return join_token;
}

Result<std::unique_ptr<agent::GpuProbe>> MakeGpuProbe(const AgentFlags& f) {
  if (f.simulate.empty()) {
    std::unique_ptr<agent::GpuProbe> nvml = std::make_unique<agent::NvmlGpuProbe>(f.nvml_library);
    return nvml;
  }
  auto sim = agent::ParseSimulateGpus(f.simulate);
  if (!sim.ok()) return sim.status();
  // Simulated GPUs report the use written to STATE_DIR/simulated-gpu-use (tests set it).
  std::unique_ptr<agent::GpuProbe> probe = std::make_unique<agent::SimulatedGpuProbe>(
      sim->count, sim->model, f.name, f.state_dir + "/simulated-gpu-use");
  return probe;
}

// --dataset-source-rate: bytes per second, with K, M or G (powers of 1024); 0: no limit.
Result<int64_t> ParseDatasetSourceRate(const std::string& text) {
  return ParseByteRate("flag '--dataset-source-rate'", text);
}

// The dataset and image caches, and the CDI specs containers find GPUs by.
Status ConfigureCaches(const AgentFlags& f, agent::AgentConfig& config) {
  auto dataset_limit = ParseMemoryMb("--dataset-cache-size", f.dataset_cache_size);
  if (!dataset_limit.ok()) return dataset_limit.status();
  config.datasets.dir = f.dataset_cache;
  config.datasets.limit_bytes = *dataset_limit * 1024 * 1024;
  auto rate = ParseDatasetSourceRate(f.dataset_source_rate);
  if (!rate.ok()) return rate.status();
  if (f.dataset_fetches_per_source < 0) {
    return InvalidArgument("flag '--dataset-fetches-per-source': got " +
                           std::to_string(f.dataset_fetches_per_source) + ", want 0 or more");
  }
  config.datasets.sources = {f.dataset_fetches_per_source, *rate};
  agent::ContainerConfig& c = config.containers;
  c.crun_root = f.state_dir + "/crun";
  c.cache.dir = f.image_cache.empty() ? f.state_dir + "/images" : f.image_cache;
  auto image_limit = ParseMemoryMb("--image-cache-size", f.image_cache_size);
  if (!image_limit.ok()) return image_limit.status();
  c.cache.limit_bytes = *image_limit * 1024 * 1024;
  c.cache.insecure_registries = f.insecure_registries;
  if (!f.cdi_dirs.empty()) c.cdi_dirs = f.cdi_dirs;
  if (!f.simulate.empty()) {
    // Simulated GPUs come into containers through a CDI spec of the agent's own (written by
    // PrepareStateDir).
    c.cdi_kind = "corral.dev/gpu";
    c.cdi_dirs.insert(c.cdi_dirs.begin(), f.state_dir + "/cdi");
  }
  return Status::Ok();
}

// The state directory made ready, once every flag is known good: a usage error changes nothing
// on the node.
Status PrepareStateDir(const AgentFlags& f, const agent::AgentConfig& config) {
  std::error_code ec;
  std::filesystem::create_directories(f.state_dir, ec);
  // A pull the agent's last life left half done (its helper killed with it) goes now.
  agent::ImageCache(config.containers.cache).CleanInterrupted();
  if (f.simulate.empty()) return Status::Ok();
  auto sim = agent::ParseSimulateGpus(f.simulate);  // MakeGpuProbe checked it
  return agent::WriteSimulatedCdiSpec(f.state_dir + "/cdi", sim->count);
}

// The intervals of the agent's checks, samples and lease.
void ConfigureIntervals(const AgentFlags& f, agent::AgentConfig& config) {
  config.lease_ms = f.lease_s * kSecond;
  config.health_program = f.health_program;
  config.gpu_check_interval_ms = static_cast<int64_t>(f.gpu_check_interval_s * 1000);
  config.usage_interval_ms = static_cast<int64_t>(f.usage_interval_s * 1000);
  config.health_interval_ms = static_cast<int64_t>(f.health_interval_s * 1000);
  config.health_limit_ms = static_cast<int64_t>(f.health_limit_s * 1000);
  // Exits wake the agent at once (the monitors' FIFO); this interval only paces grace-period
  // kills and the lease check.
  config.poll_interval_ms = 100;
}

Status ParsePortRange(const std::string& text, agent::AgentConfig& config) {
  int lo = 0, hi = 0;
  char dash = 0;
  std::istringstream in(text);
  if (!(in >> lo >> dash >> hi) || dash != '-' || !in.eof() || lo < 1024 || hi > 65535 || lo > hi) {
    return InvalidArgument("flag '--port-range': got \"" + text +
                           "\", want LO-HI within 1024-65535");
  }
  config.port_lo = lo;
  config.port_hi = hi;
  return Status::Ok();
}

// The executables beside corral: the monitor, the container task helper (else corral itself,
// `corral container-task`) and the GPU share shim.
void FindHelperExecutables(agent::AgentConfig& config) {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    config.monitor_exe = agent::MonitorExecutableBeside(self.string());
    const std::string beside = self.parent_path().string() + "/corral-container";
    config.containers.helper_exe = access(beside.c_str(), X_OK) == 0 ? beside : self.string();
    config.gpushare_lib = agent::GpuShareLibraryBeside(self.string());
  }
  config.containers.init_exe = config.monitor_exe;
}

// Who jobs run as, their cgroups, and what the node offers: ports, CPUs, memory, labels.
Status ConfigureJobs(const AgentFlags& f, agent::AgentConfig& config) {
  config.job_map_dir = f.job_map_dir.empty()     ? f.state_dir + "/hpc-job-map"
                       : f.job_map_dir == "none" ? ""
                                                 : f.job_map_dir;
  CORRAL_RETURN_IF_ERROR(ParsePortRange(f.port_range, config));
  if (f.run_as == "owner" && geteuid() != 0) {
    return InvalidArgument(
        "flag '--run-as': owner needs the agent to run as root; use --run-as agent");
  }
  config.run_as = {f.run_as == "owner", f.allow_root_jobs};
  if (f.cgroups == "auto" && geteuid() == 0) config.cgroups = agent::Cgroups::Detect();
  FindHelperExecutables(config);
  if (f.cpus < 0) return InvalidArgument("flag '--cpus': must be >= 0");
  config.cpu_milli = static_cast<int32_t>(f.cpus * 1000);
  if (!f.memory.empty()) {
    auto mb = ParseMemoryMb("--memory", f.memory);
    if (!mb.ok()) return mb.status();
    config.memory_mb = *mb;
  }
  for (const std::string& l : f.labels) {
    auto eq = l.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgument("flag '--label': got \"" + l + "\", want KEY=VALUE");
    }
    config.labels[l.substr(0, eq)] = l.substr(eq + 1);
  }
  return Status::Ok();
}

// What every job's environment gets from the node: the interface peers reach it on and how a
// batch script's srun reaches the head.
void ConfigureJobEnvironment(const AgentFlags& f, const std::string& advertised,
                             agent::AgentConfig& config) {
  // torch.distributed's gloo and NCCL pick their interface from the host name, which often
  // resolves to loopback: point them at the one peers reach this node on.
  if (std::string iface = agentnet::InterfaceOf(advertised); !iface.empty()) {
    config.job_env = {{"GLOO_SOCKET_IFNAME", iface}, {"NCCL_SOCKET_IFNAME", iface}};
  }
  // srun in a batch script reaches the head the way this agent does (docs/slurm.md).
  config.job_env["CORRAL_STEP_HEAD"] = f.head_url;
  if (!f.ca_file.empty()) {
    std::error_code abs_ec;
    auto abs = std::filesystem::absolute(f.ca_file, abs_ec);
    config.job_env["CORRAL_STEP_CA"] = abs_ec ? f.ca_file : abs.string();
  }
}

// ADDRESS:PORT, an IPv6 address in brackets (net::ParsedUrl's one rule for it).
std::string AddressAndPort(const std::string& address, int port) {
  net::ParsedUrl url;
  url.host = address;
  url.port = port;
  return url.HostPort();
}

// Everything the agent's servers and loop need, decided from the flags before any starts.
struct AgentPlan {
  std::vector<std::string> heads;
  std::shared_ptr<net::TlsServerContext> log_tls;
  std::string advertised, join_token;
  std::pair<std::string, int> listen;
  std::unique_ptr<agent::GpuProbe> probe;
  agent::AgentConfig config;
};

Result<AgentPlan> PlanAgent(AgentFlags& f) {
  AgentPlan plan;
  auto heads = net::ParseHeadList(f.head_url);
  if (!heads.ok()) return InvalidArgument("flag '--head': " + heads.status().message());
  plan.heads = *heads;
  auto head = net::ParseUrl(heads->front());  // ParseHeadList checked it
  auto tls = TrustTheHead(f, *head);
  if (!tls.ok()) return tls.status();
  plan.log_tls = *tls;
  auto advertised = agentnet::AdvertiseAddress(f.advertise, head->host, head->port);
  if (!advertised.ok()) return advertised.status();
  plan.advertised = *advertised;
  if (f.listen.empty()) f.listen = AddressAndPort(plan.advertised, 0);
  auto hp = ParseHostPort("--listen", f.listen);
  if (!hp.ok()) return hp.status();
  plan.listen = *hp;
  auto token = ReadJoinToken(f);
  if (!token.ok()) return token.status();
  plan.join_token = *token;
  auto probe = MakeGpuProbe(f);
  if (!probe.ok()) return probe.status();
  plan.probe = std::move(*probe);
  agent::AgentConfig& config = plan.config;
  config.name = f.name;
  config.state_dir = f.state_dir;
  config.mps_control = f.mps_control;
  CORRAL_RETURN_IF_ERROR(ConfigureCaches(f, config));
  ConfigureIntervals(f, config);
  CORRAL_RETURN_IF_ERROR(ConfigureJobs(f, config));
  ConfigureJobEnvironment(f, plan.advertised, config);
  return plan;
}

// The agent's log server: logs, exec sessions and notebooks the head relays, each checked
// against the head's grants (keyed by the credential the head issues at each registration), and
// the agent's /metrics once the agent exists.
class NodeServices {
 public:
  NodeServices(const AgentFlags& f, const AgentPlan& plan)
      : relay_auth_(f.name),
        log_service_(f.state_dir, &relay_auth_, plan.join_token,
                     [this] {
                       agent::Agent* a = agent_.load();
                       return a != nullptr ? a->RenderMetrics() : std::string();
                     }),
        exec_server_(&relay_auth_,
                     [this](const std::string& run, int32_t r) {
                       agent::Agent* a = agent_.load();
                       return a != nullptr
                                  ? a->ExecTargetOf(run, r)
                                  : Result<agent::ExecTarget>(Unavailable("the agent is starting"));
                     }),
        notebooks_(f.state_dir, &relay_auth_,
                   net::SpliceIdle{.websocket = std::chrono::milliseconds(
                                       static_cast<int64_t>(f.relay_idle_s * 1000))}),
        server_(
            [this](net::HttpRequest req, net::Responder respond) {
              log_service_.Handle(std::move(req), std::move(respond));
            },
            net::HttpServerOptions{
                .io_threads = 1,
                .tls = plan.log_tls,
                .takeover_prefix = "/s/",
                .takeover = [this](net::HttpRequest req, std::shared_ptr<net::TakenConnection> c) {
                  notebooks_.Take(std::move(req), std::move(c));
                }}) {
    log_service_.SetExec(&exec_server_);
  }
  NodeServices(const NodeServices&) = delete;
  NodeServices& operator=(const NodeServices&) = delete;
  ~NodeServices() { Stop(); }

  Result<int> Listen(const std::pair<std::string, int>& at) {
    auto port = server_.Listen(at.first, at.second);
    if (port.ok()) server_.Start();
    return port;
  }
  agentnet::RelayAuth& relay_auth() { return relay_auth_; }
  void Serve(agent::Agent* a) { agent_ = a; }
  void Stop() {
    server_.Stop();
    agent_ = nullptr;
  }

 private:
  std::atomic<agent::Agent*> agent_{nullptr};
  agentnet::RelayAuth relay_auth_;
  agentnet::LogService log_service_;
  agentnet::ExecServer exec_server_;         // `corral exec` into this node's runs
  const agentnet::NotebookRelay notebooks_;  // to the Jupyter servers on this node's loopback
  net::HttpServer server_;
};

// Starts the node's servers, registers with the head and runs the agent until a stop signal
// (or a fatal error). The exit code.
int ServeAndRun(const AgentFlags& f, AgentPlan& plan, ServiceNotifier& notifier) {
  if (Status st = PrepareStateDir(f, plan.config); !st.ok()) {
    std::cerr << "corral agent: " << st.message() << "\n";
    return 2;
  }
  BlockStopSignals();
  NodeServices services(f, plan);
  auto port = services.Listen(plan.listen);
  if (!port.ok()) {
    std::cerr << "corral agent: " << port.status().ToString() << "\n";
    return 1;
  }
  plan.config.address = AddressAndPort(plan.advertised, *port);
  // This node's Unix users, forwarded to the head under the node's credential.
  agentnet::UserForwarder users(plan.heads);
  auto user_socket = ServeNodeUsers(users, f.unix_socket);
  if (!user_socket.ok()) {
    std::cerr << "corral agent: flag '--unix-socket': " << user_socket.status().message() << "\n";
    return 1;
  }
  std::unique_ptr<agent::HeadChannel> channel = std::make_unique<agentnet::HttpHeadChannel>(
      plan.heads, plan.join_token, f.state_dir + "/node.credential",
      [&services, &users](const std::string& credential) {
        services.relay_auth().SetCredential(credential);
        users.SetCredential(credential);
      });
  if (plan.log_tls) {
    channel = std::make_unique<agentnet::LogCertChannel>(std::move(channel), plan.log_tls, f.name);
  }
  // The one place the agent is given the machine's clocks, programs and files.
  agent::Agent node(plan.config, std::move(plan.probe), std::move(channel), agent::RealNodeEnv());
  services.Serve(&node);
  int rc = 0;
  std::thread runner([&] { rc = node.Run(); });
  std::thread stopper([&] {
    WaitForStopSignal();
    (void)notifier.Stopping();  // where it fails, so did READY, reported
    node.Stop();
  });
  runner.join();
  // Run() returned on its own (a fatal error): wake the signal thread so it can be joined.
  kill(getpid(), SIGTERM);
  stopper.join();
  (*user_socket)->Stop();
  services.Stop();
  return rc;
}
}  // namespace

int AgentMain(std::vector<std::string> args) {
  if (std::find(args.begin(), args.end(), "--check") != args.end()) {
    return AgentCheckMain(std::move(args));
  }
  CLI::App app{"corral agent: runs jobs on this node"};
  AgentFlags flags;
  AddAgentFlags(app, flags);
  if (auto code = ParseFlags(app, std::move(args))) return *code;
  if (Status st = CheckEarlyFlags(flags); !st.ok()) {
    std::cerr << "corral agent: " << st.message() << "\n";
    return 2;
  }
  // Before any thread starts: it takes NOTIFY_SOCKET out of the environment jobs inherit.
  ServiceNotifier notifier = ServiceNotifier::FromEnvironment();
  auto plan = PlanAgent(flags);
  if (!plan.ok()) {
    std::cerr << "corral agent: " << plan.status().message() << "\n";
    return 2;
  }
  // Ready (systemd's Type=notify) once the head knows this node; kept alive by the poller, which
  // supervises the runs.
  plan->config.on_registered = [&notifier, name = flags.name] {
    if (Status st = notifier.Ready("node " + name + " registered with the head"); !st.ok()) {
      std::cerr << "corral agent: " << st.ToString() << std::endl;
    }
  };
  plan->config.on_poll = [&notifier] { notifier.Alive(); };
  return ServeAndRun(flags, *plan, notifier);
}

}  // namespace corral::cmd
