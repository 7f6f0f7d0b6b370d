#include "core/codec.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "core/codec_internal.h"
#include "core/container_codec.h"

namespace corral {

using codec_internal::Checked;
using codec_internal::Decode;
using codec_internal::Get;
using codec_internal::Must;
using codec_internal::Req;

namespace {

JobSpec DecodeSpec(const Json& j) {
  JobSpec s;
  s.name = Get<std::string>(j, "name", "");
  s.command = Get<std::vector<std::string>>(j, "command", {});
  s.env = Get<std::map<std::string, std::string>>(j, "env", {});
  s.workdir = Get<std::string>(j, "workdir", "");
  s.queue = Get<std::string>(j, "queue", "default");
  s.replicas = Get<int32_t>(j, "replicas", 1);
  s.min_replicas = Get<int32_t>(j, "min_replicas", 0);
  s.hot_spares = Get<int32_t>(j, "hot_spares", 0);
  s.max_replicas_per_node = Get<int32_t>(j, "max_replicas_per_node", 0);
  s.reservation = Get<std::string>(j, "reservation", "");
  if (auto events = ParseMailTypes("mail_type", Get<std::string>(j, "mail_type", "none"));
      events.ok()) {
    s.notify.events = *events;
  } else {
    throw std::runtime_error(events.status().message());
  }
  s.notify.mail_user = Get<std::string>(j, "mail_user", "");
  if (auto it = j.find("datasets"); it != j.end()) {
    for (const Json& d : *it) {
      auto r = DatasetRefFromJson(d);
      if (!r.ok()) throw std::runtime_error(r.status().message());
      s.datasets.push_back(std::move(*r));
    }
  }
  if (auto it = j.find("stage_out"); it != j.end()) s.stage_out = StageOutFromJson(*it);
  s.service = Get<std::string>(j, "service", "");
  s.tasks_per_replica = Get<int32_t>(j, "tasks_per_replica", 1);
  s.per_replica.gpu_milli = Get<int32_t>(j, "gpu_milli", 0);
  s.per_replica.cpu_milli = Get<int32_t>(j, "cpu_milli", 1000);
  s.per_replica.memory_mb = Get<int64_t>(j, "memory_mb", 0);
  s.per_replica.gpu_memory_mb = Get<int64_t>(j, "gpu_memory_mb", 0);
  if (!ParseGpuIsolation(Get<std::string>(j, "gpu_isolation", "memory"),
                         &s.per_replica.gpu_isolation)) {
    throw std::runtime_error("field 'gpu_isolation': want memory or mps");
  }
  s.gpu_model = Get<std::string>(j, "gpu_model", "");
  s.node_labels = Get<std::map<std::string, std::string>>(j, "node_labels", {});
  s.time_limit_ms = Get<int64_t>(j, "time_limit_ms", 0);
  s.priority = Get<int32_t>(j, "priority", 0);
  s.preemptible = Get<bool>(j, "preemptible", false);
  s.batch = Get<bool>(j, "batch", false);
  s.hold = Get<bool>(j, "hold", false);
  s.interactive = Get<std::string>(j, "kind", "job") == "interactive";
  s.notebook = Get<bool>(j, "notebook", false);
  s.max_restarts = Get<int32_t>(j, "max_restarts", 0);
  s.checkpoint_signal = Get<int32_t>(j, "checkpoint_signal", 15);
  s.grace_ms = Get<int64_t>(j, "grace_ms", 10000);
  s.array = Get<std::string>(j, "array", "");
  if (auto c = j.find("container"); c != j.end() && !c->is_null())
    s.container = DecodeContainer(*c);
  if (auto deps = ParseDependencies(Get<std::string>(j, "dependency", "")); deps.ok()) {
    s.dependencies = *deps;
  } else {
    throw std::runtime_error(deps.status().message());
  }
  return s;
}

ReplicaPlacement DecodePlacement(const Json& j) {
  ReplicaPlacement p;
  p.node = j.at("node").get<std::string>();
  p.gpus = Req<std::vector<int32_t>>(j, "gpus");
  p.gpu_milli = Get<std::vector<int32_t>>(j, "gpu_milli", {});
  p.gpu_memory_mb = Get<int64_t>(j, "gpu_memory_mb", 0);
  p.tasks = Get<int32_t>(j, "tasks", 1);
  return p;
}

Step DecodeStep(const Json& j) {
  Step s;
  s.id = Req<int32_t>(j, "id");
  s.command = j.at("command").get<std::vector<std::string>>();
  s.env = Get<std::map<std::string, std::string>>(j, "env", {});
  s.workdir = Get<std::string>(j, "workdir", "");
  s.replicas = Req<std::vector<int32_t>>(j, "replicas");
  s.tasks = Req<std::vector<int32_t>>(j, "tasks");
  s.gpus_per_task = Get<bool>(j, "gpus_per_task", false);
  s.exit_codes = Get<std::vector<int32_t>>(j, "exit_codes", {});
  s.started_at = Get<int64_t>(j, "started_at", 0);
  s.ended_at = Get<int64_t>(j, "ended_at", 0);
  if (s.tasks.size() != s.replicas.size() || s.exit_codes.size() != s.replicas.size()) {
    throw std::runtime_error("step: replicas, tasks and exit_codes differ in length");
  }
  return s;
}

Run DecodeRun(const Json& j) {
  Run r;
  r.attempt = Req<int32_t>(j, "attempt");
  for (const Json& p : j.at("placement")) r.placement.push_back(DecodePlacement(p));
  if (!ParseRunState(j.at("state").get<std::string>(), &r.state)) {
    throw std::runtime_error("bad run state");
  }
  r.scheduled_at = Get<int64_t>(j, "scheduled_at", 0);
  r.started_at = Get<int64_t>(j, "started_at", 0);
  r.ended_at = Get<int64_t>(j, "ended_at", 0);
  r.exit_codes = Get<std::vector<int32_t>>(j, "exit_codes", {});
  r.reason = Get<std::string>(j, "reason", "");
  r.stop_requested = Get<bool>(j, "stop_requested", false);
  r.stop_requested_at = Get<int64_t>(j, "stop_requested_at", 0);
  if (auto cause = j.find("cause"); cause != j.end()) {
    if (!ParseStopCause(cause->get<std::string>(), &r.cause)) {
      throw std::runtime_error("bad run cause '" + cause->get<std::string>() + "'");
    }
  } else {  // written before runs kept their cause, or a live run's (none) left out
    r.cause = LegacyRunCause(r.state, r.stop_requested, r.reason);
  }
  r.last_checkpoint_at = Get<int64_t>(j, "last_checkpoint_at", 0);
  r.master_port = Get<int32_t>(j, "master_port", 0);
  r.failed_replica = Get<int32_t>(j, "failed_replica", -1);
  r.failed_task = Get<int32_t>(j, "failed_task", -1);
  r.peak_memory_bytes = Get<int64_t>(j, "peak_memory_bytes", 0);
  r.cpu_ms = Get<int64_t>(j, "cpu_ms", 0);
  r.signals = Get<int32_t>(j, "signals", 0);
  r.last_signal = Get<int32_t>(j, "last_signal", 0);
  r.step_signals = Get<int32_t>(j, "step_signals", 0);
  r.last_step_signal = Get<int32_t>(j, "last_step_signal", 0);
  if (auto it = j.find("steps"); it != j.end() && it->is_array()) {
    for (const Json& st : *it) r.steps.push_back(DecodeStep(st));
  }
  r.departed = Get<std::vector<int32_t>>(j, "departed", {});
  r.resizes = Get<int32_t>(j, "resizes", 0);
  r.joined_at = Get<std::vector<TimeMs>>(j, "joined_at", {});
  r.left_at = Get<std::vector<TimeMs>>(j, "left_at", {});
  r.peers_lost = Get<int32_t>(j, "peers_lost", 0);
  if (auto it = j.find("usage"); it != j.end() && it->is_array()) {
    for (const Json& u : *it) r.usage.push_back(DecodeReplicaUsage(u));
  }
  return r;
}

Gpu DecodeGpu(const Json& j) {
  Gpu g;
  g.index = Req<int32_t>(j, "index");
  g.uuid = Get<std::string>(j, "uuid", "");
  g.model = Get<std::string>(j, "model", "");
  g.memory_mb = Get<int64_t>(j, "memory_mb", 0);
  g.group = Get<int32_t>(j, "group", 0);
  g.healthy = Get<bool>(j, "healthy", true);
  return g;
}

std::vector<Gpu> DecodeGpus(const Json& j) {
  std::vector<Gpu> out;
  if (j.is_array()) {
    for (const Json& g : j) out.push_back(DecodeGpu(g));
  }
  return out;
}

Json EncodeGpus(const std::vector<Gpu>& gpus) {
  Json a = Json::array();
  for (const Gpu& g : gpus) a.push_back(ToJson(g));
  return a;
}

}  // namespace

Json ToJson(const JobSpec& s) {
  Json j{{"name", s.name},
         {"command", s.command},
         {"env", s.env},
         {"workdir", s.workdir},
         {"queue", s.queue},
         {"replicas", s.replicas},
         {"gpu_milli", s.per_replica.gpu_milli},
         {"cpu_milli", s.per_replica.cpu_milli},
         {"memory_mb", s.per_replica.memory_mb},
         {"gpu_model", s.gpu_model},
         {"node_labels", s.node_labels},
         {"time_limit_ms", s.time_limit_ms},
         {"priority", s.priority},
         {"preemptible", s.preemptible},
         {"max_restarts", s.max_restarts},
         {"checkpoint_signal", s.checkpoint_signal},
         {"grace_ms", s.grace_ms},
         {"array", s.array},
         {"tasks_per_replica", s.tasks_per_replica},
         {"batch", s.batch},
         {"hold", s.hold},
         {"kind", s.interactive ? "interactive" : "job"},
         {"dependency", FormatDependencies(s.dependencies)}};
  if (!s.container.empty()) j["container"] = ContainerJson(s.container);
  if (s.max_replicas_per_node > 0) j["max_replicas_per_node"] = s.max_replicas_per_node;
  if (s.min_replicas > 0) j["min_replicas"] = s.min_replicas;
  if (s.hot_spares > 0) j["hot_spares"] = s.hot_spares;
  if (!s.reservation.empty()) j["reservation"] = s.reservation;
  if (s.notify.events != 0) j["mail_type"] = MailTypesText(s.notify.events);
  if (!s.notify.mail_user.empty()) j["mail_user"] = s.notify.mail_user;
  if (!s.datasets.empty()) {
    Json all = Json::array();
    for (const DatasetRef& r : s.datasets) all.push_back(ToJson(r));
    j["datasets"] = all;
  }
  if (!s.stage_out.empty()) j["stage_out"] = ToJson(s.stage_out);
  if (!s.service.empty()) j["service"] = s.service;
  if (s.notebook) j["notebook"] = true;
  if (s.per_replica.IsShare()) {
    j["gpu_memory_mb"] = s.per_replica.gpu_memory_mb;
    j["gpu_isolation"] = GpuIsolationName(s.per_replica.gpu_isolation);
  }
  return j;
}

Json ToJson(const ReplicaPlacement& p) {
  Json pj{{"node", p.node}, {"gpus", p.gpus}, {"tasks", p.tasks}};
  if (!p.gpu_milli.empty()) pj["gpu_milli"] = p.gpu_milli;
  if (p.gpu_memory_mb) pj["gpu_memory_mb"] = p.gpu_memory_mb;
  return pj;
}

Json ToJson(const Step& s) {
  return Json{{"id", s.id},
              {"command", s.command},
              {"env", s.env},
              {"workdir", s.workdir},
              {"replicas", s.replicas},
              {"tasks", s.tasks},
              {"gpus_per_task", s.gpus_per_task},
              {"exit_codes", s.exit_codes},
              {"started_at", s.started_at},
              {"ended_at", s.ended_at}};
}

Result<Step> StepFromJson(const Json& j) { return Decode<Step>(j, "step", DecodeStep); }

Json ToJson(const Run& r) {
  Json placement = Json::array();
  for (const ReplicaPlacement& p : r.placement) {
    placement.push_back(ToJson(p));
  }
  Json out{{"attempt", r.attempt},
           {"placement", placement},
           {"state", RunStateName(r.state)},
           {"scheduled_at", r.scheduled_at},
           {"started_at", r.started_at},
           {"ended_at", r.ended_at},
           {"exit_codes", r.exit_codes},
           {"reason", r.reason},
           {"cause", StopCauseName(r.cause)},
           {"stop_requested", r.stop_requested},
           {"stop_requested_at", r.stop_requested_at},
           {"last_checkpoint_at", r.last_checkpoint_at},
           {"master_port", r.master_port},
           {"failed_replica", r.failed_replica},
           {"failed_task", r.failed_task},
           {"peak_memory_bytes", r.peak_memory_bytes},
           {"cpu_ms", r.cpu_ms}};
  if (r.signals > 0) {
    out["signals"] = r.signals;
    out["last_signal"] = r.last_signal;
  }
  if (r.step_signals > 0) {
    out["step_signals"] = r.step_signals;
    out["last_step_signal"] = r.last_step_signal;
  }
  if (!r.steps.empty()) {
    Json steps = Json::array();
    for (const Step& st : r.steps) steps.push_back(ToJson(st));
    out["steps"] = std::move(steps);
  }
  if (!r.departed.empty()) out["departed"] = r.departed;
  if (r.resizes > 0) out["resizes"] = r.resizes;
  if (!r.joined_at.empty()) out["joined_at"] = r.joined_at;
  if (!r.left_at.empty()) out["left_at"] = r.left_at;
  if (r.peers_lost > 0) out["peers_lost"] = r.peers_lost;
  if (!r.usage.empty()) {
    Json usage = Json::array();
    for (const ReplicaUsage& u : r.usage) usage.push_back(ToJson(u));
    out["usage"] = std::move(usage);
  }
  return out;
}

Json ToJson(const Job& j) {
  Json runs = Json::array();
  for (const Run& r : j.runs) runs.push_back(ToJson(r));
  Json events = Json::array();
  for (const JobEvent& e : j.events) {
    events.push_back({{"at", e.at}, {"what", e.what}, {"reason", e.reason}});
  }
  Json out{{"id", j.id},
           {"owner", j.owner},
           {"spec", ToJson(j.spec)},
           {"state", JobStateName(j.state)},
           {"submitted_at", j.submitted_at},
           {"ended_at", j.ended_at},
           {"runs", runs},
           {"events", events},
           {"pending_reason", j.pending_reason},
           {"pending_code", PendingCodeName(j.pending_code)},
           {"exit_code", j.exit_code},
           {"array_id", j.array_id},
           {"array_index", j.array_index},
           {"array_max_running", j.array_max_running},
           {"held", j.held}};
  if (!j.request_id.empty()) out["request_id"] = j.request_id;
  if (j.idle_since > 0) out["idle_since"] = j.idle_since;  // an observation, shown when set
  if (!j.hot_spare_nodes.empty()) out["hot_spare_nodes"] = j.hot_spare_nodes;
  if (j.estimated_start > 0) {  // a pending job's estimate, shown when there is one
    out["estimated_start"] = j.estimated_start;
    out["estimated_nodes"] = j.estimated_nodes;
    out["estimate_confidence"] = EstimateConfidenceName(j.estimate_confidence);
  }
  return out;
}

Json ToJson(const Gpu& g) {
  return Json{{"index", g.index},         {"uuid", g.uuid},   {"model", g.model},
              {"memory_mb", g.memory_mb}, {"group", g.group}, {"healthy", g.healthy}};
}

Json ToJson(const Node& n) {
  Json j{{"name", n.name},
         {"address", n.address},
         {"labels", n.labels},
         {"state", NodeStateName(n.state())},
         {"liveness", LivenessName(n.liveness)},
         {"drain", DrainName(n.drain)},
         {"cpu_milli", n.cpu_milli},
         {"memory_mb", n.memory_mb},
         {"gpus", EncodeGpus(n.gpus)},
         {"agent_epoch", n.agent_epoch},
         {"last_heartbeat", n.last_heartbeat},
         {"registered_at", n.registered_at},
         {"port_lo", n.port_lo},
         {"port_hi", n.port_hi}};
  if (!n.unhealthy.empty()) j["unhealthy"] = n.unhealthy;
  if (!n.drain_reason.empty()) j["drain_reason"] = n.drain_reason;
  if (!n.gpu_drains.empty()) {
    Json drains = Json::array();
    for (const auto& [gpu, d] : n.gpu_drains) {
      drains.push_back(ToJson(d));
      drains.back()["gpu"] = gpu;
    }
    j["gpu_drains"] = drains;
  }
  return j;
}

Json ToJson(const GpuDrain& d) {
  return Json{{"source", DrainSourceName(d.source)}, {"reason", d.reason}, {"since", d.since}};
}

Json ToJson(const GpuSample& g) {
  Json j{{"index", g.index},
         {"utilization_percent", g.utilization_percent},
         {"memory_used_bytes", g.memory_used_bytes}};
  if (!g.fault.empty()) j["fault"] = g.fault;
  if (g.check > 0) {  // an agent that checks health
    j["check"] = g.check;
    j["health"] = GpuHealthName(g.health);
    if (!g.health_reason.empty()) j["health_reason"] = g.health_reason;
    if (!g.xids.empty()) j["xids"] = g.xids;
    const GpuErrorCounters& c = g.counters;
    j["counters"] = Json{
        {"ecc_sbe_volatile", c.ecc_sbe_volatile},   {"ecc_dbe_volatile", c.ecc_dbe_volatile},
        {"ecc_sbe_aggregate", c.ecc_sbe_aggregate}, {"ecc_dbe_aggregate", c.ecc_dbe_aggregate},
        {"retired_pages", c.retired_pages},         {"retirement_pending", c.retirement_pending}};
  }
  return j;
}

Json ToJson(const QueueConfig& q) {
  return Json{{"name", q.name},
              {"quota_gpus", q.quota_gpus},
              {"limit_gpus", q.limit_gpus},
              {"weight", q.weight},
              {"max_pending_per_user", q.max_pending_per_user},
              {"max_grace_ms", q.max_grace_ms},
              {"allowed_users", q.allowed_users},
              {"allowed_groups", q.allowed_groups},
              {"gpu_sharing", q.gpu_sharing},
              {"idle_timeout_ms", q.idle_timeout_ms},
              {"max_wait_ms", q.max_wait_ms},
              {"max_interactive_gpus_per_user", q.max_interactive_gpus_per_user}};
}

Result<JobSpec> JobSpecFromJson(const Json& j) {
  return Decode<JobSpec>(j, "job spec", DecodeSpec);
}

Result<Run> RunFromJson(const Json& j) { return Decode<Run>(j, "run", DecodeRun); }

Result<ReplicaPlacement> PlacementFromJson(const Json& j) {
  return Decode<ReplicaPlacement>(j, "placement", [](const Json& j) { return DecodePlacement(j); });
}

Result<Job> JobFromJson(const Json& j) {
  return Decode<Job>(j, "job", [](const Json& j) {
    Job job;
    job.id = Req<JobId>(j, "id");
    job.owner = Get<std::string>(j, "owner", "");
    job.spec = DecodeSpec(j.at("spec"));
    if (!ParseJobState(j.at("state").get<std::string>(), &job.state)) {
      throw std::runtime_error("bad job state");
    }
    job.submitted_at = Get<int64_t>(j, "submitted_at", 0);
    job.ended_at = Get<int64_t>(j, "ended_at", 0);
    const Json& runs = j.at("runs");
    job.runs.reserve(runs.size());
    for (const Json& r : runs) job.runs.push_back(DecodeRun(r));
    if (auto events = j.find("events"); events != j.end()) {
      job.events.reserve(events->size());
      for (const Json& e : *events) {
        job.events.push_back({Req<int64_t>(e, "at"), e.at("what").get<std::string>(),
                              Get<std::string>(e, "reason", "")});
      }
    }
    job.pending_reason = Get<std::string>(j, "pending_reason", "");
    if (!ParsePendingCode(Get<std::string>(j, "pending_code", "none"), &job.pending_code)) {
      throw std::runtime_error("field 'pending_code': not a pending code");
    }
    job.idle_since = Get<int64_t>(j, "idle_since", 0);
    job.estimated_start = Get<int64_t>(j, "estimated_start", 0);
    job.hot_spare_nodes = Get<std::vector<std::string>>(j, "hot_spare_nodes", {});
    if (j.contains("estimated_nodes")) {
      job.estimated_nodes = j.at("estimated_nodes").get<std::vector<std::string>>();
    }
    if (!ParseEstimateConfidence(Get<std::string>(j, "estimate_confidence", "high"),
                                 &job.estimate_confidence)) {
      throw std::runtime_error("field 'estimate_confidence': not high, medium or low");
    }
    job.exit_code = Get<int32_t>(j, "exit_code", 0);
    job.array_id = Get<JobId>(j, "array_id", 0);
    job.array_index = Get<int32_t>(j, "array_index", -1);
    job.array_max_running = Get<int32_t>(j, "array_max_running", 0);
    job.held = Get<bool>(j, "held", false);
    job.request_id = Get<std::string>(j, "request_id", "");
    return job;
  });
}

Result<Gpu> GpuFromJson(const Json& j) { return Decode<Gpu>(j, "gpu", DecodeGpu); }

Result<Node> NodeFromJson(const Json& j) {
  return Decode<Node>(j, "node", [](const Json& j) {
    Node n;
    n.name = j.at("name").get<std::string>();
    n.address = Get<std::string>(j, "address", "");
    n.labels = Get<std::map<std::string, std::string>>(j, "labels", {});
    if (j.contains("liveness") || j.contains("drain")) {
      if (!ParseLiveness(Get<std::string>(j, "liveness", "alive"), &n.liveness)) {
        throw std::runtime_error("field 'liveness': not alive, unreachable or down");
      }
      if (!ParseDrain(Get<std::string>(j, "drain", "none"), &n.drain)) {
        throw std::runtime_error("field 'drain': not none, draining or drained");
      }
    } else {
      // A record from before liveness and drain were apart: its one state was one or the other.
      NodeState st = NodeState::kReady;
      if (!ParseNodeState(j.at("state").get<std::string>(), &st)) {
        throw std::runtime_error("field 'state': not a node state");
      }
      if (st == NodeState::kUnreachable) n.liveness = Liveness::kUnreachable;
      if (st == NodeState::kDown) n.liveness = Liveness::kDown;
      if (st == NodeState::kDraining) n.drain = Drain::kDraining;
      if (st == NodeState::kDrained) n.drain = Drain::kDrained;
    }
    n.cpu_milli = Get<int32_t>(j, "cpu_milli", 0);
    n.memory_mb = Get<int64_t>(j, "memory_mb", 0);
    n.gpus = DecodeGpus(j.value("gpus", Json::array()));
    n.agent_epoch = Get<uint64_t>(j, "agent_epoch", 0);
    n.last_heartbeat = Get<int64_t>(j, "last_heartbeat", 0);
    n.registered_at = Get<int64_t>(j, "registered_at", 0);
    n.port_lo = Get<int32_t>(j, "port_lo", 0);
    n.port_hi = Get<int32_t>(j, "port_hi", 0);
    n.unhealthy = Get<std::string>(j, "unhealthy", "");
    n.drain_reason = Get<std::string>(j, "drain_reason", "");
    for (const Json& d : j.value("gpu_drains", Json::array())) {
      n.gpu_drains[Req<int32_t>(d, "gpu")] = Must(GpuDrainFromJson(d));
    }
    return n;
  });
}

Result<GpuDrain> GpuDrainFromJson(const Json& j) {
  return Decode<GpuDrain>(j, "gpu drain", [](const Json& j) {
    GpuDrain d;
    if (!ParseDrainSource(Get<std::string>(j, "source", "none"), &d.source)) {
      throw std::runtime_error("field 'source': not none, admin or health");
    }
    d.reason = Get<std::string>(j, "reason", "");
    d.since = Get<int64_t>(j, "since", 0);
    return d;
  });
}

Result<GpuSample> GpuSampleFromJson(const Json& j) {
  return Decode<GpuSample>(j, "gpu sample", [](const Json& x) {
    GpuSample g;
    g.index = Req<int32_t>(x, "index");
    g.utilization_percent = Get<int32_t>(x, "utilization_percent", 0);
    g.memory_used_bytes = Get<int64_t>(x, "memory_used_bytes", 0);
    g.fault = Get<std::string>(x, "fault", "");
    g.check = Get<uint64_t>(x, "check", 0);
    if (!ParseGpuHealth(Get<std::string>(x, "health", "ok"), &g.health)) {
      throw std::runtime_error("field 'health': not ok, warn or critical");
    }
    g.health_reason = Get<std::string>(x, "health_reason", "");
    g.xids = Get<std::vector<int32_t>>(x, "xids", {});
    const Json c = x.value("counters", Json::object());
    g.counters.ecc_sbe_volatile = Get<int64_t>(c, "ecc_sbe_volatile", -1);
    g.counters.ecc_dbe_volatile = Get<int64_t>(c, "ecc_dbe_volatile", -1);
    g.counters.ecc_sbe_aggregate = Get<int64_t>(c, "ecc_sbe_aggregate", -1);
    g.counters.ecc_dbe_aggregate = Get<int64_t>(c, "ecc_dbe_aggregate", -1);
    g.counters.retired_pages = Get<int64_t>(c, "retired_pages", -1);
    g.counters.retirement_pending = Get<bool>(c, "retirement_pending", false);
    return g;
  });
}

Result<QueueConfig> QueueFromJson(const Json& j) {
  return Decode<QueueConfig>(j, "queue", [](const Json& j) {
    QueueConfig q;
    q.name = j.at("name").get<std::string>();
    q.quota_gpus = Get<int32_t>(j, "quota_gpus", 0);
    q.limit_gpus = Get<int32_t>(j, "limit_gpus", -1);
    q.weight = Get<double>(j, "weight", 1.0);
    q.max_pending_per_user = Get<int32_t>(j, "max_pending_per_user", 0);
    q.max_grace_ms = Get<DurationMs>(j, "max_grace_ms", 0);
    q.allowed_users = Get<std::vector<std::string>>(j, "allowed_users", {});
    q.allowed_groups = Get<std::vector<std::string>>(j, "allowed_groups", {});
    q.gpu_sharing = Get<bool>(j, "gpu_sharing", true);
    q.idle_timeout_ms = Get<int64_t>(j, "idle_timeout_ms", 0);
    q.max_wait_ms = Get<int64_t>(j, "max_wait_ms", 0);
    q.max_interactive_gpus_per_user = Get<int32_t>(j, "max_interactive_gpus_per_user", 0);
    return q;
  });
}

int JsonNestingDepth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

}  // namespace corral
