// The head's core (DESIGN §7, §9): the pure, synchronous state machine of the control plane.
// It owns the durable ClusterState, the scheduler and the indexes derived from them, takes
// one command at a time with the time as an argument, and answers it directly. Every change
// it makes is a Change applied through ApplyChange and queued for the shell, which commits
// the queued changes (group commit) and only then sends replies and agent orders.
//
// No I/O, no threads, no clock, no randomness: secrets arrive as arguments. Owned by the
// Head shell and used only on its state-machine thread; tests drive it directly.
#pragma once

#include <utility>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/agent_protocol.h"
#include "core/identity.h"
#include "core/source_budget.h"
#include "core/task_env.h"
#include "core/usage.h"
#include "core/views.h"
#include "head/admission.h"
#include "head/cluster_state.h"
#include "head/core_indexes.h"
#include "head/dataset_prefetch.h"
#include "head/desired_log.h"
#include "head/explanations.h"
#include "head/gpu_watch.h"
#include "head/node_watch.h"
#include "head/scheduler_model.h"
#include "head/service_autoscaler.h"
#include "head/session_clocks.h"
#include "sched/runtime_estimate.h"
#include "sched/scheduler.h"

namespace corral::head {

struct CoreConfig {
  std::string checkpoint_root = "/tmp/corral-checkpoints";
  DurationMs unreachable_after_ms = 15 * kSecond;
  DurationMs down_after_ms = 60 * kSecond;
  int32_t master_port_lo = 29500;  // MASTER_PORT range on a node
  int32_t master_port_hi = 29999;
  // Elastic jobs' rendezvous stores (docs/elastic.md): the address replicas reach the head's
  // host at ("": none is run, and elastic jobs get no CORRAL_RDZV_* variables), and the ports
  // the stores listen on there (job id modulo the range).
  std::string rdzv_host;
  int32_t rdzv_port_lo = 29400;
  int32_t rdzv_port_hi = 29499;
  // A running run whose GPUs all stay under this utilisation for idle_after_ms is idle.
  int32_t idle_threshold_percent = 1;
  DurationMs idle_after_ms = 30 * kMinute;
  // Queues (each with its sub-queues) that stop idle runs: a preemptible run flagged idle there
  // gets an "idle warning" event, and is cancelled idle_stop_warning_ms later unless its GPUs
  // were used meanwhile. Empty: none.
  std::set<std::string> idle_stop_queues;
  DurationMs idle_stop_warning_ms = 10 * kMinute;
  // An interactive session whose client has not been heard from (a touch, an exec) for this
  // long is ended, as Slurm's InactiveLimit ends an allocation whose srun or salloc is gone.
  // Batch jobs are never affected. 0: never.
  DurationMs inactive_limit_ms = 5 * kMinute;
  // Jobs that ended longer ago than this leave memory (JobsRetired, core_retire.cc); the
  // store answers for them. 0: every job stays in memory.
  DurationMs retain_finished_ms = kDay;
  // A run asked to stop whose node has not confirmed the stop this long after its grace is
  // declared lost and its GPUs freed: a node that keeps syncing but never answers (a stop for
  // a run it never started, once) must not hold GPUs forever.
  DurationMs stop_confirm_after_ms = 2 * kMinute;
  // The highest priority a plain user may give a job: priority orders the queue and decides
  // who may preempt whom, so above this it takes an admin (or an admin of the job's queue).
  int32_t max_user_priority = 0;
  // What one user may put in the queue: elements of one array submission, and jobs pending at
  // once over all queues. 0: no limit (the head's defaults are in HeadConfig). Admins are not
  // held to them.
  int32_t max_array_size = 0;
  int32_t max_pending_per_user = 0;
  // A GPU the health checks drained is returned after this many clean checks in a row.
  int32_t gpu_clean_checks_to_return = 3;
  sched::SchedulerConfig scheduler;
  // How run times are predicted from ended jobs (which history, how fast it forgets).
  sched::EstimatorConfig estimator;
  // How pending jobs' start times are estimated (EstimateStarts): the scheduler's pass run
  // forward on a copy of its state, within a budget of passes, or the older forward sweep.
  sched::EstimateOptions start_estimates;
  // What the simulator knows of a job and a head cannot (its true duration and progress, for
  // the baseline policies and the oracle), applied to every job's scheduler input. Unset in a
  // head.
  std::function<void(const Job&, sched::PendingJob*)> adjust_scheduler_input;
};

struct JobFilter {
  std::set<JobState> states;  // empty: all
  std::string queue;
  std::string user;
  JobId after = 0;
  int32_t limit = 1000;
  JobId array_id = 0;      // only this array's elements
  TimeMs ended_since = 0;  // > 0: only jobs still live or that ended at or after this time
};
// Whether `job` passes the filter's tests (all but `after` and `limit`).
bool FilterMatches(const JobFilter& f, const Job& job);

// What `scontrol update` changes of a pending job; an unset field stays as it is.
struct JobUpdate {
  std::optional<DurationMs> time_limit_ms;  // 0: none
  std::optional<int32_t> priority;
  std::optional<std::string> queue;
};

// srun's request for a job step (core_steps.cc).
struct StepRequest {
  std::vector<std::string> command;
  std::map<std::string, std::string> env;
  std::string workdir;            // "": the job's
  std::vector<int32_t> replicas;  // of the allocation, in the step's node order; empty: all
  int32_t ntasks = 0;             // > 0: spread over the nodes, first nodes one more
  int32_t tasks_per_replica = 1;  // when ntasks is 0
  bool gpus_per_task = false;
};

// The credential a run's batch step holds to start steps of that run.
std::string StepToken(const std::string& step_key, const RunId& run);

struct TokenRequest {
  std::string user;
  Role role = Role::kUser;
  std::vector<std::string> queues;
  DurationMs expires_after_ms = 0;  // 0: never
  std::vector<std::string> groups;  // for queues' access lists
};

// Where `corral exec` runs a command: a running replica of a job, and the agent to ask.
struct ExecTarget {
  JobId job = 0;
  std::string run_id;  // "job.attempt"
  int32_t replica = 0;
  std::string node;
  std::string address;  // the node agent's host:port
  std::string owner;
  std::string caller;     // who asked (for the audit log)
  bool notebook = false;  // the job serves a notebook at /s/JOB/
};

// Which output of a job `corral logs` reads: a replica of its latest placed run, a task in it,
// and the job's own processes or one step's (-1: the job's own).
struct LogQuery {
  int32_t replica = 0;
  int32_t task = 0;
  int32_t step = -1;
};

// Where that output is: the run on a node's agent. An empty run_id: nothing was placed yet, so
// there is no output so far.
struct LogSource {
  JobState job_state = JobState::kPending;
  std::string run_id;  // "job.attempt", or a step's ("job.attempt-sS")
  std::string node;
  std::string address;  // the node agent's host:port
};

// What a session's client learns from each touch: the job, and when an idle session is ended
// unless used (0: it is not idle).
struct SessionStatus {
  Job job;
  TimeMs idle_stop_at = 0;
  DurationMs inactive_limit_ms = 0;  // the head's: the client touches well within it
};

// What the shell must do after a command: commit these changes, then answer parked syncs
// of these nodes.
struct CoreOutput {
  std::vector<Change> changes;
  std::set<std::string> nodes_to_notify;
};

// What the core owes its driver next: a scheduling pass, a snapshot (retired jobs wait on one
// before their rows go), and when to look again for finished jobs to retire. The shell and
// the simulator read it after each command and tick.
struct CoreAgenda {
  bool schedule = false;
  bool snapshot = false;
  TimeMs next_retire_check = 0;
};

class HeadCore {
 public:
  explicit HeadCore(CoreConfig config);

  // --- recovery and start ---
  // Takes the state of the snapshot rows, applies the changes after it, and rebuilds the
  // scheduler and indexes. Emits nothing. `snapshot` may be newer than the rows (a standby's
  // WarmState): changes it holds already are not applied again, only marked for the next
  // snapshot rows.
  Status Recover(ClusterState snapshot, const std::vector<Change>& tail, TimeMs now);
  // Begins a leadership: emits HeadStarted with the next epoch and the default queue.
  // `new_step_key` (random, from the shell) becomes the step key if the cluster has none.
  void Start(TimeMs now, const std::string& new_step_key = "");

  // --- identity ---
  Result<Caller> Authenticate(const std::string& bearer, TimeMs now) const;
  // Issues a credential for `secret` (a random 256-bit value from the shell).
  Result<Credential> IssueToken(const Caller& by, const TokenRequest& req,
                                const std::string& secret, TimeMs now);
  Result<Credential> RevokeToken(const Caller& by, const std::string& id, TimeMs now);
  std::vector<Credential> ListTokens(const Caller& by) const;
  bool HasCredentialFor(Caller::Kind kind, Role role) const;

  // --- jobs ---
  // `owner` empty: the caller. Naming another owner needs an admin. A `request_id` already
  // used by the same owner answers that job (an array: its first element) and changes
  // nothing: a client's retry after a lost answer never makes a second job.
  Result<Job> Submit(const Caller& by, JobSpec spec, std::string owner, TimeMs now,
                     std::string request_id = "");
  // Cancels a job; an array's id cancels every element unless `element_only`. `max_elements`
  // > 0: an array's first that many live elements only, `*more` set if any are left (the shell
  // cancels a huge array a slice per turn, other commands in between).
  Result<Job> Cancel(const Caller& by, JobId id, TimeMs now, bool element_only = false,
                     int32_t max_elements = 0, bool* more = nullptr);
  Result<Job> ReportCheckpoint(const Caller& by, JobId id, TimeMs now);
  // Stops a live job's run and puts the job back in the queue under the same id (Slurm's
  // scontrol requeue); the job itself may ask. A pending job stays as it is.
  Result<Job> Requeue(const Caller& by, JobId id, TimeMs now);
  // Sends `signal` to every process of a running job (an array's id: its running elements),
  // which keeps running (scancel --signal).
  // `to`: a batch job's steps by default (Slurm's scancel --signal), its batch step, or all.
  enum class SignalTarget { kDefault, kBatch, kAll };
  Result<Job> Signal(const Caller& by, JobId id, int32_t signal, SignalTarget to, TimeMs now);
  // A user hold on a pending job (an array's id: its pending elements), or its release.
  Result<Job> SetHold(const Caller& by, JobId id, bool hold, TimeMs now);
  // A pending job's time limit, priority or queue (core_jobs.cc), within the caller's rights
  // as Slurm's scontrol update: only an admin raises a limit or a priority; a new queue must
  // admit the caller and have room. A running job, or a field refused, changes nothing.
  Result<Job> UpdateJob(const Caller& by, JobId id, const JobUpdate& update, TimeMs now);
  // Job steps (core_steps.cc): only the job itself (a kJob caller) starts them.
  Result<Step> StartStep(const Caller& by, JobId id, StepRequest req, TimeMs now);
  Result<Step> GetStep(const Caller& by, JobId id, int32_t step) const;
  Result<Job> GetJob(const Caller& by, JobId id) const;
  // The job, if `by` may read its output (its owner, its queue's admins, admins).
  Result<Job> GetJobForLogs(const Caller& by, JobId id) const;
  std::vector<Job> ListJobs(const Caller& by, const JobFilter& filter) const;
  // GPU-hours, jobs, wait and preemptions per user or queue over [now - since, now]
  // (core_usage.cc).
  Result<UsageReport> Usage(const Caller& by, UsageBy group, DurationMs since_ms, TimeMs now) const;
  // The same, adding the jobs in memory to `acc` (which holds retired jobs the shell read from
  // the store, over the same period). REQUIRES: CheckUsage ok.
  UsageReport Usage(UsageAccumulator acc) const;
  static Status CheckUsage(const Caller& by, DurationMs since_ms);

  // --- interactive sessions (core_sessions.cc) ---
  // Where to run a command inside job `id`'s replica: for its owner, its queue's admins and
  // admins, while it runs. Counts as hearing from an interactive job's client.
  // Where a job's output is (a live job's, or a retired one the shell read from the store):
  // the query is checked against the run (replica, step, task) and the node's agent found.
  Result<LogSource> LocateLogs(const Job& job, const LogQuery& q) const;
  Result<ExecTarget> OpenExec(const Caller& by, JobId id, int32_t replica, TimeMs now);
  // A session's client is alive (`typed`: its user typed since its last touch).
  Result<SessionStatus> TouchSession(const Caller& by, JobId id, bool typed, TimeMs now);

  // --- cluster ---
  // `now`: for the admin reservation each node is in then (NodeView::reservation).
  std::vector<NodeView> ListNodes(TimeMs now = 0) const;
  Result<Node> GetNode(const std::string& name) const;
  // `reason`: the operator's words, kept with the drain (Node::drain_reason); "" for none.
  Result<NodeView> SetDrain(const Caller& by, const std::string& node, bool drain, TimeMs now,
                            const std::string& reason = "");
  // An operator forgets a node (`corral nodes rm`): its record and its credential go, so its
  // agent's calls and grants signed for it are refused. Refused while a run is live on it.
  Result<Node> RemoveNode(const Caller& by, const std::string& node, TimeMs now);
  // An operator's drain of one GPU (core_gpu.cc): it takes no new runs, the node's others do;
  // runs on it are let finish. Only an operator returns it (drain false), whoever drained it.
  Result<NodeView> SetGpuDrain(const Caller& by, const std::string& node, int32_t gpu, bool drain,
                               const std::string& reason, TimeMs now);
  std::vector<QueueView> ListQueues() const;
  Result<QueueConfig> SetQueue(const Caller& by, QueueConfig queue, TimeMs now);

  // --- QoS classes (core_qos.cc) ---
  std::vector<QosClass> ListQos() const;
  Result<QosClass> SetQos(const Caller& by, QosClass qos, TimeMs now);
  Result<QosClass> DeleteQos(const Caller& by, const std::string& name, TimeMs now);
  // Admin reservations and maintenance windows (core_reservations.cc).
  std::vector<NodeReservationSpec> ListReservations() const;
  Result<NodeReservationSpec> CreateReservation(const Caller& by, NodeReservationSpec r,
                                                TimeMs now);
  Result<NodeReservationSpec> DeleteReservation(const Caller& by, const std::string& name,
                                                TimeMs now);
  // Datasets (core_datasets.cc): users add versions of their own names and remove them (admins
  // any); a version in use by a job not over cannot be removed. `name`: "NAME" (every version;
  // shown: the latest) or "NAME@VERSION".
  std::vector<DatasetView> ListDatasets() const;
  Result<DatasetView> GetDataset(const std::string& name) const;
  Result<DatasetView> AddDataset(const Caller& by, Dataset d, TimeMs now);
  Result<DatasetView> RemoveDataset(const Caller& by, const std::string& name, TimeMs now);
  // The sources' cluster-wide budgets (core/source_budget.h): admins set and remove them
  // (rate and fetches both 0); anyone lists them with the line of stage-ins each paces.
  Result<SourceBudget> SetSourceLimit(const Caller& by, const std::string& source, int64_t rate,
                                      int32_t fetches, TimeMs now);
  std::vector<SourceBudget> ListSourceBudgets() const;
  // Each of a submission's datasets must be registered (at the version it names, if any): its
  // reference gets the version, digest, source and size it stands for now.
  Status ResolveDatasets(JobSpec* spec) const;
  // A job may name a reservation that exists, is not over or a maintenance window, and admits
  // its owner and queue.
  Status CheckReservation(const JobSpec& spec, const std::string& owner, TimeMs now) const;
  // A submission's priority against the QoS of its owner and queue (or the head's
  // max_user_priority when none applies): 403 naming the limit.
  Status CheckPriority(const Caller& by, const JobSpec& spec, const std::string& owner) const;
  // UpdateJob's checks: the job's spec with the update, or the first field refused.
  Result<JobSpec> UpdatedSpec(const Caller& by, const Job& job, const JobUpdate& u,
                              TimeMs now) const;
  // A queue a pending job moves to: within its GPU limit and its max_pending_per_user.
  Status CheckQueueRoom(const JobSpec& spec, const std::string& owner) const;
  // Pending jobs' scheduler inputs again (their QoS changed).
  void RefreshPendingInputs();

  // --- services (core_services.cc) ---
  // Creates a service owned by the caller and submits its first replicas. Its replica template
  // passes the checks a submission would (queue, limits, fit), or nothing changes.
  Result<Service> CreateService(const Caller& by, ServiceSpec spec, TimeMs now);
  // Removes a service (its owner, admins) and stops its replicas.
  Result<Service> RemoveService(const Caller& by, const std::string& name, TimeMs now);
  // Sets how many replicas a service keeps (its owner, admins), within its min and max: the
  // core starts the missing ones or stops the newest above it (ServiceUpdated).
  Result<Service> ScaleService(const Caller& by, const std::string& name, int32_t replicas,
                               TimeMs now);
  // Stops a live replica (admins: the head's liveness probes); the service starts another.
  Result<Job> ReplaceReplica(const Caller& by, JobId job, const std::string& reason, TimeMs now);
  // Starts a rolling update of a service's replica template (its owner, admins): replicas of
  // the next version replace the old ones one at a time; one not ready in time, or failing,
  // rolls it back (core_services.cc).
  Result<Service> UpdateService(const Caller& by, const std::string& name,
                                ServiceTemplatePatch patch, TimeMs now);
  // The head's proxy (admins): a replica answered its readiness check; a draining replica has
  // no request in flight any more and may stop.
  Result<Job> ReportReplicaReady(const Caller& by, JobId job, TimeMs now);
  Result<Job> ReportReplicaDrained(const Caller& by, JobId job, TimeMs now);
  // The head's proxy: each service's requests in flight, on average over the interval that
  // ends now (its replicas' and those held for one), and the median latency of the requests
  // answered in it. The autoscaler records them and may change services' desired replicas
  // (ServiceScaled). Answers how many it changed.
  Result<int32_t> ReportServiceLoad(const Caller& by,
                                    const std::map<std::string, ServiceLoad>& load, TimeMs now);
  // The head's proxy: a request came for a service scaled to zero; one replica starts.
  Result<Service> WakeService(const Caller& by, const std::string& name, TimeMs now);
  // The services `by` may call: its own, those open to any user, all for admins.
  std::vector<ServiceView> ListServices(const Caller& by) const;
  Result<ServiceView> GetService(const Caller& by, const std::string& name) const;

  // --- agents ---
  Result<RegisterResponse> Register(const Caller& by, RegisterRequest req,
                                    const std::string& secret, TimeMs now);
  // Takes an agent's reports. Returns false (answer: re-register) if the head does not know
  // this agent incarnation.
  Result<bool> Report(const Caller& by, const SyncRequest& req, TimeMs now);
  // Every desired run on `node` (a full answer).
  SyncResponse DesiredFor(const std::string& node) const;
  // The answer to an agent at version `from`: only the jobs whose orders changed since, where
  // the node's log still tells them (from 0: a full answer).
  SyncResponse AnswerFor(const std::string& node, uint64_t from) const;
  uint64_t NodeVersion(const std::string& node) const;

  // --- time ---
  void Tick(TimeMs now);      // liveness, time limits, retirement
  void Schedule(TimeMs now);  // one scheduling pass
  // Recomputes every pending job's start-time estimate from the scheduler's state
  // (sched::Scheduler::EstimateStarts). Derived and not durable, like pending reasons: an
  // estimate redone every few seconds is worth no write per job per refresh, and a new
  // leader recomputes it at its first refresh (core_estimate.cc).
  // `watch`: stop the forward run once these have started (others then get no estimate), for
  // a caller that reads only them (the simulator's judged jobs); empty: every pending job.
  void EstimateStarts(TimeMs now, const std::vector<JobId>& watch = {});
  // Of the last EstimateStarts, by job (pending jobs only, with or without a start).
  const std::map<JobId, sched::StartEstimate>& start_estimates() const {
    return explained_.estimates();
  }
  bool schedule_wanted() const { return agenda_.schedule; }

  // --- output ---
  CoreOutput TakeOutput();
  // Entities changed since the last call (for the shell's snapshot rows).
  struct Dirty {
    std::set<JobId> jobs;
    std::set<std::string> nodes, queues;
    bool meta = false;          // epoch, next job id, step key
    bool credentials = false;   // written whole: 10,000 agents' credentials, not per submission
    bool qos = false;           // written whole: a few classes
    bool reservations = false;  // written whole: a few
    bool datasets = false;      // written whole: a few hundred at most
    bool services = false;      // written whole: a few
  };
  Dirty TakeDirty();
  // Jobs wait to be retired until the snapshot rows hold them as they ended: the shell
  // should write a snapshot soon (once per true answer).
  bool TakeSnapshotWanted() { return std::exchange(agenda_.snapshot, false); }

  // --- retired jobs (core_retire.cc) ---
  // The final state of a job retired from memory; nullopt for any other id.
  std::optional<JobState> RetiredState(JobId id) const;
  // A job as `by` may see it (its environment only for those who may manage it), for jobs
  // the shell read from the store.
  Job JobAsSeenBy(const Caller& by, Job job) const;
  // Ok if `by` may read `job`'s output (GetJobForLogs).
  Status MayReadLogs(const Caller& by, const Job& job) const;

  const ClusterState& state() const { return state_; }
  // The state the core derives from its changes (indexes, holds, the scheduler's model), as a
  // recovery rebuilds it from the state alone: a core kept live by changes and one recovered
  // from the same state must show the same. Leaves out what a new leadership starts afresh
  // (liveness, desired-state versions, pending reasons, GPU samples).
  Json DerivedSummary() const;
  const std::map<JobId, PendingReason>& pending_reasons() const { return explained_.waiting(); }
  const std::set<JobId>& active_jobs() const { return indexes_.get<ActiveRuns>().jobs(); }
  // Elastic runs' sizes (elastic_sizes.h).
  const ElasticSizes& elastic_sizes() const { return indexes_.get<ElasticSizes>(); }
  // Runs flagged idle at the last Tick or report (core_idle.cc), by job.
  const std::map<JobId, TimeMs>& idle_runs() const { return gpus_.idle(); }
  uint64_t revision() const { return state_.revision; }
  // The run-time predictions, as learned from the jobs ended so far.
  const sched::RuntimeEstimator& estimator() const { return model_.estimator(); }
  const CoreConfig& config() const { return config_; }
  // Xid events the agents reported since this head started, by node and Xid (core_gpu.cc).
  const std::map<std::pair<std::string, int32_t>, int64_t>& xid_counts() const {
    return gpus_.xid_counts();
  }

 private:
  // Applies a change, keeps the indexes and the scheduler in step, and queues it.
  void Emit(const Caller& by, TimeMs now, ChangeKind what);
  void Index(const Change& c);
  struct ChangeFollower;  // core_state.cc
  // Pending jobs held back from the scheduler (core_holds.cc). Admit: admission's answer
  // (a held job's reason told); AdmitPending: and an admitted job queued in the model.
  bool Admit(const Job& job);
  void AdmitPending(const Job& job);
  void Settle(TimeMs now);
  void RetireEnded(TimeMs now);
  // Why a command names a job not in memory: none such, or one retired long after it ended.
  Status UnknownJob(JobId id) const;
  void OnRetired(const JobsRetired& e);
  // What the core observed of a removed node (NodeRemoved): its sync log, samples, ports.
  void ForgetNode(const std::string& node);

 public:
  std::vector<const Job*> DependencyTargets(JobId id) const;
  bool IsHeld(JobId id) const { return admission_.IsHeld(id); }

 private:
  void MarkDirty(const Change& c);
  void RebuildIndexes(TimeMs now);

  void PlaceRun(const sched::PlaceDecision& d, TimeMs now);
  // Elastic runs (core_elastic.cc): a resize decision of the scheduler made a JobResized, and
  // a lost node's replicas dropped while the run keeps its minimum (true: dropped, the run
  // goes on).
  void ResizeRun(const sched::ResizeDecision& d, TimeMs now);
  bool DropLostReplicas(const Job& job, const std::string& node, TimeMs now);
  // The variables torchrun's c10d rendezvous needs (CORRAL_RDZV_ENDPOINT, ...), into the
  // spec's environment of an elastic job about to be submitted (its id set).
  void AddRendezvousEnv(Job* job) const;

 public:
  // The rendezvous stores the shell runs now (rdzv_stores.h): the port of each elastic job
  // that is not over, by job.
  std::map<JobId, int32_t> RendezvousWanted() const;

 private:
  void RequestStop(const Job& job, StopCause cause, const std::string& reason, TimeMs now,
                   PreemptKind preempt = PreemptKind::kNone);
  void OnReplicaReport(const Job& job, const std::string& node, const RunReport& r, TimeMs now);
  // The report's samples of its use the run does not hold yet, as one change.
  void RecordUsage(const Job& job, const std::string& node, const RunReport& r, TimeMs now);
  void OnStepReport(const Job& job, int32_t step, const std::string& node, const RunReport& r,
                    TimeMs now);
  void AddStepOrders(const Job& job, const Run& run, const RunLayout& layout,
                     const std::string& node, SyncResponse* out) const;
  std::optional<Caller> AuthenticateStep(const std::string& bearer) const;
  void MaybeFinishRun(const Job& job, TimeMs now);
  // `next`: the job's state after, where not the one `state` implies.
  void FinishRun(const Job& job, RunState state, const std::string& reason, TimeMs now,
                 std::optional<JobState> next = std::nullopt);
  void EnforceTimeLimits(TimeMs now);
  void ExpireStops(TimeMs now);
  // A plain user's submission against max_array_size and max_pending_per_user.
  Status CheckUserLimits(const JobSpec& spec, const std::string& owner) const;
  // A share of a GPU: its queue allows sharing and some GPU can hold its memory.
  Status CheckGpuShare(const JobSpec& spec) const;
  // Idle GPUs (core_idle.cc): what a node's samples say of each run there, then which runs
  // have been idle long enough to flag.
  void ObserveUse(const std::string& node, TimeMs now);
  void ObserveHealth(const Node& node, const std::vector<GpuSample>& samples, TimeMs now);
  // The agent's GPU health checks (core_gpu.cc): application Xids fail the runs on that GPU,
  // a critical check drains it and requeues its runs, clean checks in a row return it.
  void ObserveGpuHealth(const Node& node, const std::vector<GpuSample>& samples, TimeMs now);
  // The jobs with a run on `gpu` of `node`.
  std::vector<JobId> JobsOnGpu(const std::string& node, int32_t gpu) const;
  void FlagIdle(TimeMs now);
  // Warns, then stops, the idle runs of queues that stop idle runs.
  void StopIdle(TimeMs now);
  // Ends the interactive sessions whose client is gone (inactive_limit_ms) or that stayed idle
  // past their queue's idle_timeout, after a warning (core_sessions.cc).
  void CullSessions(TimeMs now);
  // Since when an interactive run has been idle: no input and its GPUs under the threshold;
  // 0 while it is in use.
  TimeMs SessionIdleSince(const Job& job, const Run& run) const;
  void CheckLiveness(TimeMs now);
  void LoseNode(const Node& node, TimeMs now);
  void SetLiveness(const std::string& node, Liveness liveness, const std::string& reason,
                   TimeMs now);
  void SetDrainState(const std::string& node, Drain drain, const std::string& reason, TimeMs now);
  int32_t PickMasterPort(const std::string& node) const;
  int64_t ReplicaMemoryCapMb(const Job& job, const ReplicaPlacement& p) const;
  // An order for one replica of a run, with what every order for it carries: the job, owner,
  // limits, GPUs and how it is stopped. The caller sets run id, command, env, workdir, signals.
  RunOrder ReplicaOrder(const Job& job, const Run& run, int32_t replica) const;
  RunLayout LayoutFor(const Job& job, const Run& run) const;
  bool MayManageJob(const Caller& by, const Job& job) const;
  // A job's orders on `node` changed; BumpAll: the node's whole desired state did.
  void Bump(const std::string& node, JobId job);
  void BumpAll(const std::string& node);
  // Appends the orders of `job` (active on `node`) for the replicas and steps still to run there.
  void AddJobOrders(const Job& job, const std::string& node, SyncResponse* out) const;
  void WantSchedule() { agenda_.schedule = true; }
  // A new job's checks (core_jobs.cc): what Submit refuses before it changes anything.
  Status CheckNewJob(const Caller& by, const Job& job, TimeMs now);
  // Services (core_services.cc): each one's desired replicas kept alive, in Tick.
  void KeepServices(TimeMs now);
  void KeepReplicas(const Service& s, TimeMs now);
  // An update of only the service's settings (ServiceTemplatePatch::settings): at once.
  Result<Service> UpdateServiceSettings(const Caller& by, const Service& s, const Json& settings,
                                        TimeMs now);
  void StopReplica(const Caller& by, const Job& job, const std::string& reason, TimeMs now);
  // A replica leaves: one that serves drains first (no new requests), any other stops at once.
  void LeaveReplica(const Service& s, const Job& job, const std::string& reason, TimeMs now);
  // Draining replicas whose drain time is over are stopped.
  void StopDrainedReplicas(const Service& s, TimeMs now);
  // An update in progress ends: done once every replica runs the new version and is ready,
  // rolled back when a new replica fails or is not ready in time. True if it ended.
  bool CheckRollout(const Service& s, TimeMs now);
  // Replaces one replica of an older version: surges one of the current version, or (once
  // every current one is ready) lets one old one leave.
  void RollOneReplica(const Service& s, const std::vector<JobId>& current,
                      const std::vector<JobId>& stale, TimeMs now);
  // Submits one replica of the current version unless a crash loop's backoff holds it back.
  bool StartReplica(const Service& s, int32_t index, TimeMs now);
  ServiceView ViewOf(const Caller& by, const Service& s) const;
  // A node whose agent can be asked (it has an address), for exec and logs.
  Result<const Node*> AgentNode(const std::string& name) const;
  Result<const Service*> ManagedService(const Caller& by, const std::string& name, const char* verb,
                                        bool hide_private) const;
  Result<const Job*> LiveReplica(const Caller& by, JobId id) const;
  const Services& services() const { return indexes_.get<Services>(); }
  const ActiveRuns& active() const { return indexes_.get<ActiveRuns>(); }

  CoreConfig config_;
  ClusterState state_;

  // Derived from state_ alone: applied change by change, rebuilt on recovery.
  CoreIndexes indexes_;
  // Below: derived too, but through decisions (holds, the scheduler's model), or not durable.
  // The components that own what is derived through decisions or observed (architecture.md).
  SchedulerModel model_;    // the scheduler's model and the run-time predictions it orders by
  Admission admission_;     // which pending jobs the scheduler sees
  NodeWatch node_watch_;    // each node: its orders log, when last heard, what it last reported
  GpuWatch gpus_;           // the GPUs: samples, health checks, Xids, idleness
  SessionClocks sessions_;  // live interactive sessions: when last heard, typed, warned
  ServiceAutoscaler autoscaler_;  // each service's recent load and scaling windows
  Explanations explained_;        // why jobs wait, how far staging is, estimates, services short
  void ObserveDatasets(const std::string& node, const std::vector<std::string>& digests);
  // Stage-ins under way (core_datasets.cc): what each placed run's nodes lacked of its
  // datasets, by job, node and source, so that its start measures the source's rate. Not
  // durable: a run placed before a restart is not measured.
  struct Lacking {
    int32_t attempt = 0;
    std::map<std::string, std::map<std::string, int64_t>> bytes;  // node -> source -> bytes
  };
  std::map<JobId, Lacking> lacking_;
  void NoteLacking(const Job& job, int32_t attempt, const std::vector<ReplicaPlacement>& where);
  void MeasureStageIn(const Job& job, const std::string& node, TimeMs started_at, TimeMs now);
  // Fetches ahead for the jobs the pass reserved nodes for (core_datasets.cc).
  DatasetPrefetch prefetch_;
  void PlanPrefetch(const std::vector<sched::Reservation>& reservations);
  DatasetView ViewOfDataset(const Dataset& d) const;
  // Stage-ins from budgeted sources (core_stage_ins.cc): a placed run whose nodes lack their
  // data joins its sources' line (StageInQueued) and gets its orders only once admitted.
  void QueueStageIn(const Job& job, int32_t attempt, const std::vector<ReplicaPlacement>& where,
                    TimeMs now);
  void AdmitStageIns(TimeMs now);  // from Settle: whoever's turn it is, and the others' places
  const DatasetCatalog::StageIn* StageInOf(JobId job) const;
  bool StageInWaits(JobId job) const;                            // its orders are held at the head
  std::map<std::string, int64_t> StageInRates(JobId job) const;  // an admitted one's caps
  uint64_t budget_version_seen_ = 0;  // the catalog's budget_version() last marked dirty
  bool settling_ = false;             // in Settle: a change it emits must not settle again
  CoreAgenda agenda_;

  CoreOutput out_;
  Dirty dirty_;
};

}  // namespace corral::head
