#include "head/change.h"

#include "core/dataset_key.h"

namespace corral::head {
namespace {

template <typename T>
T Get(const Json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return it->get<T>();
}

// Decoders throw on malformed documents; ChangeFromJson turns that into a Status.
template <typename T>
T Must(Result<T> r) {
  if (!r.ok()) throw std::runtime_error(r.status().message());
  return std::move(*r);
}

std::vector<ReplicaPlacement> DecodePlacements(const Json& j) {
  std::vector<ReplicaPlacement> out;
  for (const Json& p : j) out.push_back(Must(PlacementFromJson(p)));
  return out;
}

template <typename E>
E EnumFrom(const Json& j, const char* key, bool (*parse)(const std::string&, E*)) {
  E e{};
  if (!parse(j.at(key).get<std::string>(), &e)) throw std::runtime_error(std::string("bad ") + key);
  return e;
}

struct Encoder {
  Json& j;
  void operator()(const HeadStarted& c) {
    j["epoch"] = c.epoch;
    if (!c.step_key.empty()) j["step_key"] = c.step_key;
  }
  void operator()(const RunSignalled& c) {
    j.update({{"job", c.job},
              {"attempt", c.attempt},
              {"signal", c.signal},
              {"to_replicas", c.to_replicas},
              {"to_steps", c.to_steps}});
  }
  void operator()(const JobHoldSet& c) { j.update({{"job", c.job}, {"held", c.held}}); }
  void operator()(const JobUpdated& c) {
    j.update({{"job", c.job},
              {"time_limit_ms", c.time_limit_ms},
              {"priority", c.priority},
              {"queue", c.queue},
              {"previous_queue", c.previous_queue}});
  }
  void operator()(const JobsRetired& c) { j["jobs"] = c.jobs; }
  void operator()(const StepStarted& c) {
    j.update({{"job", c.job}, {"attempt", c.attempt}, {"step", ToJson(c.step)}});
  }
  void operator()(const StepExited& c) {
    j.update({{"job", c.job},
              {"attempt", c.attempt},
              {"step", c.step},
              {"index", c.index},
              {"exit_code", c.exit_code}});
  }
  void operator()(const JobSubmitted& c) { j["job"] = ToJson(*c.job); }
  void operator()(const ArraySubmitted& c) {
    j["job"] = ToJson(*c.job);
    j["indices"] = c.indices;
  }
  void operator()(const RunPlaced& c) {
    Json p = Json::array();
    for (const ReplicaPlacement& r : c.placement) p.push_back(ToJson(r));
    j.update(
        {{"job", c.job}, {"attempt", c.attempt}, {"placement", p}, {"master_port", c.master_port}});
  }
  void operator()(const RunStarted& c) {
    j.update({{"job", c.job}, {"attempt", c.attempt}, {"started_at", c.started_at}});
  }
  void operator()(const ReplicaExited& c) {
    j.update({{"job", c.job},
              {"attempt", c.attempt},
              {"replica", c.replica},
              {"exit_code", c.exit_code},
              {"task", c.task}});
    if (c.peak_memory_bytes > 0) j["peak_memory_bytes"] = c.peak_memory_bytes;
    if (c.cpu_ms > 0) j["cpu_ms"] = c.cpu_ms;
  }
  void operator()(const StopRequested& c) {
    j.update({{"job", c.job},
              {"attempt", c.attempt},
              {"reason", c.reason},
              {"cause", StopCauseName(c.cause)}});
    if (c.preempt != PreemptKind::kNone) j["preempt"] = PreemptKindName(c.preempt);
  }
  void operator()(const RunEnded& c) {
    j.update({{"job", c.job},
              {"attempt", c.attempt},
              {"run_state", RunStateName(c.run_state)},
              {"reason", c.reason},
              {"job_state", JobStateName(c.job_state)},
              {"exit_code", c.exit_code},
              {"cause", StopCauseName(c.cause)}});
  }
  void operator()(const JobEnded& c) {
    j.update({{"job", c.job}, {"state", JobStateName(c.state)}, {"reason", c.reason}});
  }
  void operator()(const CheckpointReported& c) {
    j.update({{"job", c.job}, {"attempt", c.attempt}});
  }
  void operator()(const RunNoted& c) {
    j.update({{"job", c.job}, {"attempt", c.attempt}, {"what", c.what}, {"note", c.note}});
  }
  void operator()(const IdleWarned& c) {
    j.update({{"job", c.job},
              {"attempt", c.attempt},
              {"idle_since", c.idle_since},
              {"stop_at", c.stop_at}});
  }
  void operator()(const NodeRegistered& c) {
    j["node"] = ToJson(c.node);
    j["credential"] = ToJson(c.credential);
  }
  void operator()(const NodeRemoved& c) { j["node"] = c.node; }
  void operator()(const NodeLivenessSet& c) {
    j.update({{"node", c.node}, {"liveness", LivenessName(c.liveness)}, {"reason", c.reason}});
  }
  void operator()(const NodeDrainSet& c) {
    j.update({{"node", c.node}, {"drain", DrainName(c.drain)}, {"reason", c.reason}});
  }
  void operator()(const NodeHealthSet& c) {
    Json faults = Json::array();
    for (const auto& [gpu, why] : c.faults) faults.push_back(Json{{"gpu", gpu}, {"fault", why}});
    j.update({{"node", c.node}, {"faults", faults}, {"reason", UnhealthyReason(c.faults)}});
  }
  void operator()(const GpuDrainSet& c) {
    j.update({{"node", c.node}, {"gpu", c.gpu}, {"drain", ToJson(c.drain)}});
  }
  void operator()(const QueueSet& c) { j["queue"] = ToJson(c.queue); }
  void operator()(const QosSet& c) { j["qos"] = ToJson(c.qos); }
  void operator()(const QosDeleted& c) { j["name"] = c.name; }
  void operator()(const ReservationSet& c) { j["reservation"] = ToJson(c.reservation); }
  void operator()(const ReservationDeleted& c) { j["name"] = c.name; }
  void operator()(const DatasetAdded& c) { j["dataset"] = ToJson(c.dataset); }
  void operator()(const DatasetRemoved& c) {
    j["name"] = c.name;
    if (!c.version.empty()) j["version"] = c.version;
  }
  void operator()(const ServiceCreated& c) { j["service"] = ToJson(*c.service); }
  void operator()(const ServiceUpdated& c) { j["service"] = ToJson(*c.service); }
  void operator()(const ServiceRemoved& c) { j["name"] = c.name; }
  void operator()(const ServiceRolloutStarted& c) {
    j.update(
        {{"name", c.name}, {"service", ToJson(*c.spec)}, {"ready_timeout_ms", c.ready_timeout_ms}});
  }
  void operator()(const ServiceRolloutEnded& c) {
    j.update({{"name", c.name}, {"rolled_back", c.rolled_back}, {"reason", c.reason}});
  }
  void operator()(const ServiceReplicaMarked& c) {
    j.update({{"name", c.name}, {"job", c.job}, {"mark", ReplicaMarkName(c.mark)}});
    if (c.mark == ReplicaMark::kDraining) j["until"] = c.until;
  }
  void operator()(const SourceRateMeasured& c) {
    j.update({{"source", c.source}, {"bytes", c.bytes}, {"ms", c.ms}});
  }
  void operator()(const SourceLimitSet& c) {
    j.update({{"source", c.source}, {"rate", c.rate}, {"fetches", c.fetches}});
  }
  void operator()(const StageInQueued& c) {
    j.update({{"job", c.job}, {"attempt", c.attempt}, {"fetches", c.fetches}});
  }
  void operator()(const StageInAdmitted& c) { j.update({{"job", c.job}, {"attempt", c.attempt}}); }
  void operator()(const RunUsageSampled& c) {
    j.update({{"job", c.job},
              {"attempt", c.attempt},
              {"replica", c.replica},
              {"points", UsagePointsToJson(c.points)}});
  }
  void operator()(const ServiceScaled& c) {
    j.update({{"name", c.name},
              {"from", c.from},
              {"to", c.to},
              {"cause", ScaleCauseName(c.cause)},
              {"reason", c.reason}});
  }
  void operator()(const TokenIssued& c) { j["credential"] = ToJson(c.credential); }
  void operator()(const TokenRevoked& c) { j["id"] = c.id; }
  void operator()(const JobResized& c) {
    Json added = Json::array();
    for (const ReplicaPlacement& r : c.added) added.push_back(ToJson(r));
    j.update({{"job", c.job},
              {"attempt", c.attempt},
              {"added", added},
              {"removed", c.removed},
              {"cause", ResizeCauseName(c.cause)},
              {"reason", c.reason}});
  }
};

// A change logged before liveness and drain were apart set one state for both. Read back, each
// means what it was written for: the head wrote "ready" on an undrain ("undrained by ...") and
// on an agent heard from again, the others name one fact.
ChangeKind LegacyNodeStateSet(const Json& j) {
  std::string node = j.at("node").get<std::string>();
  std::string reason = j.at("reason").get<std::string>();
  switch (EnumFrom<NodeState>(j, "state", ParseNodeState)) {
    case NodeState::kDraining:
      return NodeDrainSet{node, Drain::kDraining, reason};
    case NodeState::kDrained:
      return NodeDrainSet{node, Drain::kDrained, reason};
    case NodeState::kUnreachable:
      return NodeLivenessSet{node, Liveness::kUnreachable, reason};
    case NodeState::kDown:
      return NodeLivenessSet{node, Liveness::kDown, reason};
    case NodeState::kReady:
      break;
  }
  if (reason.rfind("undrained", 0) == 0) return NodeDrainSet{node, Drain::kNone, reason};
  return NodeLivenessSet{node, Liveness::kAlive, reason};
}

// A stop or an end logged before changes carried their cause reads as the cause its reason's
// words stand for (stop_cause.h): decided once, here.
StopRequested DecodeStopRequested(const Json& j) {
  StopRequested s{j.at("job").get<JobId>(), j.at("attempt").get<int32_t>(),
                  j.at("reason").get<std::string>()};
  if (!j.contains("cause")) {
    s.cause = LegacyStopCause(s.reason);
    s.preempt = LegacyPreemptKind(s.reason);
    return s;
  }
  s.cause = EnumFrom<StopCause>(j, "cause", ParseStopCause);
  if (j.contains("preempt")) s.preempt = EnumFrom<PreemptKind>(j, "preempt", ParsePreemptKind);
  return s;
}

RunEnded DecodeRunEnded(const Json& j) {
  RunEnded e{j.at("job").get<JobId>(),
             j.at("attempt").get<int32_t>(),
             EnumFrom<RunState>(j, "run_state", ParseRunState),
             j.at("reason").get<std::string>(),
             EnumFrom<JobState>(j, "job_state", ParseJobState),
             j.at("exit_code").get<int32_t>()};
  e.cause = j.contains("cause") ? EnumFrom<StopCause>(j, "cause", ParseStopCause)
                                : LegacyRunCause(e.run_state, true, e.reason);
  return e;
}

// Long: one case per change kind, the decoder's table; a new kind adds one case here.
ChangeKind DecodeKind(const std::string& type, const Json& j) {
  auto job = [&] { return j.at("job").get<JobId>(); };
  auto attempt = [&] { return j.at("attempt").get<int32_t>(); };
  if (type == "head_started") {
    return HeadStarted{j.at("epoch").get<uint64_t>(), Get<std::string>(j, "step_key", "")};
  }
  if (type == "step_started")
    return StepStarted{job(), attempt(), Must(StepFromJson(j.at("step")))};
  if (type == "run_signalled") {
    return RunSignalled{job(), attempt(), j.at("signal").get<int32_t>(),
                        Get<bool>(j, "to_replicas", true), Get<bool>(j, "to_steps", true)};
  }
  if (type == "job_hold_set") return JobHoldSet{job(), j.at("held").get<bool>()};
  if (type == "job_updated") {
    return JobUpdated{job(), j.at("time_limit_ms").get<DurationMs>(),
                      j.at("priority").get<int32_t>(), j.at("queue").get<std::string>(),
                      j.at("previous_queue").get<std::string>()};
  }
  if (type == "jobs_retired") return JobsRetired{j.at("jobs").get<std::vector<JobId>>()};
  if (type == "step_exited") {
    return StepExited{job(), attempt(), j.at("step").get<int32_t>(), j.at("index").get<int32_t>(),
                      j.at("exit_code").get<int32_t>()};
  }
  if (type == "job_submitted") return JobSubmitted{Must(JobFromJson(j.at("job")))};
  if (type == "array_submitted") {
    ArraySubmitted a{Must(JobFromJson(j.at("job"))), j.at("indices").get<std::vector<int32_t>>()};
    if (a.indices.empty() || a.job->array_id != a.job->id) {
      throw std::runtime_error("array_submitted: no elements, or its job is not the first");
    }
    return a;
  }
  if (type == "run_placed") {
    return RunPlaced{job(), attempt(), DecodePlacements(j.at("placement")),
                     Get<int32_t>(j, "master_port", 0)};
  }
  if (type == "run_started") return RunStarted{job(), attempt(), j.at("started_at").get<int64_t>()};
  if (type == "replica_exited") {
    return ReplicaExited{job(),
                         attempt(),
                         j.at("replica").get<int32_t>(),
                         j.at("exit_code").get<int32_t>(),
                         j.value("task", int32_t{-1}),
                         j.value("peak_memory_bytes", int64_t{0}),
                         j.value("cpu_ms", int64_t{0})};
  }
  if (type == "stop_requested") return DecodeStopRequested(j);
  if (type == "run_ended") return DecodeRunEnded(j);
  if (type == "job_ended") {
    return JobEnded{job(), EnumFrom<JobState>(j, "state", ParseJobState),
                    j.at("reason").get<std::string>()};
  }
  if (type == "checkpoint_reported") return CheckpointReported{job(), attempt()};
  if (type == "run_noted") {
    return RunNoted{job(), attempt(), j.at("what").get<std::string>(),
                    j.at("note").get<std::string>()};
  }
  if (type == "idle_warned") {
    return IdleWarned{job(), attempt(), j.at("idle_since").get<TimeMs>(),
                      j.at("stop_at").get<TimeMs>()};
  }
  if (type == "node_registered") {
    return NodeRegistered{Must(NodeFromJson(j.at("node"))),
                          Must(CredentialFromJson(j.at("credential")))};
  }
  if (type == "node_removed") return NodeRemoved{j.at("node").get<std::string>()};
  if (type == "node_liveness_set") {
    return NodeLivenessSet{j.at("node").get<std::string>(),
                           EnumFrom<Liveness>(j, "liveness", ParseLiveness),
                           j.at("reason").get<std::string>()};
  }
  if (type == "node_drain_set") {
    return NodeDrainSet{j.at("node").get<std::string>(), EnumFrom<Drain>(j, "drain", ParseDrain),
                        j.at("reason").get<std::string>()};
  }
  if (type == "node_state_set") return LegacyNodeStateSet(j);
  if (type == "node_health_set") {
    NodeHealthSet h{j.at("node").get<std::string>(), {}};
    for (const Json& f : j.at("faults")) {
      h.faults[f.at("gpu").get<int32_t>()] = f.at("fault").get<std::string>();
    }
    return h;
  }
  if (type == "gpu_drain_set") {
    return GpuDrainSet{j.at("node").get<std::string>(), j.at("gpu").get<int32_t>(),
                       Must(GpuDrainFromJson(j.at("drain")))};
  }
  if (type == "queue_set") return QueueSet{Must(QueueFromJson(j.at("queue")))};
  if (type == "qos_set") return QosSet{Must(QosFromJson(j.at("qos")))};
  if (type == "qos_deleted") return QosDeleted{j.at("name").get<std::string>()};
  if (type == "reservation_set") {
    return ReservationSet{Must(NodeReservationFromJson(j.at("reservation")))};
  }
  if (type == "reservation_deleted") return ReservationDeleted{j.at("name").get<std::string>()};
  if (type == "dataset_added") return DatasetAdded{Must(DatasetFromJson(j.at("dataset")))};
  if (type == "dataset_removed") {
    return DatasetRemoved{j.at("name").get<std::string>(), j.value("version", std::string())};
  }
  if (type == "service_created") return ServiceCreated{Must(ServiceFromJson(j.at("service")))};
  if (type == "service_updated") return ServiceUpdated{Must(ServiceFromJson(j.at("service")))};
  if (type == "service_removed") return ServiceRemoved{j.at("name").get<std::string>()};
  if (type == "service_rollout_started") {
    return ServiceRolloutStarted{j.at("name").get<std::string>(),
                                 Must(ServiceSpecFromJson(j.at("service"))),
                                 j.at("ready_timeout_ms").get<DurationMs>()};
  }
  if (type == "service_rollout_ended") {
    return ServiceRolloutEnded{j.at("name").get<std::string>(), j.at("rolled_back").get<bool>(),
                               j.at("reason").get<std::string>()};
  }
  if (type == "service_replica_marked") {
    return ServiceReplicaMarked{j.at("name").get<std::string>(), j.at("job").get<JobId>(),
                                EnumFrom<ReplicaMark>(j, "mark", ParseReplicaMark),
                                j.value("until", TimeMs{0})};
  }
  if (type == "service_scaled") {
    return ServiceScaled{j.at("name").get<std::string>(), j.at("from").get<int32_t>(),
                         j.at("to").get<int32_t>(),
                         EnumFrom<ScaleCause>(j, "cause", ParseScaleCause), j.value("reason", "")};
  }
  if (type == "run_usage_sampled") {
    return RunUsageSampled{job(), attempt(), j.at("replica").get<int32_t>(),
                           DecodeUsagePoints(j.at("points"))};
  }
  if (type == "source_rate_measured") {
    return SourceRateMeasured{j.at("source").get<std::string>(), j.at("bytes").get<int64_t>(),
                              j.at("ms").get<DurationMs>()};
  }
  if (type == "source_limit_set") {
    return SourceLimitSet{j.at("source").get<std::string>(), j.at("rate").get<int64_t>(),
                          j.at("fetches").get<int32_t>()};
  }
  if (type == "stage_in_queued") {
    return StageInQueued{job(), attempt(), j.at("fetches").get<std::map<std::string, int32_t>>()};
  }
  if (type == "stage_in_admitted") return StageInAdmitted{job(), attempt()};
  if (type == "token_issued") return TokenIssued{Must(CredentialFromJson(j.at("credential")))};
  if (type == "token_revoked") return TokenRevoked{j.at("id").get<std::string>()};
  if (type == "job_resized") {
    JobResized r{job(),
                 attempt(),
                 DecodePlacements(j.at("added")),
                 j.at("removed").get<std::vector<int32_t>>(),
                 EnumFrom<ResizeCause>(j, "cause", ParseResizeCause),
                 j.at("reason").get<std::string>()};
    if (r.added.empty() == r.removed.empty()) {
      throw std::runtime_error("job_resized: want replicas added or removed, not both or none");
    }
    return r;
  }
  throw std::runtime_error("unknown change type '" + type + "'");
}

struct KeyOf {
  Json& j;
  void operator()(const HeadStarted&) { j.update({{"kind", "head"}, {"key", ""}}); }
  void operator()(const NodeRegistered& e) { j.update({{"kind", "node"}, {"key", e.node.name}}); }
  void operator()(const NodeLivenessSet& e) { j.update({{"kind", "node"}, {"key", e.node}}); }
  void operator()(const NodeRemoved& e) { j.update({{"kind", "node"}, {"key", e.node}}); }
  void operator()(const NodeDrainSet& e) { j.update({{"kind", "node"}, {"key", e.node}}); }
  void operator()(const NodeHealthSet& e) { j.update({{"kind", "node"}, {"key", e.node}}); }
  void operator()(const GpuDrainSet& e) { j.update({{"kind", "node"}, {"key", e.node}}); }
  void operator()(const QueueSet& e) { j.update({{"kind", "queue"}, {"key", e.queue.name}}); }
  void operator()(const QosSet& e) { j.update({{"kind", "qos"}, {"key", e.qos.name}}); }
  void operator()(const QosDeleted& e) { j.update({{"kind", "qos"}, {"key", e.name}}); }
  void operator()(const ReservationSet& e) {
    j.update({{"kind", "reservation"}, {"key", e.reservation.name}});
  }
  void operator()(const ReservationDeleted& e) {
    j.update({{"kind", "reservation"}, {"key", e.name}});
  }
  void operator()(const DatasetAdded& e) {
    j.update({{"kind", "dataset"}, {"key", e.dataset.name}});
  }
  void operator()(const SourceRateMeasured& e) {
    j.update({{"kind", "dataset"}, {"key", e.source}});
  }
  void operator()(const SourceLimitSet& e) { j.update({{"kind", "dataset"}, {"key", e.source}}); }
  void operator()(const DatasetRemoved& e) {
    j.update(
        {{"kind", "dataset"}, {"key", e.version.empty() ? e.name : DatasetKey(e.name, e.version)}});
  }
  void operator()(const ServiceCreated& e) {
    j.update({{"kind", "service"}, {"key", e.service->spec.name}});
  }
  void operator()(const ServiceUpdated& e) {
    j.update({{"kind", "service"}, {"key", e.service->spec.name}});
  }
  void operator()(const ServiceRemoved& e) { j.update({{"kind", "service"}, {"key", e.name}}); }
  void operator()(const ServiceRolloutStarted& e) {
    j.update({{"kind", "service"}, {"key", e.name}});
  }
  void operator()(const ServiceRolloutEnded& e) {
    j.update({{"kind", "service"}, {"key", e.name}});
  }
  void operator()(const ServiceReplicaMarked& e) {
    j.update({{"kind", "service"}, {"key", e.name}});
  }
  void operator()(const ServiceScaled& e) { j.update({{"kind", "service"}, {"key", e.name}}); }
  void operator()(const TokenIssued& e) { j.update({{"kind", "token"}, {"key", e.credential.id}}); }
  void operator()(const TokenRevoked& e) { j.update({{"kind", "token"}, {"key", e.id}}); }
  void operator()(const JobSubmitted& e) { j.update({{"kind", "job"}, {"key", e.job->id}}); }
  // The array's id; "indices" lists its elements' array indices, their ids follow it.
  void operator()(const ArraySubmitted& e) { j.update({{"kind", "job"}, {"key", e.job->id}}); }
  // Many jobs: the key is empty and "jobs" lists them.
  void operator()(const JobsRetired&) { j.update({{"kind", "job"}, {"key", ""}}); }
  void operator()(const auto& e) { j.update({{"kind", "job"}, {"key", e.job}}); }
};

}  // namespace

Job ArraySubmitted::Element(size_t i) const {
  Job e = *job;
  e.id = job->id + i;
  e.array_index = indices[i];
  return e;
}

std::string UnhealthyReason(const std::map<int32_t, std::string>& faults) {
  std::string out;
  for (const auto& [gpu, why] : faults) {
    out += (out.empty() ? "GPU " : "; GPU ") + std::to_string(gpu) + ": " + why;
  }
  return out;
}

const char* ResizeCauseName(ResizeCause c) {
  switch (c) {
    case ResizeCause::kGrow:
      return "grow";
    case ResizeCause::kReclaim:
      return "reclaim";
    case ResizeCause::kNodeLost:
      return "node_lost";
  }
  return "grow";
}

bool ParseResizeCause(const std::string& text, ResizeCause* out) {
  for (ResizeCause c : {ResizeCause::kGrow, ResizeCause::kReclaim, ResizeCause::kNodeLost}) {
    if (text == ResizeCauseName(c)) {
      *out = c;
      return true;
    }
  }
  return false;
}

const char* ChangeName(const ChangeKind& what) {
  static const char* const kNames[] = {"head_started",
                                       "job_submitted",
                                       "run_placed",
                                       "run_started",
                                       "replica_exited",
                                       "stop_requested",
                                       "run_ended",
                                       "job_ended",
                                       "checkpoint_reported",
                                       "node_registered",
                                       "node_liveness_set",
                                       "queue_set",
                                       "token_issued",
                                       "token_revoked",
                                       "idle_warned",
                                       "step_started",
                                       "step_exited",
                                       "job_hold_set",
                                       "run_signalled",
                                       "node_health_set",
                                       "jobs_retired",
                                       "array_submitted",
                                       "node_drain_set",
                                       "gpu_drain_set",
                                       "run_noted",
                                       "qos_set",
                                       "qos_deleted",
                                       "reservation_set",
                                       "reservation_deleted",
                                       "job_updated",
                                       "job_resized",
                                       "dataset_added",
                                       "dataset_removed",
                                       "service_created",
                                       "service_updated",
                                       "service_removed",
                                       "node_removed",
                                       "service_rollout_started",
                                       "service_rollout_ended",
                                       "service_replica_marked",
                                       "service_scaled",
                                       "run_usage_sampled",
                                       "source_rate_measured",
                                       "source_limit_set",
                                       "stage_in_queued",
                                       "stage_in_admitted"};
  static_assert(std::size(kNames) == std::variant_size_v<ChangeKind>);
  return kNames[what.index()];
}

Json ToJson(const Change& c) {
  Json j{{"rev", c.revision}, {"at", c.at}, {"type", ChangeName(c.what)}, {"by", ToJson(c.by)}};
  std::visit(Encoder{j}, c.what);
  return j;
}

Json EventJson(const Change& c, const Caller& who) {
  Json j = ToJson(c);
  if (j.contains("credential")) j["credential"].erase("hash");
  j.erase("step_key");
  const Job* submitted = nullptr;
  if (const auto* s = std::get_if<JobSubmitted>(&c.what)) submitted = &*s->job;
  if (const auto* a = std::get_if<ArraySubmitted>(&c.what)) submitted = &*a->job;
  if (submitted) {
    bool may_see_env =
        who.IsAdmin() || (who.kind == Caller::Kind::kUser && who.name == submitted->owner);
    if (!may_see_env) j["job"]["spec"].erase("env");
  }
  if (j.contains("step") && j["step"].is_object()) j["step"].erase("env");  // holds its token
  const ServiceSpec* service = nullptr;
  if (const auto* s = std::get_if<ServiceCreated>(&c.what)) service = &s->service->spec;
  if (const auto* s = std::get_if<ServiceUpdated>(&c.what)) service = &s->service->spec;
  if (const auto* s = std::get_if<ServiceRolloutStarted>(&c.what)) service = &*s->spec;
  if (service && !who.IsAdmin() &&
      !(who.kind == Caller::Kind::kUser && who.name == service->owner)) {
    j["service"]["spec"].erase("env");
    if (j["service"].contains("rollout")) j["service"]["rollout"]["from"]["spec"].erase("env");
  }
  std::visit(KeyOf{j}, c.what);
  // Credentials as /v1/tokens shows them: a user sees their own, an admin everyone's (a
  // revocation names only an id, whose owner the change does not say: admins alone see it).
  if (!who.IsAdmin()) {
    const Credential* cred = nullptr;
    if (const auto* t = std::get_if<TokenIssued>(&c.what)) cred = &t->credential;
    if (const auto* n = std::get_if<NodeRegistered>(&c.what)) cred = &n->credential;
    bool own = cred && cred->who.kind == Caller::Kind::kUser && who.kind == Caller::Kind::kUser &&
               cred->who.name == who.name;
    if (cred && !own) j.erase("credential");
    if (!own && (std::holds_alternative<TokenIssued>(c.what) ||
                 std::holds_alternative<TokenRevoked>(c.what))) {
      j.erase("key");
      j.erase("id");
    }
  }
  return j;
}

Result<Change> ChangeFromJson(const Json& j) {
  try {
    Change c;
    c.revision = j.at("rev").get<uint64_t>();
    c.at = j.at("at").get<int64_t>();
    c.by = Must(CallerFromJson(j.at("by")));
    c.what = DecodeKind(j.at("type").get<std::string>(), j);
    return c;
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("change: ") + e.what());
  }
}

}  // namespace corral::head
