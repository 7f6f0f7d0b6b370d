// JSON of the head's views of nodes and queues: written by the API, read back by the CLI.
#include "core/codec_internal.h"
#include "core/gpu_health.h"

namespace corral {

using codec_internal::Decode;
using codec_internal::Get;
using codec_internal::Must;

Json ToJson(const NodeView& v) {
  Json j = ToJson(v.node);
  j["gpus_used"] = v.gpus_used;
  // Each GPU's use beside its description, where the agent measured it.
  for (Json& gpu : j["gpus"]) {
    const int32_t index = gpu.value("index", -1);
    for (const GpuSample& s : v.gpu_samples) {
      if (index != s.index) continue;
      gpu["utilization_percent"] = s.utilization_percent;
      gpu["memory_used_bytes"] = s.memory_used_bytes;
      if (s.check > 0) {  // the agent's last health check of it
        gpu["health"] = GpuHealthName(s.health);
        if (!s.health_reason.empty()) gpu["health_reason"] = s.health_reason;
      }
    }
    // A drained GPU says so beside its description (the node's gpu_drains list them too).
    if (auto d = v.node.gpu_drains.find(index); d != v.node.gpu_drains.end()) {
      gpu["drain"] = ToJson(d->second);
    }
    // Its shares and who holds them.
    Json shares = Json::array();
    int64_t milli = 0;
    for (const GpuShareHolder& h : v.shares) {
      if (index != h.gpu) continue;
      shares.push_back({{"job", h.job},
                        {"owner", h.owner},
                        {"milli", h.milli},
                        {"memory_mb", h.memory_mb},
                        {"isolation", GpuIsolationName(h.isolation)}});
      milli += h.milli;
    }
    if (!shares.empty()) {
      gpu["shares"] = shares;
      gpu["shared_milli"] = milli;
    }
  }
  j["runs"] = v.runs;
  if (!v.reservation.empty()) {
    j["reservation"] = v.reservation;
    j["maintenance"] = v.maintenance;
  }
  if (v.image_cache.limit_bytes > 0) {
    j["image_cache"] = {{"bytes", v.image_cache.bytes},
                        {"images", v.image_cache.images},
                        {"limit_bytes", v.image_cache.limit_bytes}};
  }
  return j;
}

Result<NodeView> NodeViewFromJson(const Json& j) {
  return Decode<NodeView>(j, "node", [](const Json& j) {
    NodeView v;
    v.node = Must(NodeFromJson(j));
    v.gpus_used = Get<int32_t>(j, "gpus_used", 0);
    for (const Json& gpu : j.value("gpus", Json::array())) {
      const int32_t index = Get<int32_t>(gpu, "index", 0);
      if (gpu.contains("utilization_percent")) {
        GpuSample s;
        s.index = index;
        s.utilization_percent = Get<int32_t>(gpu, "utilization_percent", 0);
        s.memory_used_bytes = Get<int64_t>(gpu, "memory_used_bytes", 0);
        if (gpu.contains("health")) {
          s.check = 1;  // checked; the API does not say how often
          if (!ParseGpuHealth(Get<std::string>(gpu, "health", "ok"), &s.health)) {
            throw std::runtime_error("field 'health': not ok, warn or critical");
          }
          s.health_reason = Get<std::string>(gpu, "health_reason", "");
        }
        v.gpu_samples.push_back(std::move(s));
      }
      for (const Json& h : gpu.value("shares", Json::array())) {
        GpuShareHolder holder;
        holder.gpu = index;
        holder.job = Get<JobId>(h, "job", 0);
        holder.owner = Get<std::string>(h, "owner", "");
        holder.milli = Get<int32_t>(h, "milli", 0);
        holder.memory_mb = Get<int64_t>(h, "memory_mb", 0);
        if (!ParseGpuIsolation(Get<std::string>(h, "isolation", "memory"), &holder.isolation)) {
          throw std::runtime_error("field 'isolation': not memory or mps");
        }
        v.shares.push_back(std::move(holder));
      }
    }
    v.runs = Get<std::vector<std::string>>(j, "runs", {});
    v.reservation = Get<std::string>(j, "reservation", "");
    v.maintenance = Get<bool>(j, "maintenance", false);
    const Json cache = j.value("image_cache", Json::object());
    v.image_cache.bytes = Get<int64_t>(cache, "bytes", 0);
    v.image_cache.images = Get<int32_t>(cache, "images", 0);
    v.image_cache.limit_bytes = Get<int64_t>(cache, "limit_bytes", 0);
    return v;
  });
}

Json ToJson(const QueueView& v) {
  Json j = ToJson(v.config);
  j["used_gpus"] = v.used_gpus;
  j["pending"] = v.pending;
  j["running"] = v.running;
  return j;
}

Result<QueueView> QueueViewFromJson(const Json& j) {
  return Decode<QueueView>(j, "queue", [](const Json& j) {
    QueueView v;
    v.config = Must(QueueFromJson(j));
    v.used_gpus = Get<int32_t>(j, "used_gpus", 0);
    v.pending = Get<int32_t>(j, "pending", 0);
    v.running = Get<int32_t>(j, "running", 0);
    return v;
  });
}

}  // namespace corral
