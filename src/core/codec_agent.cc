// JSON of the head <-> agent protocol (core/agent_protocol.h): registration, sync requests
// and answers, run orders and reports.
#include <string>

#include "core/codec.h"
#include "core/codec_internal.h"
#include "core/container_codec.h"

namespace corral {

using codec_internal::Checked;
using codec_internal::Decode;
using codec_internal::Get;
using codec_internal::Must;
using codec_internal::Req;

namespace {

Json EncodeRegisteredGpus(const std::vector<Gpu>& gpus) {
  Json a = Json::array();
  for (const Gpu& g : gpus) a.push_back(ToJson(g));
  return a;
}

std::vector<Gpu> DecodeRegisteredGpus(const Json& j) {
  std::vector<Gpu> out;
  if (j.is_array()) {
    for (const Json& g : j) out.push_back(Must(GpuFromJson(g)));
  }
  return out;
}

}  // namespace

Json ToJson(const RegisterRequest& r) {
  Json j{{"name", r.name},
         {"address", r.address},
         {"cpu_milli", r.cpu_milli},
         {"memory_mb", r.memory_mb},
         {"gpus", EncodeRegisteredGpus(r.gpus)},
         {"labels", r.labels},
         {"port_lo", r.port_lo},
         {"port_hi", r.port_hi},
         {"protocol", r.protocol}};
  if (!r.csr_pem.empty()) j["csr_pem"] = r.csr_pem;
  return j;
}

Json ToJson(const RegisterResponse& r) {
  Json j{{"node_token", r.node_token},
         {"head_epoch", r.head_epoch},
         {"agent_epoch", r.agent_epoch},
         {"protocol", r.protocol}};
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
  if (!r.note.empty()) j["note"] = r.note;
  if (r.staging) j["staging"] = true;
  if (r.stage_out.done) j["stage_out"] = ToJson(r.stage_out);
  if (r.oom_killed) j["oom_killed"] = true;
  if (r.peak_memory_bytes > 0) j["peak_memory_bytes"] = r.peak_memory_bytes;
  if (r.cpu_ms > 0) j["cpu_ms"] = r.cpu_ms;
  if (r.notebook_idle_ms >= 0) j["notebook_idle_ms"] = r.notebook_idle_ms;
  if (!r.usage.empty()) j["usage"] = UsagePointsToJson(r.usage);
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
  for (const GpuSample& g : r.gpu_samples) j["gpu_samples"].push_back(ToJson(g));
  if (r.deltas) j["deltas"] = true;
  if (r.image_cache.limit_bytes > 0) j["image_cache"] = ImageCacheJson(r.image_cache);
  if (!r.datasets.empty()) j["datasets"] = r.datasets;
  for (const PrefetchReport& p : r.prefetching) {
    j["prefetching"].push_back(Json{{"job_id", p.job_id}, {"note", p.note}});
  }
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
  if (l.gpu_isolation != GpuIsolation::kMemory) {
    j["gpu_isolation"] = GpuIsolationName(l.gpu_isolation);
  }
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
  if (r.peers_lost > 0) j["peers_lost"] = r.peers_lost;
  if (!r.user.empty()) j["user"] = r.user;
  if (r.cpu_milli > 0) j["cpu_milli"] = r.cpu_milli;
  if (r.memory_mb > 0) j["memory_mb"] = r.memory_mb;
  if (!r.container.empty()) j["container"] = ContainerJson(r.container);
  if (!r.datasets.empty()) {
    Json all = Json::array();
    for (const DatasetRef& d : r.datasets) all.push_back(ToJson(d));
    j["datasets"] = all;
  }
  if (!r.source_rates.empty()) j["source_rates"] = r.source_rates;
  if (!r.stage_out.empty()) j["stage_out"] = ToJson(r.stage_out);
  if (r.notebook) j["notebook"] = true;
  if (r.interactive) j["interactive"] = true;
  if (r.elastic) j["elastic"] = true;
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
  for (const PrefetchOrder& p : r.prefetch) {
    Json datasets = Json::array();
    for (const DatasetRef& d : p.datasets) datasets.push_back(ToJson(d));
    j["prefetch"].push_back(Json{{"job_id", p.job_id}, {"user", p.user}, {"datasets", datasets}});
  }
  return j;
}

Result<RegisterRequest> RegisterRequestFromJson(const Json& j) {
  return Decode<RegisterRequest>(j, "register request", [](const Json& j) {
    RegisterRequest r;
    r.name = j.at("name").get<std::string>();
    r.address = Get<std::string>(j, "address", "");
    r.cpu_milli = Get<int32_t>(j, "cpu_milli", 0);
    r.memory_mb = Get<int64_t>(j, "memory_mb", 0);
    r.gpus = DecodeRegisteredGpus(j.value("gpus", Json::array()));
    r.labels = Get<std::map<std::string, std::string>>(j, "labels", {});
    r.port_lo = Get<int32_t>(j, "port_lo", 0);
    r.port_hi = Get<int32_t>(j, "port_hi", 0);
    r.csr_pem = Get<std::string>(j, "csr_pem", "");
    r.protocol = Get<int32_t>(j, "protocol", 1);  // an agent from before the exchange
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
    r.protocol = Get<int32_t>(j, "protocol", 1);
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
      rr.note = Get<std::string>(x, "note", "");
      rr.staging = Get<bool>(x, "staging", false);
      if (auto so = x.find("stage_out"); so != x.end()) rr.stage_out = StageOutResultFromJson(*so);
      rr.oom_killed = Get<bool>(x, "oom_killed", false);
      rr.peak_memory_bytes = Get<int64_t>(x, "peak_memory_bytes", 0);
      rr.cpu_ms = Get<int64_t>(x, "cpu_ms", 0);
      rr.notebook_idle_ms = Get<int64_t>(x, "notebook_idle_ms", -1);
      if (auto u = x.find("usage"); u != x.end()) rr.usage = DecodeUsagePoints(*u);
      r.runs.push_back(rr);
    }
    if (auto c = j.find("image_cache"); c != j.end()) r.image_cache = DecodeImageCache(*c);
    r.datasets = Get<std::vector<std::string>>(j, "datasets", {});
    for (const Json& x : j.value("gpu_samples", Json::array())) {
      r.gpu_samples.push_back(Must(GpuSampleFromJson(x)));
    }
    r.deltas = Get<bool>(j, "deltas", false);
    for (const Json& x : j.value("prefetching", Json::array())) {
      r.prefetching.push_back(
          PrefetchReport{Req<JobId>(x, "job_id"), Get<std::string>(x, "note", "")});
    }
    return r;
  });
}

namespace {

// A run order's layout (its placement, ranks and names); throws naming the field.
void DecodeRunLayout(const Json& l, RunLayout& layout) {
  layout.job_id = Req<JobId>(l, "job_id");
  if (layout.job_id == 0) throw std::runtime_error("field 'layout.job_id': must not be 0");
  layout.attempt = Req<int32_t>(l, "attempt");
  layout.job_name = Get<std::string>(l, "job_name", "");
  layout.owner = Get<std::string>(l, "owner", "");
  layout.user_env = Get<std::map<std::string, std::string>>(l, "user_env", {});
  for (const Json& p : l.at("placement")) layout.placement.push_back(Must(PlacementFromJson(p)));
  layout.replica_hosts = Get<std::vector<std::string>>(l, "replica_hosts", {});
  layout.master_port = Get<int32_t>(l, "master_port", 0);
  layout.task_per_gpu = Get<bool>(l, "task_per_gpu", false);
  if (!ParseGpuIsolation(Get<std::string>(l, "gpu_isolation", "memory"), &layout.gpu_isolation)) {
    throw std::runtime_error("field 'gpu_isolation': want memory or mps");
  }
  layout.checkpoint_dir = Get<std::string>(l, "checkpoint_dir", "");
  layout.workdir = Get<std::string>(l, "workdir", "");
  layout.array_id = Get<JobId>(l, "array_id", 0);
  layout.array_index = Get<int32_t>(l, "array_index", -1);
}

// What the order runs with: its container, datasets and stage-out.
void DecodeRunOrderInputs(const Json& x, RunOrder& o) {
  if (auto c = x.find("container"); c != x.end() && !c->is_null()) {
    o.container = DecodeContainer(*c);
  }
  if (auto d = x.find("datasets"); d != x.end()) {
    for (const Json& e : *d) {
      auto ref = DatasetRefFromJson(e);
      if (!ref.ok()) throw std::runtime_error(ref.status().message());
      o.datasets.push_back(std::move(*ref));
    }
  }
  if (auto rates = x.find("source_rates"); rates != x.end()) {
    o.source_rates = rates->get<std::map<std::string, int64_t>>();
  }
  if (auto so = x.find("stage_out"); so != x.end()) o.stage_out = StageOutFromJson(*so);
}

RunOrder DecodeRunOrder(const Json& x) {
  RunOrder o;
  o.run_id = x.at("run_id").get<std::string>();
  o.job_id = Req<JobId>(x, "job_id");
  o.attempt = Req<int32_t>(x, "attempt");
  o.replica = Get<int32_t>(x, "replica", 0);
  o.command = x.at("command").get<std::vector<std::string>>();
  o.env = Get<std::map<std::string, std::string>>(x, "env", {});
  o.task_envs = Get<std::vector<std::map<std::string, std::string>>>(x, "task_envs", {});
  if (auto l = x.find("layout"); l != x.end()) {
    DecodeRunLayout(*l, o.layout);
    o.step_token = Get<std::string>(x, "step_token", "");
    if (Status st = CheckOrderLayout(o); !st.ok()) throw std::runtime_error(st.message());
  }
  o.workdir = Get<std::string>(x, "workdir", "");
  o.user = Get<std::string>(x, "user", "");
  o.cpu_milli = Get<int32_t>(x, "cpu_milli", 0);
  o.memory_mb = Get<int64_t>(x, "memory_mb", 0);
  o.gpus = Get<std::vector<int32_t>>(x, "gpus", {});
  DecodeRunOrderInputs(x, o);
  o.notebook = Get<bool>(x, "notebook", false);
  o.interactive = Get<bool>(x, "interactive", false);
  o.elastic = Get<bool>(x, "elastic", false);
  o.stop = Get<bool>(x, "stop", false);
  o.stop_signal = Get<int32_t>(x, "stop_signal", 15);
  o.grace_ms = Get<int64_t>(x, "grace_ms", 10000);
  o.signals = Get<int32_t>(x, "signals", 0);
  o.signal = Get<int32_t>(x, "signal", 0);
  o.peers_lost = Get<int32_t>(x, "peers_lost", 0);
  return o;
}

// A delta names the jobs it changes, in order, and orders only for those.
void DecodeSyncDelta(const Json& j, SyncResponse& r) {
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

// A fetch ahead: its job, its owner and the datasets, each resolved (a digest and a source).
PrefetchOrder DecodePrefetch(const Json& x) {
  PrefetchOrder p;
  p.job_id = Req<JobId>(x, "job_id");
  p.user = Get<std::string>(x, "user", "");
  for (const Json& e : x.value("datasets", Json::array())) {
    auto ref = DatasetRefFromJson(e);
    if (!ref.ok()) throw std::runtime_error("field 'prefetch': " + ref.status().message());
    if (ref->digest.empty()) {
      throw std::runtime_error("field 'prefetch': dataset '" + ref->name + "' has no digest");
    }
    p.datasets.push_back(std::move(*ref));
  }
  return p;
}

}  // namespace

Result<SyncResponse> SyncResponseFromJson(const Json& j) {
  return Decode<SyncResponse>(j, "sync response", [](const Json& j) {
    SyncResponse r;
    r.head_epoch = Req<uint64_t>(j, "head_epoch");
    r.desired_version = Req<uint64_t>(j, "desired_version");
    r.reregister = Get<bool>(j, "reregister", false);
    for (const Json& x : j.value("runs", Json::array())) r.runs.push_back(DecodeRunOrder(x));
    r.delta = Get<bool>(j, "delta", false);
    if (r.delta) DecodeSyncDelta(j, r);
    for (const Json& x : j.value("prefetch", Json::array()))
      r.prefetch.push_back(DecodePrefetch(x));
    return r;
  });
}

}  // namespace corral
