// The head <-> agent protocol (DESIGN §7): register once, then a long-poll sync where the
// agent reports what it actually runs and the head answers what it should run. Both sides
// reconcile desired against actual, so lost or repeated messages change nothing.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/job.h"
#include "core/node.h"
#include "core/task_env.h"
#include "core/usage_series.h"

namespace corral {

// The protocol's version. An agent sends its own at registration and the head refuses one older
// than kMinAgentProtocol: such an agent would drop what newer orders carry (a task environment,
// a GPU's drain) and run jobs wrongly. An agent that sends none predates the exchange: version 1.
// Raise kAgentProtocol when a message gains a field an older peer would silently ignore, and
// kMinAgentProtocol when ignoring it would run a job wrongly.
inline constexpr int32_t kAgentProtocol = 6;  // 3: RunOrder::notebook; 4: ::interactive;
                                              // 5: RunOrder::stage_out; 6: prefetches
inline constexpr int32_t kMinAgentProtocol = 2;

struct RegisterRequest {
  std::string name;
  std::string address;
  int32_t cpu_milli = 0;
  int64_t memory_mb = 0;
  std::vector<Gpu> gpus;
  std::map<std::string, std::string> labels;
  int32_t port_lo = 0;  // the MASTER_PORT range the head picks from on this node; 0: its default
  int32_t port_hi = 0;
  // A PEM certificate signing request for the agent's log endpoint; a head that serves TLS
  // answers with the certificate (log_cert_pem) and requires it.
  std::string csr_pem;
  int32_t protocol = kAgentProtocol;  // the agent's; decoded as 1 when absent
};

struct RegisterResponse {
  std::string node_token;   // the agent's own credential for sync
  uint64_t head_epoch = 0;  // leadership epoch; agents refuse orders from an older one
  uint64_t agent_epoch = 0;
  std::string log_cert_pem;  // TLS heads: the log endpoint's certificate, signed by the head's CA
  int32_t protocol = kAgentProtocol;  // the head's; decoded as 1 when absent
};

// How a RunReport's note begins when a replica holding a share of a GPU runs on a node
// without the share shim (its GPU memory limit is not enforced).
inline constexpr char kShareNotEnforced[] = "share not enforced";

// What the agent runs for one run id on this node (one replica of a run).
struct RunReport {
  std::string run_id;  // "job.attempt"
  int32_t replica = 0;
  bool running = false;   // false: exited, exit_code valid
  int32_t exit_code = 0;  // -N: killed by signal N
  TimeMs started_at = 0;
  TimeMs ended_at = 0;
  bool fenced = false;  // the agent stopped it itself after losing the head (a loss, not a failure)
  // It ended with no recorded status (launch interrupted, monitor killed): a loss, not a failure.
  bool vanished = false;
  int32_t failed_task = -1;  // exited: the first task that failed (exit_code is its code)
  std::string error;         // exited without starting: why (e.g. the owner has no account here)
  // How its start goes, in words (a container's "pulling image REF on NODE", then "image REF
  // pulled on NODE in N ms"; a share without its shim's kShareNotEnforced...); "" for nothing
  // to say. The head makes each note (a line) an event once.
  std::string note;
  // Exited, from the run's cgroup (0 where the node has none):
  bool oom_killed = false;  // the kernel killed it for exceeding its memory limit
  int64_t peak_memory_bytes = 0;
  int64_t cpu_ms = 0;
  // Running notebooks: how long ago, as of this report, its Jupyter kernels or terminals were
  // last active (0: a kernel is running a cell, in use until a report says otherwise; -1: not
  // known). A duration, not a time: the head's clock and the node's need not agree.
  int64_t notebook_idle_ms = -1;
  // Running: its datasets are being staged and its processes not started yet, or its processes
  // have ended and its stage-out copies; `note` says how far ("staging imagenet on node2: 41%",
  // "staging out to /shared/out on node2: 41% (1.2 GiB of 2.9 GiB)"), shown as the job's
  // reason, never an event.
  bool staging = false;
  // Exited, with a stage-out declared: what it did (its bytes, or why it failed). The agent
  // reports the replica as running until its stage-out is over, so that its GPUs stay held.
  StageOutResult stage_out;
  // Samples of its use (usage_series.h) the agent has not yet had a sync acknowledge; a point
  // may come again (the head takes each sample number once).
  std::vector<UsagePoint> usage;
  bool operator==(const RunReport&) const = default;
};

// One GPU's use as the agent last sampled it (NVML, or what a simulated GPU is told).
struct GpuSample {
  int32_t index = 0;
  int32_t utilization_percent = 0;  // of the last sample period a kernel ran, 0-100
  int64_t memory_used_bytes = 0;
  // Non-empty: the GPU failed its probe (an NVML error, or it vanished), and why. The head
  // marks the node unhealthy while any GPU reports one (DESIGN §9).
  std::string fault;
  // The agent's health check of the GPU (core/gpu_health.h): `check` counts the agent's checks
  // up from 1 (0: the agent checks no health), so that the head takes each one once; `xids`
  // are the Xid events the agent has not yet delivered (sent again until a sync succeeds).
  uint64_t check = 0;
  GpuHealth health = GpuHealth::kOk;
  std::string health_reason;
  std::vector<int32_t> xids;
  GpuErrorCounters counters;
  bool operator==(const GpuSample&) const = default;
};

// The node's container image cache (docs/containers.md), for `corral nodes`.
struct ImageCacheReport {
  int64_t bytes = 0;
  int32_t images = 0;
  int64_t limit_bytes = 0;  // 0: the node reports no cache
  bool operator==(const ImageCacheReport&) const = default;
};

// How far the node's fetch ahead for one pending job (PrefetchOrder) has got, while it goes on.
struct PrefetchReport {
  JobId job_id = 0;
  std::string note;  // "staging imagenet on node2: 41%", or why it does not fetch
  bool operator==(const PrefetchReport&) const = default;
};

struct SyncRequest {
  std::string node;
  uint64_t agent_epoch = 0;
  uint64_t desired_version = 0;     // last version the agent received; the head holds if unchanged
  int64_t wait_ms = 0;              // how long the head may hold the call
  std::vector<RunReport> runs;      // everything alive or exited-but-not-yet-released
  std::vector<int32_t> busy_ports;  // ports of the node's range a socket there holds
  std::vector<GpuSample> gpu_samples;  // empty: not measured (an older agent sends none)
  ImageCacheReport image_cache;
  // The digests of the datasets its cache holds (docs/datasets.md); the head prefers nodes
  // holding a job's datasets.
  std::vector<std::string> datasets;
  // Its fetches ahead under way (SyncResponse::prefetch), one per job.
  std::vector<PrefetchReport> prefetching;
  // The agent applies delta answers (SyncResponse::delta); an older agent sends false and is
  // answered in full.
  bool deltas = false;
};

// What the head wants on this node for one replica of one run.
struct RunOrder {
  std::string run_id;
  JobId job_id = 0;
  int32_t attempt = 0;
  int32_t replica = 0;
  std::vector<std::string> command;
  // A run's order names its run's layout (job, placement of every replica, hosts, port): the
  // receiving side derives each task's environment from it with TaskEnv (ExpandOrderEnv), so a
  // sync answer carries a few hundred bytes a run, not ~40 variables a task. layout.job_id == 0:
  // none, and env is explicit (a job step's, which has Slurm's step variables on top).
  RunLayout layout;
  std::string step_token;  // a batch step's CORRAL_STEP_TOKEN (srun may start steps with it)
  std::map<std::string, std::string> env;  // task 0's full environment (DESIGN §8)
  // With several tasks per replica, one full environment per task (task_envs[0] == env).
  std::vector<std::map<std::string, std::string>> task_envs;
  std::string workdir;
  std::string user;       // the job's owner: an agent running as root runs the tasks as this user
  int32_t cpu_milli = 0;  // the replica's CPU cap (its cgroup's); 0: none
  int64_t memory_mb = 0;  // the replica's memory cap; 0: none
  std::vector<int32_t> gpus;
  ContainerSpec container;  // the replica's tasks run in one container of this image
  // The datasets the node stages into its cache before it starts the tasks (resolved: each
  // names its digest and source), docs/datasets.md.
  std::vector<DatasetRef> datasets;
  // The head's cap on this replica's fetches from each source (DatasetSourceKey), bytes per
  // second: its share of the source's cluster-wide budget (docs/datasets.md). The agent paces
  // each fetch to the lower of this and its own --dataset-source-rate. Absent: no cap.
  std::map<std::string, int64_t> source_rates;
  // Variables the node adds to every task's environment (where its datasets are): set by the
  // agent, never sent.
  std::map<std::string, std::string> local_env;
  // Copied back as the owner once the replica's processes end (core/stage_out.h); with
  // several replicas, each into DEST/replica-N.
  StageOut stage_out;
  // The command is a Jupyter server: the agent gives it a loopback port and a token of its own
  // and relays the head's /s/JOB/ traffic to it (docs/interactive.md).
  bool notebook = false;
  // The job is an interactive session (JobSpec::interactive): its monitor ends it when the agent
  // has been gone longer than the agent's lease (monitor.h), where a batch job outlives it.
  bool interactive = false;
  // A replica of an elastic run the head resizes (docs/elastic.md): its monitor ends it, like
  // an interactive session, once its agent has been gone longer than the lease. The head drops
  // a replica whose node it declares lost (--down-after, above the lease) and tells the others;
  // one left running would rejoin the job's rendezvous behind the head's back and hold GPUs the
  // scheduler has given to another.
  bool elastic = false;
  bool stop = false;  // stop it: signal, grace, then SIGKILL
  int32_t stop_signal = 15;
  int64_t grace_ms = 10000;
  // Signals asked for while it runs (scancel --signal): how many so far and the last one. The
  // agent sends `signal` once each time `signals` grows past what it has sent.
  int32_t signals = 0;
  int32_t signal = 0;
  // Replicas of this elastic run lost with their nodes so far (docs/elastic.md). Each time it
  // grows past what the agent has acted on, the agent kills the replica's torchrun workers, so
  // that torchrun re-rendezvouses with the replicas left at once instead of its workers waiting
  // for the lost peer in a collective.
  int32_t peers_lost = 0;
  bool operator==(const RunOrder&) const = default;
};

// Whether an order's layout can give its environments: errors name the field (a layout that
// does not hold the order's replica, or task counts out of range). The codec checks every
// order it decodes; an order without a layout is fine.
Status CheckOrderLayout(const RunOrder& order);
// Fills env (and task_envs, with several tasks) from layout, replica and step_token, after
// CheckOrderLayout; an order without a layout is left as it is. The agent does it only for the
// runs it starts, not for every order of every answer.
Status ExpandOrderEnv(RunOrder* o);

// Datasets the head asks a node to fetch into its cache ahead of a pending job that holds a
// reservation there (docs/datasets.md, "Staging while a job waits"): fetched through the node's
// queue for their source, read as the job's owner, only into free cache space, and pinned by
// nothing once fetched (evictable like any unused copy, should the job start elsewhere).
struct PrefetchOrder {
  JobId job_id = 0;
  std::string user;                  // the job's owner
  std::vector<DatasetRef> datasets;  // those the node lacks, resolved (digest, source)
  bool operator==(const PrefetchOrder&) const = default;
};

struct SyncResponse {
  uint64_t head_epoch = 0;
  uint64_t desired_version = 0;
  std::vector<RunOrder> runs;  // desired runs; a reported run absent here may be forgotten
  bool reregister = false;     // the head does not know this agent (epoch mismatch)
  // A delta answer lists only what changed since the agent's base_version: for each job in
  // changed_jobs, `runs` holds all of its orders on this node now (none: it has none left).
  // The orders of jobs not named are those of base_version. A full answer (delta false)
  // lists every desired run.
  bool delta = false;
  uint64_t base_version = 0;
  std::vector<JobId> changed_jobs;  // ascending
  // Every fetch ahead the head wants of this node now, in full in every answer (a delta's
  // too): one absent from the latest answer is no longer wanted.
  std::vector<PrefetchOrder> prefetch;
};

}  // namespace corral
