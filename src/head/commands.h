// Every command a caller sends the head, one type each: its fields, what it answers, and, for
// the commands the core answers alone, the core call that runs it. The head runs any of them
// through one entry (Head::Run), the API decodes each from HTTP in one place (api/routes.cc).
// Adding a command: a type here, its handler in the core, a row in the API's route table.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/agent_protocol.h"
#include "core/event_page.h"
#include "core/usage.h"
#include "head/cluster_series.h"
#include "head/head_core.h"
#include "head/history.h"
#include "head/service_history.h"
#include "store/store.h"

namespace corral::head {

struct NewToken {
  Credential credential;
  std::string secret;  // shown once
};

// The event stream's answer is core/event_page.h's EventPage.
using Events = EventPage;

// --- jobs ---

struct SubmitJob {
  using Answer = Job;
  JobSpec spec;
  std::string user;        // "": the caller; another user needs an admin
  std::string request_id;  // see HeadCore::Submit
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs now) && {
    return core.Submit(by, std::move(spec), std::move(user), now, std::move(request_id));
  }
};

// Answered by the shell: a retired job is read from the store.
struct GetJob {
  using Answer = Job;
  JobId id = 0;
};

// Where a job's output is, for those who may read it (its owner, who manages it, its own
// steps). Answered by the shell, which reads a retired job from the store; the core checks the
// query against the run and finds the agent.
struct LocateLogs {
  using Answer = LogSource;
  JobId id = 0;
  LogQuery query;
};

// Answered by the shell: retired jobs that match are read from the store.
struct ListJobs {
  using Answer = std::vector<Job>;
  JobFilter filter;
};

// Answered by the shell: a huge array is cancelled a slice at a time.
struct CancelJob {
  using Answer = Job;
  JobId id = 0;
  bool element_only = false;  // an array's id cancels every element unless set
};

struct SignalJob {
  using Answer = Job;
  JobId id = 0;
  int32_t signal = 0;
  HeadCore::SignalTarget to = HeadCore::SignalTarget::kDefault;
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs now) && {
    return core.Signal(by, id, signal, to, now);
  }
};

struct RequeueJob {
  using Answer = Job;
  JobId id = 0;
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs now) && {
    return core.Requeue(by, id, now);
  }
};

struct HoldJob {
  using Answer = Job;
  JobId id = 0;
  bool hold = true;  // false: release
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs now) && {
    return core.SetHold(by, id, hold, now);
  }
};

// scontrol update: a pending job's time limit, priority or queue.
struct UpdateJob {
  using Answer = Job;
  JobId id = 0;
  JobUpdate update;
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs now) && {
    return core.UpdateJob(by, id, update, now);
  }
};

struct ReportCheckpoint {
  using Answer = Job;
  JobId id = 0;
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs now) && {
    return core.ReportCheckpoint(by, id, now);
  }
};

struct StartStep {
  using Answer = Step;
  JobId id = 0;
  StepRequest request;
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs now) && {
    return core.StartStep(by, id, std::move(request), now);
  }
};

struct GetStep {
  using Answer = Step;
  JobId id = 0;
  int32_t step = 0;
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs) && {
    return core.GetStep(by, id, step);
  }
};

// Where to run a command inside a running job (`corral exec`); the API then relays the
// session to that node's agent (api/exec_proxy.h).
struct OpenExec {
  using Answer = ExecTarget;
  JobId id = 0;
  int32_t replica = 0;
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs now) && {
    return core.OpenExec(by, id, replica, now);
  }
};

// An interactive session's client is alive (and whether its user typed since the last one).
struct TouchSession {
  using Answer = SessionStatus;
  JobId id = 0;
  bool typed = false;
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs now) && {
    return core.TouchSession(by, id, typed, now);
  }
};

// Answered by the shell: retired jobs of the period are added up from the store.
struct GetUsage {
  using Answer = UsageReport;
  UsageBy by = UsageBy::kUser;
  DurationMs since_ms = 7 * kDay;
};

// Answered by the shell, which samples the cluster (head/cluster_series.h): the points of the
// last `since_ms` (0: every point kept).
struct GetClusterSeries {
  using Answer = ClusterSeriesView;
  DurationMs since_ms = 0;
};

// Answered by the shell: retired jobs of the period are read from the store.
struct GetHistory {
  using Answer = History;
  DurationMs since_ms = 7 * kDay;
};

// --- cluster ---

struct ListNodes {
  using Answer = std::vector<NodeView>;
  Result<Answer> operator()(HeadCore& core, const Caller&, TimeMs now) && {
    return Result<Answer>(core.ListNodes(now));
  }
};

struct GetNode {
  using Answer = Node;
  std::string name;
  Result<Answer> operator()(HeadCore& core, const Caller&, TimeMs) && { return core.GetNode(name); }
};

struct SetDrain {
  using Answer = NodeView;
  std::string node;
  bool drain = true;   // false: undrain
  std::string reason;  // the operator's, with a drain
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs now) && {
    return core.SetDrain(by, node, drain, now, reason);
  }
};

// `corral nodes rm NODE`: answers the node as it was.
struct RemoveNode {
  using Answer = Node;
  std::string node;
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs now) && {
    return core.RemoveNode(by, node, now);
  }
};

// One GPU of a node drained (an operator's, kept until an operator returns it) or returned.
struct SetGpuDrain {
  using Answer = NodeView;
  std::string node;
  int32_t gpu = 0;
  bool drain = true;  // false: return it
  std::string reason;
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs now) && {
    return core.SetGpuDrain(by, node, gpu, drain, reason, now);
  }
};

struct ListQueues {
  using Answer = std::vector<QueueView>;
  Result<Answer> operator()(HeadCore& core, const Caller&, TimeMs) && {
    return Result<Answer>(core.ListQueues());
  }
};

struct SetQueue {
  using Answer = QueueConfig;
  QueueConfig queue;
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs now) && {
    return core.SetQueue(by, std::move(queue), now);
  }
};

// --- QoS classes ---

struct ListQos {
  using Answer = std::vector<QosClass>;
  Result<Answer> operator()(HeadCore& core, const Caller&, TimeMs) && {
    return Result<Answer>(core.ListQos());
  }
};

struct SetQos {
  using Answer = QosClass;
  QosClass qos;
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs now) && {
    return core.SetQos(by, std::move(qos), now);
  }
};

struct DeleteQos {
  using Answer = QosClass;
  std::string name;
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs now) && {
    return core.DeleteQos(by, name, now);
  }
};

// --- admin reservations and maintenance windows ---

struct ListReservations {
  using Answer = std::vector<NodeReservationSpec>;
  Result<Answer> operator()(HeadCore& core, const Caller&, TimeMs) && {
    return Result<Answer>(core.ListReservations());
  }
};

struct CreateReservation {
  using Answer = NodeReservationSpec;
  NodeReservationSpec reservation;
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs now) && {
    return core.CreateReservation(by, std::move(reservation), now);
  }
};

struct DeleteReservation {
  using Answer = NodeReservationSpec;
  std::string name;
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs now) && {
    return core.DeleteReservation(by, name, now);
  }
};

// --- datasets ---

// Every dataset version, and each source's measured stage-in rate.
struct DatasetListing {
  std::vector<DatasetView> datasets;
  std::vector<DatasetSourceRate> sources;
};

struct ListDatasets {
  using Answer = DatasetListing;
  Result<Answer> operator()(HeadCore& core, const Caller&, TimeMs) && {
    return Result<Answer>(DatasetListing{core.ListDatasets(), core.state().datasets.SourceRates()});
  }
};

struct GetDataset {
  using Answer = DatasetView;
  std::string name;
  Result<Answer> operator()(HeadCore& core, const Caller&, TimeMs) && {
    return core.GetDataset(name);
  }
};

struct AddDataset {
  using Answer = DatasetView;
  Dataset dataset;
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs now) && {
    return core.AddDataset(by, std::move(dataset), now);
  }
};

struct RemoveDataset {
  using Answer = DatasetView;
  std::string name;
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs now) && {
    return core.RemoveDataset(by, name, now);
  }
};

struct ListSourceBudgets {
  using Answer = std::vector<SourceBudget>;
  Result<Answer> operator()(HeadCore& core, const Caller&, TimeMs) && {
    return Result<Answer>(core.ListSourceBudgets());
  }
};

struct SetSourceLimit {  // rate and fetches both 0: the budget is removed
  using Answer = SourceBudget;
  std::string source;
  int64_t rate = 0;
  int32_t fetches = 0;
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs now) && {
    return core.SetSourceLimit(by, source, rate, fetches, now);
  }
};

// --- services (core/service.h) ---

struct CreateService {
  using Answer = Service;
  ServiceSpec spec;
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs now) && {
    return core.CreateService(by, std::move(spec), now);
  }
};

struct RemoveService {
  using Answer = Service;
  std::string name;
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs now) && {
    return core.RemoveService(by, name, now);
  }
};

struct ListServices {
  using Answer = std::vector<ServiceView>;
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs) && {
    return Result<Answer>(core.ListServices(by));
  }
};

// Answered by the shell, from the changes it keeps for the event stream (service_history.h):
// the recent history of each of `names` that the caller may see (others are left out), at most
// `max` events each (0: only the latest scale).
struct GetServiceHistory {
  using Answer = std::map<std::string, ServiceHistory>;
  std::set<std::string> names;
  size_t max = 0;
};

// Also what the head's proxy asks before each request to /v/NAME/: it answers only those who
// may call the service.
struct GetService {
  using Answer = ServiceView;
  std::string name;
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs) && {
    return core.GetService(by, name);
  }
};

struct ScaleService {
  using Answer = Service;
  std::string name;
  int32_t replicas = 0;
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs now) && {
    return core.ScaleService(by, name, replicas, now);
  }
};

// The head's liveness probes: a replica that stopped answering is stopped and replaced.
struct ReplaceReplica {
  using Answer = Job;
  JobId job = 0;
  std::string reason;
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs now) && {
    return core.ReplaceReplica(by, job, reason, now);
  }
};

// An update of a service's replica template: a rolling update to the next version.
struct UpdateService {
  using Answer = Service;
  std::string name;
  ServiceTemplatePatch patch;
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs now) && {
    return core.UpdateService(by, name, std::move(patch), now);
  }
};

// The head's proxy: a replica answered its readiness check for the first time.
struct ReportReplicaReady {
  using Answer = Job;
  JobId job = 0;
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs now) && {
    return core.ReportReplicaReady(by, job, now);
  }
};

// The head's proxy: a draining replica has no request in flight any more; it may stop.
struct ReportReplicaDrained {
  using Answer = Job;
  JobId job = 0;
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs now) && {
    return core.ReportReplicaDrained(by, job, now);
  }
};

// The head's proxy, every second: each service's requests in flight and median latency (the
// autoscaler's input).
struct ReportServiceLoad {
  using Answer = int32_t;
  std::map<std::string, ServiceLoad> load;  // by service
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs now) && {
    return core.ReportServiceLoad(by, load, now);
  }
};

// The head's proxy: a request came for a service scaled to zero.
struct WakeService {
  using Answer = Service;
  std::string name;
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs now) && {
    return core.WakeService(by, name, now);
  }
};

// --- credentials ---

// Answered by the shell, which draws the secret.
struct CreateToken {
  using Answer = NewToken;
  TokenRequest request;
};

struct RevokeToken {
  using Answer = Credential;
  std::string id;
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs now) && {
    return core.RevokeToken(by, id, now);
  }
};

struct ListTokens {
  using Answer = std::vector<Credential>;
  Result<Answer> operator()(HeadCore& core, const Caller& by, TimeMs) && {
    return Result<Answer>(core.ListTokens(by));
  }
};

// Who the head takes the caller for (a token's user and role, or a local Unix user with the
// role of its groups): `corral whoami`. Any authenticated caller.
struct WhoAmI {
  using Answer = Caller;
  Result<Answer> operator()(HeadCore&, const Caller& by, TimeMs) && { return by; }
};

// --- the head itself ---

// An online backup of the store to `path` on the head's host (admins only; one at a time),
// taken on a thread of its own while the head goes on committing; audited.
struct BackupStore {
  using Answer = store::BackupInfo;
  std::string path;
};

// Held up to `wait_ms` when there is nothing after `since` yet.
struct WatchEvents {
  using Answer = Events;
  uint64_t since = 0;
  int32_t max = 1000;
  DurationMs wait_ms = 0;
};

// --- agents: only these take an agent's credential ---

// Answered by the shell, which draws the node's secret.
struct RegisterAgent {
  using Answer = RegisterResponse;
  static constexpr bool kForAgents = true;
  RegisterRequest request;
};

// Answered by the shell: may be held up to request.wait_ms (bounded by the config).
struct SyncAgent {
  using Answer = SyncResponse;
  static constexpr bool kForAgents = true;
  SyncRequest request;
};

// Whether a command takes an agent's credential (join, node); every other refuses it.
template <typename C>
constexpr bool ForAgents() {
  if constexpr (requires { C::kForAgents; }) {
    return C::kForAgents;
  } else {
    return false;
  }
}

// Every command, for the head's one entry (its explicit instantiations) and the tests.
#define CORRAL_HEAD_COMMANDS(X) \
  X(SubmitJob)                  \
  X(GetJob)                     \
  X(LocateLogs)                 \
  X(ListJobs)                   \
  X(CancelJob)                  \
  X(SignalJob)                  \
  X(RequeueJob)                 \
  X(HoldJob)                    \
  X(ReportCheckpoint)           \
  X(StartStep)                  \
  X(GetStep)                    \
  X(OpenExec)                   \
  X(TouchSession)               \
  X(GetUsage)                   \
  X(GetHistory)                 \
  X(GetClusterSeries)           \
  X(ListNodes)                  \
  X(GetNode)                    \
  X(SetDrain)                   \
  X(RemoveNode)                 \
  X(SetGpuDrain)                \
  X(ListQueues)                 \
  X(SetQueue)                   \
  X(ListQos)                    \
  X(SetQos)                     \
  X(DeleteQos)                  \
  X(ListReservations)           \
  X(CreateReservation)          \
  X(DeleteReservation)          \
  X(ListDatasets)               \
  X(GetDataset)                 \
  X(AddDataset)                 \
  X(RemoveDataset)              \
  X(ListSourceBudgets)          \
  X(SetSourceLimit)             \
  X(CreateService)              \
  X(RemoveService)              \
  X(ListServices)               \
  X(GetService)                 \
  X(GetServiceHistory)          \
  X(ScaleService)               \
  X(ReplaceReplica)             \
  X(UpdateService)              \
  X(ReportReplicaReady)         \
  X(ReportReplicaDrained)       \
  X(ReportServiceLoad)          \
  X(WakeService)                \
  X(CreateToken)                \
  X(RevokeToken)                \
  X(ListTokens)                 \
  X(WhoAmI)                     \
  X(BackupStore)                \
  X(WatchEvents)                \
  X(RegisterAgent)              \
  X(SyncAgent)                  \
  X(UpdateJob)

}  // namespace corral::head
