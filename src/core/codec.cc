#include "core/codec.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <type_traits>

namespace corral {
namespace {

// Internal decoders throw nlohmann exceptions; the public *FromJson functions turn them into
// a Status so that nothing throws across the module boundary.

// nlohmann casts a float to an integer unchecked: undefined outside the type's range
// (fuzz_agent_protocol found it). Every integer field, required or optional, scalar or list,
// is read through this: a float must be whole and in range.
template <typename T>
T Checked(const Json& v, const char* key) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (v.is_number_float()) {
      const double d = v.get<double>();
      const double end = std::ldexp(1.0, std::numeric_limits<T>::digits);  // exact: 2^bits
      const double lo = std::is_signed_v<T> ? -end : 0.0;
      if (!(d >= lo && d < end && d == std::trunc(d))) {
        throw std::out_of_range(std::string("field '") + key + "': " + v.dump() +
                                " is not an integer in range");
      }
    }
  } else if constexpr (std::is_same_v<T, std::vector<int32_t>>) {
    if (!v.is_array()) throw std::invalid_argument(std::string("field '") + key + "': not a list");
    T out;
    out.reserve(v.size());
    for (const Json& x : v) out.push_back(Checked<int32_t>(x, key));
    return out;
  }
  return v.get<T>();
}

// A required field: missing is an error, like j.at(key).
template <typename T>
T Req(const Json& j, const char* key) {
  return Checked<T>(j.at(key), key);
}

template <typename T>
T Get(const Json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return Checked<T>(*it, key);
}

JobSpec DecodeSpec(const Json& j) {
  JobSpec s;
  s.name = Get<std::string>(j, "name", "");
  s.command = Get<std::vector<std::string>>(j, "command", {});
  s.env = Get<std::map<std::string, std::string>>(j, "env", {});
  s.workdir = Get<std::string>(j, "workdir", "");
  s.queue = Get<std::string>(j, "queue", "default");
  s.replicas = Get<int32_t>(j, "replicas", 1);
  s.tasks_per_replica = Get<int32_t>(j, "tasks_per_replica", 1);
  s.per_replica.gpu_milli = Get<int32_t>(j, "gpu_milli", 0);
  s.per_replica.cpu_milli = Get<int32_t>(j, "cpu_milli", 1000);
  s.per_replica.memory_mb = Get<int64_t>(j, "memory_mb", 0);
  s.gpu_model = Get<std::string>(j, "gpu_model", "");
  s.node_labels = Get<std::map<std::string, std::string>>(j, "node_labels", {});
  s.time_limit_ms = Get<int64_t>(j, "time_limit_ms", 0);
  s.priority = Get<int32_t>(j, "priority", 0);
  s.preemptible = Get<bool>(j, "preemptible", false);
  s.batch = Get<bool>(j, "batch", false);
  s.hold = Get<bool>(j, "hold", false);
  s.interactive = Get<std::string>(j, "kind", "job") == "interactive";
  s.max_restarts = Get<int32_t>(j, "max_restarts", 0);
  s.checkpoint_signal = Get<int32_t>(j, "checkpoint_signal", 15);
  s.grace_ms = Get<int64_t>(j, "grace_ms", 10000);
  s.array = Get<std::string>(j, "array", "");
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

template <typename T, typename F>
Result<T> Decode(const Json& j, const char* what, F f) {
  try {
    if (!j.is_object()) return InvalidArgument(std::string(what) + ": expected a JSON object");
    return f(j);
  } catch (const std::exception& e) {
    return InvalidArgument(std::string(what) + ": " + e.what());
  }
}

Json EncodeGpus(const std::vector<Gpu>& gpus) {
  Json a = Json::array();
  for (const Gpu& g : gpus) a.push_back(ToJson(g));
  return a;
}

}  // namespace

Json ToJson(const JobSpec& s) {
  return Json{{"name", s.name},
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
              {"idle_timeout_ms", q.idle_timeout_ms}};
}

Json ToJson(const RegisterRequest& r) {
  Json j{{"name", r.name},           {"address", r.address},       {"cpu_milli", r.cpu_milli},
         {"memory_mb", r.memory_mb}, {"gpus", EncodeGpus(r.gpus)}, {"labels", r.labels},
         {"port_lo", r.port_lo},     {"port_hi", r.port_hi}};
  if (!r.csr_pem.empty()) j["csr_pem"] = r.csr_pem;
  return j;
}

Json ToJson(const RegisterResponse& r) {
  Json j{
      {"node_token", r.node_token}, {"head_epoch", r.head_epoch}, {"agent_epoch", r.agent_epoch}};
  if (!r.log_cert_pem.empty()) j["log_cert_pem"] = r.log_cert_pem;
  return j;
}

Json ToJson(const RunReport& r) {
  Json j{{"run_id", r.run_id},       {"replica", r.replica},       {"running", r.running},
         {"exit_code", r.exit_code}, {"started_at", r.started_at}, {"ended_at", r.ended_at}};
  if (r.fenced) j["fenced"] = true;
  if (r.vanished) j["vanished"] = true;
  if (r.failed_task >= 0) j["failed_task"] = r.failed_task;
  if (!r.error.empty()) j["error"] = r.error;
  if (r.oom_killed) j["oom_killed"] = true;
  if (r.peak_memory_bytes > 0) j["peak_memory_bytes"] = r.peak_memory_bytes;
  if (r.cpu_ms > 0) j["cpu_ms"] = r.cpu_ms;
  return j;
}

Json ToJson(const SyncRequest& r) {
  Json runs = Json::array();
  for (const RunReport& x : r.runs) runs.push_back(ToJson(x));
  Json j{{"node", r.node},
         {"agent_epoch", r.agent_epoch},
         {"desired_version", r.desired_version},
         {"wait_ms", r.wait_ms},
         {"runs", runs},
         {"busy_ports", r.busy_ports}};
  // Optional, so that heads and agents of either version understand each other.
  for (const GpuSample& g : r.gpu_samples) {
    j["gpu_samples"].push_back(Json{{"index", g.index},
                                    {"utilization_percent", g.utilization_percent},
                                    {"memory_used_bytes", g.memory_used_bytes}});
    if (!g.fault.empty()) j["gpu_samples"].back()["fault"] = g.fault;
  }
  if (r.deltas) j["deltas"] = true;
  return j;
}

namespace {

Json LayoutJson(const RunLayout& l) {
  Json placement = Json::array();
  for (const ReplicaPlacement& p : l.placement) placement.push_back(ToJson(p));
  Json j{{"job_id", l.job_id},
         {"attempt", l.attempt},
         {"job_name", l.job_name},
         {"owner", l.owner},
         {"placement", std::move(placement)},
         {"replica_hosts", l.replica_hosts},
         {"master_port", l.master_port},
         {"checkpoint_dir", l.checkpoint_dir}};
  if (!l.user_env.empty()) j["user_env"] = l.user_env;
  if (l.task_per_gpu) j["task_per_gpu"] = true;
  if (!l.workdir.empty()) j["workdir"] = l.workdir;
  if (l.array_id != 0) {
    j["array_id"] = l.array_id;
    j["array_index"] = l.array_index;
  }
  return j;
}

}  // namespace

Json ToJson(const RunOrder& r) {
  Json j{{"run_id", r.run_id},    {"job_id", r.job_id},   {"attempt", r.attempt},
         {"replica", r.replica},  {"command", r.command}, {"workdir", r.workdir},
         {"gpus", r.gpus},        {"stop", r.stop},       {"stop_signal", r.stop_signal},
         {"grace_ms", r.grace_ms}};
  if (r.layout.job_id != 0) {  // the environments follow from it (ExpandOrderEnv, at launch)
    j["layout"] = LayoutJson(r.layout);
    if (!r.step_token.empty()) j["step_token"] = r.step_token;
  } else {
    j["env"] = r.env;
    if (!r.task_envs.empty()) j["task_envs"] = r.task_envs;
  }
  if (r.signals > 0) {
    j["signals"] = r.signals;
    j["signal"] = r.signal;
  }
  if (!r.user.empty()) j["user"] = r.user;
  if (r.cpu_milli > 0) j["cpu_milli"] = r.cpu_milli;
  if (r.memory_mb > 0) j["memory_mb"] = r.memory_mb;
  return j;
}

Json ToJson(const SyncResponse& r) {
  Json runs = Json::array();
  for (const RunOrder& x : r.runs) runs.push_back(ToJson(x));
  Json j{{"head_epoch", r.head_epoch},
         {"desired_version", r.desired_version},
         {"runs", runs},
         {"reregister", r.reregister}};
  if (r.delta) {
    j["delta"] = true;
    j["base_version"] = r.base_version;
    j["changed_jobs"] = r.changed_jobs;
  }
  return j;
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
    for (const Json& r : j.at("runs")) job.runs.push_back(DecodeRun(r));
    if (j.contains("events")) {
      for (const Json& e : j.at("events")) {
        job.events.push_back({Req<int64_t>(e, "at"), e.at("what").get<std::string>(),
                              Get<std::string>(e, "reason", "")});
      }
    }
    job.pending_reason = Get<std::string>(j, "pending_reason", "");
    if (!ParsePendingCode(Get<std::string>(j, "pending_code", "none"), &job.pending_code)) {
      throw std::runtime_error("field 'pending_code': not a pending code");
    }
    job.idle_since = Get<int64_t>(j, "idle_since", 0);
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
    return n;
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
    q.idle_timeout_ms = Get<int64_t>(j, "idle_timeout_ms", 0);
    return q;
  });
}

Result<RegisterRequest> RegisterRequestFromJson(const Json& j) {
  return Decode<RegisterRequest>(j, "register request", [](const Json& j) {
    RegisterRequest r;
    r.name = j.at("name").get<std::string>();
    r.address = Get<std::string>(j, "address", "");
    r.cpu_milli = Get<int32_t>(j, "cpu_milli", 0);
    r.memory_mb = Get<int64_t>(j, "memory_mb", 0);
    r.gpus = DecodeGpus(j.value("gpus", Json::array()));
    r.labels = Get<std::map<std::string, std::string>>(j, "labels", {});
    r.port_lo = Get<int32_t>(j, "port_lo", 0);
    r.port_hi = Get<int32_t>(j, "port_hi", 0);
    r.csr_pem = Get<std::string>(j, "csr_pem", "");
    return r;
  });
}

Result<RegisterResponse> RegisterResponseFromJson(const Json& j) {
  return Decode<RegisterResponse>(j, "register response", [](const Json& j) {
    RegisterResponse r;
    r.node_token = j.at("node_token").get<std::string>();
    r.head_epoch = Req<uint64_t>(j, "head_epoch");
    r.agent_epoch = Req<uint64_t>(j, "agent_epoch");
    r.log_cert_pem = Get<std::string>(j, "log_cert_pem", "");
    return r;
  });
}

Result<SyncRequest> SyncRequestFromJson(const Json& j) {
  return Decode<SyncRequest>(j, "sync request", [](const Json& j) {
    SyncRequest r;
    r.node = j.at("node").get<std::string>();
    r.agent_epoch = Req<uint64_t>(j, "agent_epoch");
    r.desired_version = Get<uint64_t>(j, "desired_version", 0);
    r.wait_ms = Get<int64_t>(j, "wait_ms", 0);
    r.busy_ports = Get<std::vector<int32_t>>(j, "busy_ports", {});
    for (const Json& x : j.value("runs", Json::array())) {
      RunReport rr;
      rr.run_id = x.at("run_id").get<std::string>();
      rr.replica = Get<int32_t>(x, "replica", 0);
      rr.running = x.at("running").get<bool>();
      rr.exit_code = Get<int32_t>(x, "exit_code", 0);
      rr.started_at = Get<int64_t>(x, "started_at", 0);
      rr.ended_at = Get<int64_t>(x, "ended_at", 0);
      rr.fenced = Get<bool>(x, "fenced", false);
      rr.vanished = Get<bool>(x, "vanished", false);
      rr.failed_task = Get<int32_t>(x, "failed_task", -1);
      rr.error = Get<std::string>(x, "error", "");
      rr.oom_killed = Get<bool>(x, "oom_killed", false);
      rr.peak_memory_bytes = Get<int64_t>(x, "peak_memory_bytes", 0);
      rr.cpu_ms = Get<int64_t>(x, "cpu_ms", 0);
      r.runs.push_back(rr);
    }
    for (const Json& x : j.value("gpu_samples", Json::array())) {
      r.gpu_samples.push_back({Req<int32_t>(x, "index"), Get<int32_t>(x, "utilization_percent", 0),
                               Get<int64_t>(x, "memory_used_bytes", 0),
                               Get<std::string>(x, "fault", "")});
    }
    r.deltas = Get<bool>(j, "deltas", false);
    return r;
  });
}

Result<SyncResponse> SyncResponseFromJson(const Json& j) {
  return Decode<SyncResponse>(j, "sync response", [](const Json& j) {
    SyncResponse r;
    r.head_epoch = Req<uint64_t>(j, "head_epoch");
    r.desired_version = Req<uint64_t>(j, "desired_version");
    r.reregister = Get<bool>(j, "reregister", false);
    for (const Json& x : j.value("runs", Json::array())) {
      RunOrder o;
      o.run_id = x.at("run_id").get<std::string>();
      o.job_id = Req<JobId>(x, "job_id");
      o.attempt = Req<int32_t>(x, "attempt");
      o.replica = Get<int32_t>(x, "replica", 0);
      o.command = x.at("command").get<std::vector<std::string>>();
      o.env = Get<std::map<std::string, std::string>>(x, "env", {});
      o.task_envs = Get<std::vector<std::map<std::string, std::string>>>(x, "task_envs", {});
      if (auto l = x.find("layout"); l != x.end()) {
        RunLayout& layout = o.layout;
        layout.job_id = Req<JobId>(*l, "job_id");
        if (layout.job_id == 0) throw std::runtime_error("field 'layout.job_id': must not be 0");
        layout.attempt = Req<int32_t>(*l, "attempt");
        layout.job_name = Get<std::string>(*l, "job_name", "");
        layout.owner = Get<std::string>(*l, "owner", "");
        layout.user_env = Get<std::map<std::string, std::string>>(*l, "user_env", {});
        for (const Json& p : l->at("placement")) layout.placement.push_back(DecodePlacement(p));
        layout.replica_hosts = Get<std::vector<std::string>>(*l, "replica_hosts", {});
        layout.master_port = Get<int32_t>(*l, "master_port", 0);
        layout.task_per_gpu = Get<bool>(*l, "task_per_gpu", false);
        layout.checkpoint_dir = Get<std::string>(*l, "checkpoint_dir", "");
        layout.workdir = Get<std::string>(*l, "workdir", "");
        layout.array_id = Get<JobId>(*l, "array_id", 0);
        layout.array_index = Get<int32_t>(*l, "array_index", -1);
        o.step_token = Get<std::string>(x, "step_token", "");
        if (Status st = CheckOrderLayout(o); !st.ok()) throw std::runtime_error(st.message());
      }
      o.workdir = Get<std::string>(x, "workdir", "");
      o.user = Get<std::string>(x, "user", "");
      o.cpu_milli = Get<int32_t>(x, "cpu_milli", 0);
      o.memory_mb = Get<int64_t>(x, "memory_mb", 0);
      o.gpus = Get<std::vector<int32_t>>(x, "gpus", {});
      o.stop = Get<bool>(x, "stop", false);
      o.stop_signal = Get<int32_t>(x, "stop_signal", 15);
      o.grace_ms = Get<int64_t>(x, "grace_ms", 10000);
      o.signals = Get<int32_t>(x, "signals", 0);
      o.signal = Get<int32_t>(x, "signal", 0);
      r.runs.push_back(std::move(o));
    }
    r.delta = Get<bool>(j, "delta", false);
    if (r.delta) {
      r.base_version = Req<uint64_t>(j, "base_version");
      r.changed_jobs = Get<std::vector<JobId>>(j, "changed_jobs", {});
      if (!std::is_sorted(r.changed_jobs.begin(), r.changed_jobs.end())) {
        throw std::runtime_error("field 'changed_jobs': must be ascending");
      }
      if (r.base_version > r.desired_version) {
        throw std::runtime_error("field 'base_version': after desired_version");
      }
      for (const RunOrder& o : r.runs) {
        if (!std::binary_search(r.changed_jobs.begin(), r.changed_jobs.end(), o.job_id)) {
          throw std::runtime_error("field 'runs': an order for job " + std::to_string(o.job_id) +
                                   ", which changed_jobs does not name");
        }
      }
    }
    return r;
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
