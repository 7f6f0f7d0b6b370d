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
#include <sstream>
#include <thread>

#include "agent/agent.h"
#include "agent/gpu_probe.h"
#include "agent/launcher.h"
#include "agent/mps.h"
#include "agentnet/advertise.h"
#include "agentnet/head_channel.h"
#include "agentnet/log_cert_channel.h"
#include "agentnet/log_server.h"
#include "agentnet/notebook_relay.h"
#include "agentnet/relay_auth.h"
#include "agentnet/user_socket.h"
#include "cmd/commands.h"
#include "cmd/flags.h"
#include "cmd/local_socket.h"
#include "cmd/service_notifier.h"
#include "cmd/signals.h"
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

// --dataset-source-rate: bytes per second, with K, M or G (powers of 1024); 0: no limit.
Result<int64_t> ParseDatasetSourceRate(const std::string& text) {
  auto bad = [&] {
    return InvalidArgument("--dataset-source-rate: got \"" + text +
                           "\", want bytes per second such as 0 (no limit), 500K, 100M or 1G");
  };
  if (text.empty()) return bad();
  std::string digits = text;
  int64_t mult = 1;
  switch (std::toupper(static_cast<unsigned char>(text.back()))) {
    case 'K':
      mult = int64_t{1} << 10;
      break;
    case 'M':
      mult = int64_t{1} << 20;
      break;
    case 'G':
      mult = int64_t{1} << 30;
      break;
    default:
      break;
  }
  if (mult > 1) digits.pop_back();
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos ||
      digits.size() > 12) {
    return bad();
  }
  return std::stoll(digits) * mult;
}

}  // namespace

int AgentMain(std::vector<std::string> args) {
  if (std::find(args.begin(), args.end(), "--check") != args.end()) {
    return AgentCheckMain(std::move(args));
  }
  CLI::App app{"corral agent: runs jobs on this node"};
  bool check = false;
  app.add_flag("--check", check,
               "check what the agent would use on this node (NVML, nvidia-smi, cgroups, "
               "containers, shares, MPS, health program, the head), print it and exit: 1 if a "
               "part failed (docs/gpu-suite.md); needs only the flags that choose those parts");
  std::string head_url, join_token_file, name, state_dir, simulate, listen, advertise;
  std::vector<std::string> labels;
  int64_t lease_s = 40;  // below the head's --down-after (60 s): a run is stopped here before it is
                         // requeued there
  double cpus = 0;
  std::string memory;
  app.add_option("--head", head_url,
                 "the head's URL, e.g. https://10.0.0.1:7070, or several heads' URLs separated "
                 "by commas (the agent follows the leader)")
      ->required();
  std::string ca_file;
  app.add_option("--ca", ca_file,
                 "with an https --head: the CA that signed the head's certificate (the head's "
                 "STATE_DIR/tls/ca.pem; default $CORRAL_CA, else the system's CA store)");
  app.add_option("--join-token-file", join_token_file,
                 "file holding the join token; once the node has joined, its own credential "
                 "(STATE_DIR/node.credential) registers it again and this file may be removed")
      ->required();
  app.add_option("--name", name, "this node's name")->required();
  app.add_option("--state-dir", state_dir, "where runs, logs and records are kept")->required();
  app.add_option("--simulate-gpus", simulate, "N or NxMODEL: simulated GPUs instead of NVML");
  std::string health_program;
  double health_interval_s = 300, health_limit_s = 60;
  app.add_option("--health-program", health_program,
                 "a node health check run at start and every --health-interval, killed after "
                 "--health-limit; exit 0 ok, 1 warn, 2 critical (drains every GPU), reason on "
                 "stdout (docs/gpu-health.md)");
  app.add_option("--health-interval", health_interval_s, "seconds between health program runs")
      ->check(CLI::Range(1.0, 86400.0));
  app.add_option("--health-limit", health_limit_s,
                 "seconds a health program may run before it is killed (Slurm's 60)")
      ->check(CLI::Range(0.1, 3600.0));
  double gpu_check_interval_s = 10;
  app.add_option("--gpu-check-interval", gpu_check_interval_s,
                 "seconds between the GPU health checks the head counts (a GPU not ok is "
                 "reported at once)")
      ->check(CLI::Range(0.1, 3600.0));
  double usage_interval_s = 60;
  app.add_option("--usage-interval", usage_interval_s,
                 "seconds between two samples of a running job's GPU, CPU and memory use, kept "
                 "as its efficiency series (corral eff)")
      ->check(CLI::Range(0.1, 86400.0));
  double relay_idle_s = 3600;
  app.add_option("--relay-idle-timeout", relay_idle_s,
                 "seconds a notebook's WebSocket relayed to its Jupyter server may pass no byte "
                 "either way before it is closed (its plain requests: 30)")
      ->check(CLI::Range(1.0, 7.0 * 86400));
  std::string nvml_library;
  app.add_option("--nvml-library", nvml_library,
                 "the NVML library to load (default: the driver's libnvidia-ml.so.1)");
  app.add_option("--advertise-addr", advertise,
                 "the address the head and other nodes reach this node on (MASTER_ADDR of its "
                 "runs); default: the local address of the route toward the head");
  app.add_option("--listen", listen,
                 "HOST:PORT to serve logs to the head on (default: the advertised address, any "
                 "port)");
  app.add_option("--label", labels, "node label k=v (repeatable), e.g. rack=r1");
  app.add_option("--lease", lease_s,
                 "seconds without the head before stopping all runs; also how long interactive "
                 "sessions outlive this agent (batch jobs outlive it)");
  std::string port_range = "29500-29999";
  app.add_option("--port-range", port_range,
                 "LO-HI: MASTER_PORT range for runs whose replica 0 is on this node");
  app.add_option("--cpus", cpus, "CPUs to offer (default: what this process may use)");
  app.add_option("--memory", memory, "memory to offer, e.g. 64G (default: MemTotal)");
  // Like slurmd: a root agent runs each job as its owner; `corral up` (one user) runs jobs as
  // whoever started it.
  std::string run_as = geteuid() == 0 ? "owner" : "agent";
  app.add_option("--run-as", run_as,
                 "owner: each task runs as its job owner's Unix user (needs root); agent: as "
                 "this agent's user (default: owner when root)")
      ->check(CLI::IsMember({"owner", "agent"}));
  std::string cgroups = "auto";
  app.add_option("--cgroups", cgroups,
                 "auto: a cgroup per replica (v2, else v1) capping its CPUs, memory and "
                 "processes, where this agent may make them (root); off: none")
      ->check(CLI::IsMember({"auto", "off"}));
  bool allow_root_jobs = false;
  app.add_flag("--allow-root-jobs", allow_root_jobs,
               "with --run-as owner, also run jobs owned by root");
  std::string job_map_dir;
  app.add_option("--hpc-job-map-dir", job_map_dir,
                 "where to write one file per GPU naming the jobs on it, for dcgm-exporter's "
                 "--hpc-job-mapping-dir (default STATE_DIR/hpc-job-map; \"none\": off)");
  std::string image_cache, image_cache_size = "20G";
  std::vector<std::string> insecure_registries, cdi_dirs;
  app.add_option("--image-cache", image_cache,
                 "where container images are unpacked, shared by runs (default STATE_DIR/images; "
                 "on disk, not tmpfs)");
  app.add_option("--image-cache-size", image_cache_size,
                 "evict unused images beyond this size, least recently used first (default 20G)");
  std::string dataset_cache, dataset_cache_size = "0";
  app.add_option("--dataset-cache", dataset_cache,
                 "where datasets jobs declare are cached, one copy per version shared by runs "
                 "(default STATE_DIR/datasets; on local disk)");
  app.add_option("--dataset-cache-size", dataset_cache_size,
                 "over 95% of this, unused datasets are evicted, least recently used first, down "
                 "to 70% (default 0: no limit)");
  int32_t dataset_fetches_per_source = 2;
  std::string dataset_source_rate = "0";
  app.add_option("--dataset-fetches-per-source", dataset_fetches_per_source,
                 "at most this many datasets fetched at once from one source (a file system, or "
                 "an HTTP host), the others queued in order (default 2; 0: no limit)");
  app.add_option("--dataset-source-rate", dataset_source_rate,
                 "bytes per second all fetches from one source may read together, e.g. 100M "
                 "(default 0: no limit)");
  app.add_option("--insecure-registry", insecure_registries,
                 "HOST:PORT of a registry reached over plain HTTP (repeatable; loopback ones are)");
  app.add_option("--cdi-dir", cdi_dirs,
                 "a directory of CDI specs for the GPUs (repeatable; default /etc/cdi "
                 "/var/run/cdi; simulated GPUs: STATE_DIR/cdi, written by the agent)");
  std::string unix_socket = DefaultLocalSocket();
  app.add_option("--unix-socket", unix_socket,
                 "serve this node's Unix users on this local socket: corral there needs no "
                 "token, each request is forwarded to the head as its caller's Unix user under "
                 "this node's credential; default $RUNTIME_DIRECTORY/corral.sock under systemd "
                 "(/run/corral-node/corral.sock), else none; none: no socket");
  std::string mps_control = "auto";
  app.add_option("--mps-control", mps_control,
                 "nvidia-cuda-mps-control, run per owner per GPU for MPS shares (default: found "
                 "in /usr/bin, /usr/local/bin or /usr/local/cuda/bin; \"none\": off)");
  if (auto code = ParseFlags(app, std::move(args))) return *code;
  if (mps_control == "auto") {
    mps_control = agent::MpsDaemons::FindControl();
  } else if (mps_control == "none") {
    mps_control.clear();
  } else if (mps_control.empty() || mps_control[0] != '/' ||
             access(mps_control.c_str(), X_OK) != 0) {
    std::cerr << "corral agent: flag '--mps-control': " << mps_control
              << " is not an executable absolute path (or \"none\")\n";
    return 2;
  }
  if (!IsLocalSocketFlag(unix_socket)) {
    std::cerr << "corral agent: flag '--unix-socket': got \"" << unix_socket
              << "\", want an absolute path or none\n";
    return 2;
  }
  // Before any thread starts: it takes NOTIFY_SOCKET out of the environment jobs inherit.
  ServiceNotifier notifier = ServiceNotifier::FromEnvironment();
  auto heads = net::ParseHeadList(head_url);
  if (!heads.ok()) {
    std::cerr << "corral agent: flag '--head': " << heads.status().message() << "\n";
    return 2;
  }
  auto head = net::ParseUrl(heads->front());  // ParseHeadList checked it
  // An https head: verify it, and serve logs over TLS with the certificate it issues.
  std::shared_ptr<net::TlsServerContext> log_tls;
  if (head->scheme == "https") {
    if (ca_file.empty()) {
      if (const char* env = std::getenv("CORRAL_CA"); env != nullptr) ca_file = env;
    }
    if (!ca_file.empty()) {
      auto trust = net::TlsClientContext::FromCaFile(ca_file);
      if (!trust.ok()) {
        std::cerr << "corral agent: flag '--ca': " << trust.status().message() << "\n";
        return 2;
      }
      net::SetDefaultClientTls(*trust);
    }
    log_tls = net::TlsServerContext::WithoutCertificate();
  } else if (!ca_file.empty()) {
    std::cerr << "corral agent: flag '--ca': the head's URL is http://, not https://\n";
    return 2;
  }
  auto advertised = agentnet::AdvertiseAddress(advertise, head->host, head->port);
  if (!advertised.ok()) {
    std::cerr << "corral agent: " << advertised.status().message() << "\n";
    return 2;
  }
  if (listen.empty()) {
    listen =
        (advertised->find(':') != std::string::npos ? "[" + *advertised + "]" : *advertised) + ":0";
  }
  auto hp = ListenFlag("agent", listen);
  if (!hp) return 2;
  std::string join_token;
  {
    std::ifstream in(join_token_file);
    std::getline(in, join_token);
  }
  // A node that has joined registers again with its own credential: the join token may then
  // be removed from it.
  if (join_token.empty() && !std::filesystem::exists(state_dir + "/node.credential")) {
    std::cerr << "corral agent: flag '--join-token-file': cannot read a token from "
              << join_token_file << " (and " << state_dir
              << "/node.credential holds no credential of this node's)\n";
    return 2;
  }
  std::unique_ptr<agent::GpuProbe> probe;
  if (!simulate.empty()) {
    auto sim = agent::ParseSimulateGpus(simulate);
    if (!sim.ok()) {
      std::cerr << "corral agent: " << sim.status().message() << "\n";
      return 2;
    }
    // Simulated GPUs report the use written to STATE_DIR/simulated-gpu-use (tests set it).
    probe = std::make_unique<agent::SimulatedGpuProbe>(sim->count, sim->model, name,
                                                       state_dir + "/simulated-gpu-use");
  } else {
    probe = std::make_unique<agent::NvmlGpuProbe>(nvml_library);
  }
  agent::AgentConfig config;
  config.name = name;
  config.state_dir = state_dir;
  config.mps_control = mps_control;
  {
    auto limit = ParseMemoryMb("--dataset-cache-size", dataset_cache_size);
    if (!limit.ok()) {
      std::cerr << "corral agent: " << limit.status().message() << "\n";
      return 2;
    }
    config.datasets.dir = dataset_cache;
    config.datasets.limit_bytes = *limit * 1024 * 1024;
    auto rate = ParseDatasetSourceRate(dataset_source_rate);
    if (!rate.ok() || dataset_fetches_per_source < 0) {
      std::cerr << "corral agent: "
                << (rate.ok() ? "--dataset-fetches-per-source: want 0 or more"
                              : rate.status().message())
                << "\n";
      return 2;
    }
    config.datasets.sources = {dataset_fetches_per_source, *rate};
  }
  {
    agent::ContainerConfig& c = config.containers;
    c.crun_root = state_dir + "/crun";
    c.cache.dir = image_cache.empty() ? state_dir + "/images" : image_cache;
    auto limit = ParseMemoryMb("--image-cache-size", image_cache_size);
    if (!limit.ok()) {
      std::cerr << "corral agent: " << limit.status().message() << "\n";
      return 2;
    }
    c.cache.limit_bytes = *limit * 1024 * 1024;
    c.cache.insecure_registries = insecure_registries;
    // A pull the agent's last life left half done (its helper killed with it) goes now.
    agent::ImageCache(c.cache).CleanInterrupted();
    if (!cdi_dirs.empty()) c.cdi_dirs = cdi_dirs;
    if (!simulate.empty()) {
      // Simulated GPUs come into containers through a CDI spec of the agent's own.
      auto sim = agent::ParseSimulateGpus(simulate);
      c.cdi_kind = "corral.dev/gpu";
      c.cdi_dirs.insert(c.cdi_dirs.begin(), state_dir + "/cdi");
      if (Status st = agent::WriteSimulatedCdiSpec(state_dir + "/cdi", sim->count); !st.ok()) {
        std::cerr << "corral agent: " << st.message() << "\n";
        return 2;
      }
    }
  }
  config.lease_ms = lease_s * kSecond;
  if (job_map_dir.empty()) job_map_dir = state_dir + "/hpc-job-map";
  config.job_map_dir = job_map_dir == "none" ? "" : job_map_dir;
  config.health_program = health_program;
  config.gpu_check_interval_ms = static_cast<int64_t>(gpu_check_interval_s * 1000);
  config.usage_interval_ms = static_cast<int64_t>(usage_interval_s * 1000);
  config.health_interval_ms = static_cast<int64_t>(health_interval_s * 1000);
  config.health_limit_ms = static_cast<int64_t>(health_limit_s * 1000);
  // Exits wake the agent at once (the monitors' FIFO); this interval only paces grace-period
  // kills and the lease check.
  config.poll_interval_ms = 100;
  {
    int lo = 0, hi = 0;
    char dash = 0;
    std::istringstream in(port_range);
    if (!(in >> lo >> dash >> hi) || dash != '-' || !in.eof() || lo < 1024 || hi > 65535 ||
        lo > hi) {
      std::cerr << "corral agent: flag '--port-range': got \"" << port_range
                << "\", want LO-HI within 1024-65535\n";
      return 2;
    }
    config.port_lo = lo;
    config.port_hi = hi;
  }
  if (run_as == "owner" && geteuid() != 0) {
    std::cerr << "corral agent: flag '--run-as': owner needs the agent to run as root; use "
                 "--run-as agent\n";
    return 2;
  }
  config.run_as = {run_as == "owner", allow_root_jobs};
  if (cgroups == "auto" && geteuid() == 0) config.cgroups = agent::Cgroups::Detect();
  {
    std::error_code ec;
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) config.monitor_exe = agent::MonitorExecutableBeside(self.string());
    if (!ec) {
      // The static task helper beside corral, else corral itself (`corral container-task`).
      const std::string beside = self.parent_path().string() + "/corral-container";
      config.containers.helper_exe = access(beside.c_str(), X_OK) == 0 ? beside : self.string();
      config.gpushare_lib = agent::GpuShareLibraryBeside(self.string());
    }
    config.containers.init_exe = config.monitor_exe;
  }
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
  // torch.distributed's gloo and NCCL pick their interface from the host name, which often
  // resolves to loopback: point them at the one peers reach this node on.
  if (std::string iface = agentnet::InterfaceOf(*advertised); !iface.empty()) {
    config.job_env = {{"GLOO_SOCKET_IFNAME", iface}, {"NCCL_SOCKET_IFNAME", iface}};
  }
  // srun in a batch script reaches the head the way this agent does (docs/slurm.md).
  config.job_env["CORRAL_STEP_HEAD"] = head_url;
  if (!ca_file.empty()) {
    std::error_code abs_ec;
    auto abs = std::filesystem::absolute(ca_file, abs_ec);
    config.job_env["CORRAL_STEP_CA"] = abs_ec ? ca_file : abs.string();
  }
  // Ready (systemd's Type=notify) once the head knows this node; kept alive by the poller, which
  // supervises the runs.
  config.on_registered = [&notifier, name] {
    if (Status st = notifier.Ready("node " + name + " registered with the head"); !st.ok()) {
      std::cerr << "corral agent: " << st.ToString() << std::endl;
    }
  };
  config.on_poll = [&notifier] { notifier.Alive(); };
  BlockStopSignals();
  std::error_code ec;
  std::filesystem::create_directories(state_dir, ec);
  // The agent serves its /metrics here too; it exists once the port is known (its address).
  std::atomic<agent::Agent*> metrics_of{nullptr};
  // The relays (logs, exec, notebooks) take the head's grants for this node alone, checked with
  // the key of the credential the head issues at each registration.
  agentnet::RelayAuth relay_auth(name);
  agentnet::LogService log_service(state_dir, &relay_auth, join_token, [&metrics_of] {
    agent::Agent* a = metrics_of.load();
    return a != nullptr ? a->RenderMetrics() : std::string();
  });
  // `corral exec` into this node's runs: the head proxies its users' sessions here.
  agentnet::ExecServer exec_server(&relay_auth, [&metrics_of](const std::string& run, int32_t r) {
    agent::Agent* a = metrics_of.load();
    return a != nullptr ? a->ExecTargetOf(run, r)
                        : Result<agent::ExecTarget>(Unavailable("the agent is starting"));
  });
  log_service.SetExec(&exec_server);
  // Notebooks' traffic from the head, to the Jupyter servers on this node's loopback.
  const agentnet::NotebookRelay notebooks(
      state_dir, &relay_auth,
      net::SpliceIdle{.websocket =
                          std::chrono::milliseconds(static_cast<int64_t>(relay_idle_s * 1000))});
  net::HttpServer logs(
      [&log_service](net::HttpRequest req, net::Responder respond) {
        log_service.Handle(std::move(req), std::move(respond));
      },
      net::HttpServerOptions{
          .io_threads = 1,
          .tls = log_tls,
          .takeover_prefix = "/s/",
          .takeover = [&notebooks](net::HttpRequest req, std::shared_ptr<net::TakenConnection> c) {
            notebooks.Take(std::move(req), std::move(c));
          }});
  auto port = logs.Listen(hp->first, hp->second);
  if (!port.ok()) {
    std::cerr << "corral agent: " << port.status().ToString() << "\n";
    return 1;
  }
  logs.Start();
  config.address =
      (advertised->find(':') != std::string::npos ? "[" + *advertised + "]" : *advertised) + ":" +
      std::to_string(*port);
  // This node's Unix users, forwarded to the head under the node's credential.
  agentnet::UserForwarder users(*heads);
  auto user_socket = ServeNodeUsers(users, unix_socket);
  if (!user_socket.ok()) {
    std::cerr << "corral agent: flag '--unix-socket': " << user_socket.status().message() << "\n";
    return 1;
  }
  std::unique_ptr<agent::HeadChannel> channel = std::make_unique<agentnet::HttpHeadChannel>(
      *heads, join_token, state_dir + "/node.credential",
      [&relay_auth, &users](const std::string& credential) {
        relay_auth.SetCredential(credential);
        users.SetCredential(credential);
      });
  if (log_tls) {
    channel = std::make_unique<agentnet::LogCertChannel>(std::move(channel), log_tls, name);
  }
  agent::Agent node(config, std::move(probe), std::move(channel));
  metrics_of = &node;
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
  logs.Stop();
  metrics_of = nullptr;
  return rc;
}

}  // namespace corral::cmd
