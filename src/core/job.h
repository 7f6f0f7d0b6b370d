// Jobs, their specs and their runs (attempts): the data model of DESIGN §4 and §5.
#pragma once

#include <utility>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/array_deps.h"
#include "core/container_spec.h"
#include "core/dataset.h"
#include "core/notify_spec.h"
#include "core/resources.h"
#include "core/stage_out.h"
#include "core/stop_cause.h"
#include "core/time.h"
#include "core/usage_series.h"

namespace corral {

using JobId = uint64_t;

// A run id is "job.attempt"; an agent starts a run id at most once.
struct RunId {
  JobId job = 0;
  int32_t attempt = 0;
  bool operator==(const RunId&) const = default;
  auto operator<=>(const RunId&) const = default;
};
std::string ToString(const RunId& id);
bool ParseRunId(const std::string& text, RunId* out);
// A job step's share on one node runs under "job.attempt-sSTEP".
std::string StepRunId(const RunId& run, int32_t step);
bool ParseStepRunId(const std::string& text, RunId* run, int32_t* step);

enum class JobState { kPending, kScheduled, kRunning, kSucceeded, kFailed, kCancelled };
const char* JobStateName(JobState s);
bool ParseJobState(const std::string& text, JobState* out);

// Why a pending job waits, as a fixed set that programs act on (metrics, Slurm's reason codes,
// the dashboard); the sentence beside it (Job::pending_reason) is for people.
enum class PendingCode : uint8_t {
  kNone,             // not yet looked at by a scheduling pass
  kResources,        // no free room for it now
  kReserved,         // holds a reservation (the sentence says when and where)
  kPreempting,       // waits for runs it preempted to end
  kQueueLimit,       // its queue, or its user in the queue, is at a limit
  kNoFit,            // does not fit the cluster even when idle
  kHeld,             // held by its user
  kDependency,       // waits for a dependency
  kDependencyNever,  // a dependency that can never be met
  kArrayLimit,       // its array runs as many elements as it may at once
  kReservationWait,  // kept off nodes by an admin reservation, or waits for its own one
};
const char* PendingCodeName(PendingCode c);
bool ParsePendingCode(const std::string& text, PendingCode* out);

// How far a pending job's estimated start may be trusted:
//  kHigh: it rests on time limits and known instants only: a bound (the job starts by then if
//    the order stays as it is and nothing arrives ahead of it);
//  kMedium: on predictions from at least 4 ended jobs of their owners;
//  kLow: on a prediction from fewer, from other users' jobs (a queue's history), or on none.
enum class EstimateConfidence : uint8_t { kHigh, kMedium, kLow };
const char* EstimateConfidenceName(EstimateConfidence c);
bool ParseEstimateConfidence(const std::string& text, EstimateConfidence* out);
struct PendingReason {
  PendingCode code = PendingCode::kNone;
  std::string text;
};
inline bool IsTerminal(JobState s) {
  return s == JobState::kSucceeded || s == JobState::kFailed || s == JobState::kCancelled;
}

struct JobSpec {
  bool IsElastic() const { return min_replicas > 0 && min_replicas < replicas; }

  std::string name;
  std::vector<std::string> command;  // argv; command[0] is looked up on PATH
  std::map<std::string, std::string> env;
  std::string workdir;
  std::string queue = "default";
  int32_t replicas = 1;  // gang size: all or nothing; an elastic job's largest size (MAX)
  // An elastic job (docs/elastic.md): the fewest replicas it runs with (MIN, below replicas);
  // it starts once MIN fit, grows toward replicas, shrinks back to MIN before it is stopped.
  // 0: a rigid gang of `replicas`.
  int32_t min_replicas = 0;
  // An elastic job's hot spares (docs/elastic.md): replica-sized slots the scheduler holds for
  // the run on other nodes while GPUs are idle, so that a replica lost with its node is
  // replaced in the pass that learns of the loss. 0..replicas - min_replicas; 0: none.
  int32_t hot_spares = 0;
  // At most this many of the gang's replicas on one node (1: each on a different node, as
  // Slurm's --nodes means); 0: no limit, the placer packs them onto as few nodes as it can.
  int32_t max_replicas_per_node = 0;
  int32_t tasks_per_replica = 1;  // processes per replica; -1: one per GPU ("gpu")
  Resources per_replica{kGpuMilli * 0, 1000, 0};
  std::string gpu_model;                           // empty: any
  std::map<std::string, std::string> node_labels;  // all must match
  DurationMs time_limit_ms = 0;                    // 0: none
  int32_t priority = 0;                            // higher first
  bool preemptible = false;
  std::string reservation;  // an admin reservation it runs in (Slurm's --reservation)
  // The service this job is a replica of (core/service.h); set by the head, never by a user.
  std::string service;
  int32_t max_restarts = 0;        // restarts after node loss or failure
  int32_t checkpoint_signal = 15;  // SIGTERM
  DurationMs grace_ms = 10 * kSecond;
  std::string array;                     // "0-999%8": submit one job per index (ArraySpec)
  std::vector<Dependency> dependencies;  // all must hold before the job may start
  // A Slurm batch job: replica 0 runs the script and the others only hold their nodes, so
  // replica 0's end stops the rest and its exit code alone decides the outcome.
  bool batch = false;
  bool hold = false;        // submitted held (sbatch --hold): it waits for a release
  ContainerSpec container;  // empty image: the tasks run on the node as they are
  // An interactive session (kind "interactive": `corral run`, srun --pty, salloc): its run only
  // holds the allocation while a client runs commands in it; it ends when the client does,
  // goes after the head's inactive limit without the client, and its queue's idle_timeout
  // applies to it (docs/interactive.md).
  bool interactive = false;
  // A notebook session (`corral notebook`, interactive only): the agent runs the command as a
  // Jupyter server on the node's loopback with a token of its own, and the head proxies
  // /s/JOB/ to it for the job's owner (docs/interactive.md).
  bool notebook = false;
  NotifySpec notify;  // --mail-type/--mail-user: whom to mail for which events
  // The datasets it reads (docs/datasets.md): staged on each of its nodes before it starts.
  // The head fills in each reference's digest and source when it accepts the job.
  std::vector<DatasetRef> datasets;
  // A directory each replica's node copies back to shared storage once the replica's processes
  // end, before its GPUs are freed (docs/datasets.md); empty: none.
  StageOut stage_out;
};

enum class RunState { kScheduled, kRunning, kSucceeded, kFailed, kCancelled, kPreempted, kLost };
const char* RunStateName(RunState s);
bool ParseRunState(const std::string& text, RunState* out);
inline bool IsRunOver(RunState s) { return s != RunState::kScheduled && s != RunState::kRunning; }

constexpr int32_t kNotExited = -1000;  // exit code slot of a replica that has not exited
// Exit code slot of an elastic run's replica dropped with its lost node (it never reports).
constexpr int32_t kReplicaLost = -1001;

// Where one replica of a run lives. The scheduler fills node and gpus (whole GPUs); a share
// below a whole GPU (gpu_milli) and the number of tasks are what let fractional GPUs and
// several processes per replica use the same placement.
struct ReplicaPlacement {
  std::string node;
  std::vector<int32_t> gpus;       // GPU indices on that node
  std::vector<int32_t> gpu_milli;  // share of each GPU in milli-GPUs; empty: whole GPUs
  int64_t gpu_memory_mb = 0;       // memory of each shared GPU it may use; 0: all
  int32_t tasks = 1;               // processes started for this replica
  bool operator==(const ReplicaPlacement&) const = default;
};

// One GPU of a placement with its share.
struct GpuShare {
  int32_t index = 0;
  int32_t milli = kGpuMilli;
  int64_t memory_mb = 0;
};
std::vector<GpuShare> Shares(const ReplicaPlacement& p);

// A job step (Slurm's): tasks a running batch job starts inside its own allocation (srun in
// its script), on some of its replicas' nodes. Each replica's share runs as a run of its own
// on that node ("J.A-sS", StepRunId) with the replica's GPUs, so a step never leaves the
// allocation and ends with it.
struct Step {
  int32_t id = 0;  // SLURM_STEP_ID: 0, 1, ... within the run
  std::vector<std::string> command;
  std::map<std::string, std::string> env;  // srun's environment, the base of every task's
  std::string workdir;
  std::vector<int32_t> replicas;    // the allocation's replicas it runs on; the step's node i
  std::vector<int32_t> tasks;       // tasks on each of them (block distribution of ranks)
  bool gpus_per_task = false;       // each task sees only its own GPU
  std::vector<int32_t> exit_codes;  // per entry of replicas; kNotExited while running
  TimeMs started_at = 0;
  TimeMs ended_at = 0;  // when the last of its replicas exited
  bool operator==(const Step&) const = default;
};

struct Run {
  int32_t attempt = 0;
  std::vector<ReplicaPlacement> placement;  // one per replica
  RunState state = RunState::kScheduled;
  TimeMs scheduled_at = 0;
  TimeMs started_at = 0;  // 0 until the first replica reports running
  TimeMs ended_at = 0;
  std::vector<int32_t> exit_codes;  // per replica; -N: killed by signal N; kNotExited while alive
  std::string reason;               // why it ended, in words
  // Why it was asked to stop, then why it ended (RunEndCause): what the core decides by.
  StopCause cause = StopCause::kNone;
  bool stop_requested = false;  // cancel/preempt/time limit sent to the agents
  TimeMs stop_requested_at = 0;
  TimeMs last_checkpoint_at = 0;  // when the job last reported a checkpoint in this run
  int32_t master_port = 0;        // MASTER_PORT on replica 0's node; 0: none
  int32_t failed_replica = -1;    // the first replica to exit non-zero unasked; -1: none
  int32_t failed_task = -1;       // and its first failing task
  int64_t peak_memory_bytes = 0;  // the largest replica's peak (from its cgroup; 0: unknown)
  int64_t cpu_ms = 0;             // CPU time of all replicas together
  // Each replica's use over time, as its agent sampled it (usage_series.h); empty: none yet.
  std::vector<ReplicaUsage> usage;
  std::vector<Step> steps;  // job steps started inside it (Step)
  int32_t signals = 0;      // signals sent to its replicas on request (scancel --signal)
  int32_t last_signal = 0;
  int32_t step_signals = 0;  // and to its steps' tasks
  int32_t last_step_signal = 0;
  // An elastic run's replicas that left it (a shrink, a lost node), ascending positions in
  // placement; replicas it grew by are appended to placement. Its size is placement less these.
  std::vector<int32_t> departed;
  int32_t resizes = 0;  // how many times it grew or shrank
  // When each replica of an elastic run that resized began and stopped holding its resources,
  // by position in placement: joined_at 0 is "with the run" (from started_at), left_at 0 is
  // "to the run's end". A replica taken away holds its GPUs until it exits; one lost with its
  // node, until the node was declared lost. Both empty for a run that never resized.
  std::vector<TimeMs> joined_at;
  std::vector<TimeMs> left_at;
  // How many times replicas of it were lost with their nodes: its survivors' orders carry it
  // (RunOrder::peers_lost), and their agents kill their torchrun workers each time it grows.
  int32_t peers_lost = 0;
  // [from, to) during which replica r held its resources, for a run that ends (or is counted
  // up to) `end`; from >= to: none of it (the run had not started, or the replica never ran).
  std::pair<TimeMs, TimeMs> ReplicaHeld(int32_t r, TimeMs end) const;
  // Replica-milliseconds held up to `end`: the sum of ReplicaHeld over its replicas (a rigid
  // run: its replicas times its length).
  DurationMs ReplicaMs(TimeMs end) const;
  int32_t LiveReplicas() const { return static_cast<int32_t>(placement.size() - departed.size()); }
  bool Departed(int32_t replica) const;
  // What the run holds: its live replicas (LivePlacement), then those leaving it that have not
  // exited yet (Leaving of them).
  std::vector<ReplicaPlacement> HeldPlacement() const;
  int32_t Leaving() const;
  // Its replicas that have not left, in order.
  std::vector<ReplicaPlacement> LivePlacement() const;
};

struct JobEvent {
  TimeMs at = 0;
  std::string what;  // "submitted", "scheduled", "running", "preempted", ...
  std::string reason;
};

struct Job {
  JobId id = 0;
  std::string owner;
  JobSpec spec;
  JobState state = JobState::kPending;
  TimeMs submitted_at = 0;
  TimeMs ended_at = 0;
  std::vector<Run> runs;
  std::vector<JobEvent> events;
  PendingCode pending_code = PendingCode::kNone;  // why it waits (not durable)
  std::string pending_reason;                     // the same in a sentence
  int32_t exit_code = 0;                          // of the final run: first non-zero replica code
  // The submitting client's id for this request: a retry with the same id (after a lost
  // answer or a failover) gets this job back instead of a second one. "" when none was sent.
  std::string request_id;
  JobId array_id = 0;  // an array element: the array's id (its first element's)
  int32_t array_index = -1;
  int32_t array_max_running = 0;  // at most this many elements of the array run at once
  bool held = false;  // a user hold (scontrol hold): pending, not scheduled until released
  // Not durable, like pending_reason: its run's GPUs have all been idle since (0: not idle).
  TimeMs idle_since = 0;
  // Not durable either: a pending job's estimated start (0: none) and the nodes it expects,
  // from the head's last start-time estimate.
  TimeMs estimated_start = 0;
  std::vector<std::string> estimated_nodes;
  EstimateConfidence estimate_confidence = EstimateConfidence::kHigh;
  // Not durable either: the nodes of the hot spares the scheduler holds for its run now
  // (JobSpec::hot_spares; held between passes, given up to any job that needs them).
  std::vector<std::string> hot_spare_nodes;

  bool IsArrayElement() const { return array_id != 0; }

  const Run* CurrentRun() const { return runs.empty() ? nullptr : &runs.back(); }
  Run* CurrentRun() { return runs.empty() ? nullptr : &runs.back(); }
};

// A job's size as `corral jobs` shows it: an elastic job's replicas held now, then its range
// ("3/2:4"; "0/2:4" while it waits); a rigid job's replicas ("4").
std::string ReplicaSizeText(const Job& job);

}  // namespace corral
