// The typed changes of the head's state (DESIGN §9). Every change of durable state is one of
// these, numbered with the next revision, written to the store's change log and applied by
// ApplyChange (cluster_state.h), live and on recovery alike. A change records a decision
// already taken (the core decided it); applying it never decides anything.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "core/boxed.h"
#include "core/codec.h"
#include "core/credential.h"
#include "core/dataset.h"
#include "core/identity.h"
#include "core/job.h"
#include "core/node.h"
#include "core/node_reservation.h"
#include "core/qos.h"
#include "core/service.h"

namespace corral::head {

// A bearer credential (core/credential.h): the head keeps them, the CLI lists them.
using corral::Credential;

struct HeadStarted {  // a new leadership: agents refuse orders from an older epoch
  uint64_t epoch = 0;
  // The key job-step credentials are derived from (StepToken), set by the first leadership
  // and kept by the others ("": unchanged). Never shown in the event stream.
  std::string step_key;
};
// A Job is some 1 KB: boxed, as a Service below (core/boxed.h).
struct JobSubmitted {  // the job as accepted: id, owner, spec, submit time, state pending
  Boxed<Job> job;
};
// An array as accepted, in one change: a sweep of 1,000 elements is one record to encode and
// write, not 1,000 copies of the same spec. Its elements are `job` with the ids job.id,
// job.id + 1, ... and the array indices of `indices`, in that order.
struct ArraySubmitted {
  Boxed<Job> job;  // the first element: job.id == job.array_id
  std::vector<int32_t> indices;
  size_t size() const { return indices.size(); }
  Job Element(size_t i) const;  // as JobSubmitted would carry it
};
struct RunPlaced {
  JobId job = 0;
  int32_t attempt = 0;
  std::vector<ReplicaPlacement> placement;
  int32_t master_port = 0;
};
struct RunStarted {  // the first replica reported running
  JobId job = 0;
  int32_t attempt = 0;
  TimeMs started_at = 0;
};
struct ReplicaExited {
  JobId job = 0;
  int32_t attempt = 0;
  int32_t replica = 0;
  int32_t exit_code = 0;          // -N: killed by signal N
  int32_t task = -1;              // the replica's first failing task; -1: none failed
  int64_t peak_memory_bytes = 0;  // from the replica's cgroup; 0: unknown
  int64_t cpu_ms = 0;
};
struct StopRequested {  // cancel, preemption, time limit, a failed gang member
  JobId job = 0;
  int32_t attempt = 0;
  std::string reason;
  // What the run's end is decided by, and a preemption's rule (kNone for other causes).
  StopCause cause = StopCause::kFailed;
  PreemptKind preempt = PreemptKind::kNone;
};
struct RunEnded {  // the run is over; the job is requeued (job_state pending) or ends
  JobId job = 0;
  int32_t attempt = 0;
  RunState run_state = RunState::kSucceeded;
  std::string reason;
  JobState job_state = JobState::kSucceeded;
  int32_t exit_code = 0;
  StopCause cause = StopCause::kCompleted;  // RunEndCause(run_state, the stop's cause)
};
struct JobEnded {  // ended without a live run (cancelled while pending)
  JobId job = 0;
  JobState state = JobState::kCancelled;
  std::string reason;
};
struct CheckpointReported {
  JobId job = 0;
  int32_t attempt = 0;
};
// A replica's agent said how its start goes (a container's image being pulled, then pulled and
// how long it took): an event of the job's.
struct RunNoted {
  JobId job = 0;
  int32_t attempt = 0;
  std::string what;  // "pulling image", "image pulled"
  std::string note;  // "pulling image REF on NODE", "image REF pulled on NODE in N ms"
};
struct NodeRegistered {  // the node as registered (agent epoch bumped) and its new credential
  Node node;
  Credential credential;
};
// An operator removed the node (it had no live run): its record and its credential are gone, so
// its agent's calls and the relay grants signed for it stop working. An agent that still holds
// the join token can register it again.
struct NodeRemoved {
  std::string node;
};
struct NodeLivenessSet {  // the agent went silent, or was heard from again
  std::string node;
  Liveness liveness = Liveness::kAlive;
  std::string reason;
};
struct NodeDrainSet {  // an operator's drain or undrain, or a draining node's last run ended
  std::string node;
  Drain drain = Drain::kNone;
  std::string reason;
};
struct NodeHealthSet {  // what the agent's GPU probe found changed: a fault, or all healthy
  std::string node;
  std::map<int32_t, std::string> faults;  // GPU index -> why it failed its probe; empty: healthy
};
// A GPU taken out of service, or returned (drain.source kNone), by an operator or by the
// health checks (the reason names the check's finding: an Xid, ECC errors, clean checks).
struct GpuDrainSet {
  std::string node;
  int32_t gpu = 0;
  GpuDrain drain;
};
struct QueueSet {
  QueueConfig queue;
};
struct QosSet {  // a QoS class defined or changed (qos.h)
  QosClass qos;
};
struct QosDeleted {
  std::string name;
};
struct ReservationSet {  // an admin reservation or maintenance window (node_reservation.h)
  NodeReservationSpec reservation;
};
struct ReservationDeleted {
  std::string name;
};
struct DatasetAdded {  // a dataset registered: its name, version, source and manifest summary
  Dataset dataset;
};
struct DatasetRemoved {
  std::string name;
  std::string version;  // empty: every version of the name
};
// A run's stage-in measured: it started `ms` after its placement on a node that lacked `bytes`
// of its datasets, all from `source` (DatasetSourceKey). The source's rate is bytes / ms.
struct SourceRateMeasured {
  std::string source;
  int64_t bytes = 0;
  DurationMs ms = 0;
};
// An admin's budget for one source (DatasetSourceKey), shared by every node's stage-ins from
// it: `rate` bytes per second in all, at most `fetches` nodes fetching from it at once. Both 0:
// the budget is removed.
struct SourceLimitSet {
  std::string source;
  int64_t rate = 0;
  int32_t fetches = 0;
};
// A placed run joins the line of stage-ins from budgeted sources: `fetches` is, per source, how
// many of its nodes lack data from it. Its orders wait at the head until StageInAdmitted.
struct StageInQueued {
  JobId job = 0;
  int32_t attempt = 0;
  std::map<std::string, int32_t> fetches;
};
struct StageInAdmitted {  // the run's turn came: its nodes get its orders and fetch
  JobId job = 0;
  int32_t attempt = 0;
};
// A service (core/service.h) created; its replicas are jobs the core submits (JobSubmitted with
// spec.service set) and stops (StopRequested, JobEnded) as it keeps `desired` of them alive.
// A Service is some 2 KB: boxed, so that every other change is not as large (core/boxed.h).
struct ServiceCreated {
  Boxed<Service> service;
};
struct ServiceUpdated {  // its spec or version changed, or it is being removed
  Boxed<Service> service;
};
struct ServiceRemoved {  // its replicas are stopped by the changes that follow
  std::string name;
};
// An update of its replica template began: `spec` becomes the next version, and replicas of
// it replace the old ones one at a time (StartRollout).
struct ServiceRolloutStarted {
  std::string name;
  Boxed<ServiceSpec> spec;
  DurationMs ready_timeout_ms = 0;
};
// The update ended: every replica runs the new version, or it was rolled back (EndRollout).
struct ServiceRolloutEnded {
  std::string name;
  bool rolled_back = false;
  std::string reason;
};
// A replica answered its readiness check (the head's proxy saw it), or began to drain (no new
// requests; stopped once idle or at `until`).
struct ServiceReplicaMarked {
  std::string name;
  JobId job = 0;
  ReplicaMark mark = ReplicaMark::kReady;
  TimeMs until = 0;  // kDraining: when it is stopped even with requests in flight
};
// Its desired replicas changed: by hand (`corral services scale`), by the autoscaler on the
// load the head's proxy reported, or by a request that found it scaled to zero. `reason` is
// what the event says ("scaled 1 → 3: 5.8 requests in flight per replica over 30s, target 2").
struct ServiceScaled {
  std::string name;
  int32_t from = 0;
  int32_t to = 0;
  ScaleCause cause = ScaleCause::kHand;
  std::string reason;
};
struct TokenIssued {
  Credential credential;
};
struct TokenRevoked {
  std::string id;
};
struct IdleWarned {  // an idle run in an idle-stop queue: it is stopped at stop_at unless used
  JobId job = 0;
  int32_t attempt = 0;
  TimeMs idle_since = 0;
  TimeMs stop_at = 0;
};

struct StepStarted {  // srun in a batch script: a job step inside the run's allocation
  JobId job = 0;
  int32_t attempt = 0;
  Step step;  // as started: exit codes kNotExited
};
struct StepExited {  // one node's share of a step ended
  JobId job = 0;
  int32_t attempt = 0;
  int32_t step = 0;
  int32_t index = 0;  // into the step's replicas
  int32_t exit_code = 0;
};

struct RunSignalled {  // a signal for the run's processes, which keep running
  JobId job = 0;
  int32_t attempt = 0;
  int32_t signal = 0;
  bool to_replicas = true;  // the job's own processes (a batch job's: its batch shell)
  bool to_steps = true;     // its job steps' tasks
};
struct JobHoldSet {  // a user hold put on a pending job, or taken off
  JobId job = 0;
  bool held = false;
};
// A pending job's time limit, priority or queue changed (scontrol update): its new values
// and the queue it was in, for the indexes counted per queue.
struct JobUpdated {
  JobId job = 0;
  DurationMs time_limit_ms = 0;
  int32_t priority = 0;
  std::string queue;
  std::string previous_queue;
};
// Jobs that ended longer ago than the retention window leave memory (DESIGN §9): their rows
// stay in the store, which answers for them from then on, and a tombstone keeps each one's
// final state for dependencies. An array leaves whole.
struct JobsRetired {
  std::vector<JobId> jobs;  // ascending
};

// Why an elastic run changed size (docs/elastic.md).
enum class ResizeCause : uint8_t {
  kGrow,      // idle GPUs and nothing with a better claim waiting: toward its maximum
  kReclaim,   // a job with a better claim needs the GPUs of replicas above its minimum
  kNodeLost,  // a replica's node was lost; the others go on while at least the minimum remain
};
const char* ResizeCauseName(ResizeCause c);
bool ParseResizeCause(const std::string& text, ResizeCause* out);

// An elastic run grew or shrank: replicas appended to its placement, or replicas that leave
// it (positions in its placement: they get the checkpoint signal and grace; the others keep
// running). One of the two is not empty.
struct JobResized {
  JobId job = 0;
  int32_t attempt = 0;
  std::vector<ReplicaPlacement> added;
  std::vector<int32_t> removed;  // ascending, each a live replica of the run
  ResizeCause cause = ResizeCause::kGrow;
  std::string reason;
};

// New samples of a replica's use (core/usage_series.h), each numbered after the last the run
// holds for it: the core drops the repeats of a report before it emits this.
struct RunUsageSampled {
  JobId job = 0;
  int32_t attempt = 0;
  int32_t replica = 0;
  std::vector<UsagePoint> points;  // ascending seq
};

using ChangeKind =
    std::variant<HeadStarted, JobSubmitted, RunPlaced, RunStarted, ReplicaExited, StopRequested,
                 RunEnded, JobEnded, CheckpointReported, NodeRegistered, NodeLivenessSet, QueueSet,
                 TokenIssued, TokenRevoked, IdleWarned, StepStarted, StepExited, JobHoldSet,
                 RunSignalled, NodeHealthSet, JobsRetired, ArraySubmitted, NodeDrainSet,
                 GpuDrainSet, RunNoted, QosSet, QosDeleted, ReservationSet, ReservationDeleted,
                 JobUpdated, JobResized, DatasetAdded, DatasetRemoved, ServiceCreated,
                 ServiceUpdated, ServiceRemoved, NodeRemoved, ServiceRolloutStarted,
                 ServiceRolloutEnded, ServiceReplicaMarked, ServiceScaled, RunUsageSampled,
                 SourceRateMeasured, SourceLimitSet, StageInQueued, StageInAdmitted>;

struct Change {
  uint64_t revision = 0;
  TimeMs at = 0;
  Caller by;  // who caused it
  ChangeKind what;
};

const char* ChangeName(const ChangeKind& what);
// A node's unhealthy reason from its GPUs' faults: "GPU 3: ...; GPU 5: ..."; empty: healthy.
std::string UnhealthyReason(const std::map<int32_t, std::string>& faults);
Json ToJson(const Change& c);
Result<Change> ChangeFromJson(const Json& j);
// A change as the event stream shows it to `who`: never a credential's hash, and a job's
// environment only to its owner and admins. Adds "kind" (job, node, queue, token, head) and
// the entity's "key".
Json EventJson(const Change& c, const Caller& who);

}  // namespace corral::head
