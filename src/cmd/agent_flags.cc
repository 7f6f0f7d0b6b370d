#include "cmd/agent_flags.h"

#include <unistd.h>

#include "cmd/local_socket.h"

namespace corral::cmd {
namespace {

void AddAgentHeadFlags(CLI::App& app, AgentFlags& f) {
  app.add_option("--head", f.head_url,
                 "the head's URL, e.g. https://10.0.0.1:7070, or several heads' URLs separated "
                 "by commas (the agent follows the leader)")
      ->required();
  app.add_option("--ca", f.ca_file,
                 "with an https --head: the CA that signed the head's certificate (the head's "
                 "STATE_DIR/tls/ca.pem; default $CORRAL_CA, else the system's CA store)");
  app.add_option("--join-token-file", f.join_token_file,
                 "file holding the join token; once the node has joined, its own credential "
                 "(STATE_DIR/node.credential) registers it again and this file may be removed")
      ->required();
  app.add_option("--name", f.name, "this node's name")->required();
  app.add_option("--state-dir", f.state_dir, "where runs, logs and records are kept")->required();
  app.add_option("--advertise-addr", f.advertise,
                 "the address the head and other nodes reach this node on (MASTER_ADDR of its "
                 "runs); default: the local address of the route toward the head");
  app.add_option("--listen", f.listen,
                 "HOST:PORT to serve logs to the head on (default: the advertised address, any "
                 "port)");
  app.add_option("--lease", f.lease_s,
                 "seconds without the head before stopping all runs; also how long interactive "
                 "sessions outlive this agent (batch jobs outlive it)");
  app.add_option("--relay-idle-timeout", f.relay_idle_s,
                 "seconds a notebook's WebSocket relayed to its Jupyter server may pass no byte "
                 "either way before it is closed (its plain requests: 30)")
      ->check(CLI::Range(1.0, 7.0 * 86400));
  f.unix_socket = DefaultLocalSocket();
  app.add_option("--unix-socket", f.unix_socket,
                 "serve this node's Unix users on this local socket: corral there needs no "
                 "token, each request is forwarded to the head as its caller's Unix user under "
                 "this node's credential; default $RUNTIME_DIRECTORY/corral.sock under systemd "
                 "(/run/corral-node/corral.sock), else none; none: no socket");
}

void AddAgentNodeFlags(CLI::App& app, AgentFlags& f) {
  app.add_option("--simulate-gpus", f.simulate, "N or NxMODEL: simulated GPUs instead of NVML");
  app.add_option("--nvml-library", f.nvml_library,
                 "the NVML library to load (default: the driver's libnvidia-ml.so.1)");
  app.add_option("--label", f.labels, "node label k=v (repeatable), e.g. rack=r1");
  app.add_option("--port-range", f.port_range,
                 "LO-HI: MASTER_PORT range for runs whose replica 0 is on this node");
  app.add_option("--cpus", f.cpus, "CPUs to offer (default: what this process may use)");
  app.add_option("--memory", f.memory, "memory to offer, e.g. 64G (default: MemTotal)");
  app.add_option("--health-program", f.health_program,
                 "a node health check run at start and every --health-interval, killed after "
                 "--health-limit; exit 0 ok, 1 warn, 2 critical (drains every GPU), reason on "
                 "stdout (docs/gpu-health.md)");
  app.add_option("--health-interval", f.health_interval_s, "seconds between health program runs")
      ->check(CLI::Range(1.0, 86400.0));
  app.add_option("--health-limit", f.health_limit_s,
                 "seconds a health program may run before it is killed (Slurm's 60)")
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--gpu-check-interval", f.gpu_check_interval_s,
                 "seconds between the GPU health checks the head counts (a GPU not ok is "
                 "reported at once)")
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--usage-interval", f.usage_interval_s,
                 "seconds between two samples of a running job's GPU, CPU and memory use, kept "
                 "as its efficiency series (corral eff)")
      ->check(CLI::Range(0.1, 86400.0));
  app.add_option("--mps-control", f.mps_control,
                 "nvidia-cuda-mps-control, run per owner per GPU for MPS shares (default: found "
                 "in /usr/bin, /usr/local/bin or /usr/local/cuda/bin; \"none\": off)");
}

void AddAgentJobFlags(CLI::App& app, AgentFlags& f) {
  // Like slurmd: a root agent runs each job as its owner; `corral up` (one user) runs jobs as
  // whoever started it.
  f.run_as = geteuid() == 0 ? "owner" : "agent";
  app.add_option("--run-as", f.run_as,
                 "owner: each task runs as its job owner's Unix user (needs root); agent: as "
                 "this agent's user (default: owner when root)")
      ->check(CLI::IsMember({"owner", "agent"}));
  app.add_option("--cgroups", f.cgroups,
                 "auto: a cgroup per replica (v2, else v1) capping its CPUs, memory and "
                 "processes, where this agent may make them (root); off: none")
      ->check(CLI::IsMember({"auto", "off"}));
  app.add_flag("--allow-root-jobs", f.allow_root_jobs,
               "with --run-as owner, also run jobs owned by root");
  app.add_option("--hpc-job-map-dir", f.job_map_dir,
                 "where to write one file per GPU naming the jobs on it, for dcgm-exporter's "
                 "--hpc-job-mapping-dir (default STATE_DIR/hpc-job-map; \"none\": off)");
  app.add_option("--image-cache", f.image_cache,
                 "where container images are unpacked, shared by runs (default STATE_DIR/images; "
                 "on disk, not tmpfs)");
  app.add_option("--image-cache-size", f.image_cache_size,
                 "evict unused images beyond this size, least recently used first (default 20G)");
  app.add_option("--dataset-cache", f.dataset_cache,
                 "where datasets jobs declare are cached, one copy per version shared by runs "
                 "(default STATE_DIR/datasets; on local disk)");
  app.add_option("--dataset-cache-size", f.dataset_cache_size,
                 "over 95% of this, unused datasets are evicted, least recently used first, down "
                 "to 70% (default 0: no limit)");
  app.add_option("--dataset-fetches-per-source", f.dataset_fetches_per_source,
                 "at most this many datasets fetched at once from one source (a file system, or "
                 "an HTTP host), the others queued in order (default 2; 0: no limit)");
  app.add_option("--dataset-source-rate", f.dataset_source_rate,
                 "bytes per second all fetches from one source may read together, e.g. 100M "
                 "(default 0: no limit)");
  app.add_option("--insecure-registry", f.insecure_registries,
                 "HOST:PORT of a registry reached over plain HTTP (repeatable; loopback ones are)");
  app.add_option("--cdi-dir", f.cdi_dirs,
                 "a directory of CDI specs for the GPUs (repeatable; default /etc/cdi "
                 "/var/run/cdi; simulated GPUs: STATE_DIR/cdi, written by the agent)");
}

}  // namespace

void AddAgentFlags(CLI::App& app, AgentFlags& flags) {
  app.add_flag("--check", flags.check,
               "check what the agent would use on this node (NVML, nvidia-smi, cgroups, "
               "containers, shares, MPS, health program, the head), print it and exit: 1 if a "
               "part failed (docs/gpu-suite.md); needs only the flags that choose those parts");
  AddAgentHeadFlags(app, flags);
  AddAgentNodeFlags(app, flags);
  AddAgentJobFlags(app, flags);
}

}  // namespace corral::cmd
